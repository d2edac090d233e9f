/**
 * @file scripts/tools/check-graph-trainer-steps.ts on the CPU alone (CI has no GPU): the script, as a child
 * process, passes with the CPU as its device (two CPU trainers are bit for bit the same), fails a tensor
 * over the tolerance with exit 1 and refuses a device that cannot be opened with exit 2; its comparison, given a second trainer whose every step is
 * twice as large (learning rate scale 2), reports it over the tolerance, with the loss in the step too.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { GraphTrainer, type GraphTrainerOptions } from '../../../lib/engine/graph-trainer/graph-trainer.js';
import { graphLossOf } from '../../../lib/train/losses/registry.js';
import { createLoss } from '../../../lib/train/losses/registry.js';
import { compareTrajectories, type StepComparison } from '../../../scripts/tools/check-graph-trainer-steps.js';
import { relativeDifference, type Difference } from '../../../scripts/tools/device-check-support.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const FIXTURE = 'spec/fixtures/graph-trainer/ops-zoo/initial.onnx';

/** The script run through tsx from the repository root: its exit code and standard output. */
function check(...args: string[]): { status: number | null; stdout: string } {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/tools/check-graph-trainer-steps.ts', ...args], { cwd: root, encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout };
}

/** Two steps of two CPU trainers of the fixture, the second created with `second`'s options. */
async function trajectories(second: Partial<GraphTrainerOptions>, options: Partial<GraphTrainerOptions> = {}): Promise<[StepComparison, StepComparison]> {
  const base: GraphTrainerOptions = { model: new Uint8Array(readFileSync(path.join(root, FIXTURE))), itemDims: [3, 16, 16], optimizer: { kind: 'adam' }, device: 'cpu', ...options };
  const [cpu, other] = [await GraphTrainer.create(base), await GraphTrainer.create({ ...base, ...second })];
  const steps: StepComparison[] = [];
  for await (const step of compareTrajectories(cpu, other, 2, 8, 1e-3)) steps.push(step);
  await Promise.all([cpu.release(), other.release()]);
  expect(steps.map((s) => s.step)).to.deep.equal([1, 2]);
  return steps as [StepComparison, StepComparison];
}

describe('scripts/tools/check-graph-trainer-steps', function () {
  this.timeout(30_000);

  it('passes with the CPU as the device in micro-batches (--micro-batch), and says so', () => {
    const { status, stdout } = check('--device', 'cpu', '--steps', '2', '--batch', '4', '--micro-batch', '2', FIXTURE);
    expect(status, stdout).to.equal(0);
    expect(stdout).to.include(`${FIXTURE} (batch 4, item [3, 16, 16], 2 Adam steps at lr 0.001, micro-batches of 2): worst relative difference 0.00e+0`);
  });

  it('passes with the CPU as the device: a line per step, every difference 0, and a summary', () => {
    const { status, stdout } = check('--device', 'cpu', '--steps', '2', '--batch', '4', FIXTURE);
    expect(status, stdout).to.equal(0);
    const steps = stdout.split('\n').filter((l) => l.startsWith(`${FIXTURE} step `));
    expect(steps).to.have.length(2);
    for (const line of steps) expect(line).to.match(/: 27 tensors, worst relative difference 0\.00e\+0 \(embeddings\), 0 over 0\.0001$/);
    expect(stdout).to.include(`${FIXTURE} (batch 4, item [3, 16, 16], 2 Adam steps at lr 0.001): worst relative difference 0.00e+0`);
    expect(stdout).to.include('0 of 2 steps over 0.0001');
  });

  it('exits 2 with the reason when the device cannot be opened', () => {
    const { status, stdout } = check('--device', 'nosuchdevice', '--steps', '2', '--batch', '4', FIXTURE);
    expect(status, stdout).to.equal(2);
    expect(stdout.trim()).to.match(/^nosuchdevice could not be opened: Expected one of .* for device but received "nosuchdevice"$/);
  });

  it('exits 1 when a tensor is over the tolerance (a negative one: every tensor), listing them', () => {
    const { status, stdout } = check('--device', 'cpu', '--steps', '1', '--batch', '4', '--tolerance', '-1', FIXTURE);
    expect(status, stdout).to.equal(1);
    expect(stdout).to.match(/ step 1: 27 tensors, worst relative difference 0\.00e\+0 \(embeddings\), 27 over -1\n {2}embeddings: \|cpu - cpu\| 0\.00e\+0/);
    expect(stdout).to.include('1 of 1 steps over -1');
  });

  it('reports a trainer stepping twice as far as over the tolerance, from the first step on', async () => {
    const [first, second] = await trajectories({ learningRateScale: () => 2 });
    // The first step's embeddings come before any update; its weights and everything at step 2 differ.
    const embeddings = (s: StepComparison): Difference => s.differences.find((d) => d.name === 'embeddings') as Difference;
    expect(embeddings(first).diff).to.equal(0);
    expect(first.worst.name).to.not.equal('embeddings');
    expect(relativeDifference(first.worst)).to.be.above(1e-3);
    expect(relativeDifference(embeddings(second))).to.be.above(1e-4);
  });

  it('with the loss in the step: the same trainer twice gives 0, one stepping twice as far is over the tolerance', async () => {
    const loss = graphLossOf(createLoss({ name: 'ephn' }));
    if (!loss) throw new Error('ephn has no ONNX form');
    const same = await trajectories({}, { loss });
    expect(same.map((s) => [s.differences[0]?.name, relativeDifference(s.worst)])).to.deep.equal([['loss', 0], ['loss', 0]]);
    const [first, second] = await trajectories({ learningRateScale: () => 2 }, { loss });
    expect(relativeDifference(first.worst)).to.be.above(1e-3);
    expect(relativeDifference(second.differences[0] as Difference)).to.be.above(1e-4);
  });
});
