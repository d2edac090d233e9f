/**
 * @file Resuming in a fresh process, as a user resumes after a crash or to add epochs: `dml train` for
 * one epoch in one process, `dml train --resume --epochs 2` in another, against `dml train --epochs 2`
 * uninterrupted, on the cpu and the ort-cpu backends. A new process names its variables afresh
 * (`head/kernel`, where the first process had `head/kernel_1`), so the optimizer state must be matched
 * by the layers' stable names (checkpoint-io.ts). The runs agree bit for bit: the resumed run loads the
 * checkpoint's weights into a model built by the same builders (so the training layers compute with the
 * same rounding), the probe step leaves batch-norm statistics as they were, and the fused Adam restores
 * its bias-correction products as the running float32 products. Killed with SIGKILL in the middle of an
 * epoch, a resume repeats that epoch from the last checkpoint and ends where the uninterrupted run ends.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function dmlTrain(config: string, ...extra: string[]): void {
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/dml.ts', 'train', '--config', config, ...extra], { cwd: root, env: { ...process.env, CI: '1' }, stdio: 'ignore' });
}

function stepLosses(out: string): number[] {
  return readFileSync(path.join(out, 'log.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; loss: number | null })
    .filter((e) => e.type === 'step')
    .map((e) => e.loss ?? Number.NaN);
}

function weights(out: string): Float32Array {
  const bytes = readFileSync(path.join(out, 'checkpoints', 'last', 'weights.bin'));
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
}

/** Every weight of the run's last checkpoint (trainable and batch-norm statistics), by name. */
function namedWeights(out: string): Map<string, Float32Array> {
  const model = JSON.parse(readFileSync(path.join(out, 'checkpoints', 'last', 'model.json'), 'utf8')) as { weightsManifest: Array<{ weights: Array<{ name: string; shape: number[] }> }> };
  const all = weights(out);
  const named = new Map<string, Float32Array>();
  let offset = 0;
  for (const spec of model.weightsManifest.flatMap((g) => g.weights)) {
    const size = spec.shape.reduce((a, b) => a * b, 1);
    named.set(spec.name, all.subarray(offset, offset + size));
    offset += size;
  }
  return named;
}

/** Starts `dml train` and kills it with SIGKILL once its log holds a step of epoch `epoch`. */
async function killDuringEpoch(config: string, out: string, epoch: number): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/dml.ts', 'train', '--config', config], { cwd: root, env: { ...process.env, CI: '1' }, stdio: 'ignore' });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  for (;;) {
    const log = existsSync(path.join(out, 'log.jsonl')) ? readFileSync(path.join(out, 'log.jsonl'), 'utf8') : '';
    if (log.includes(`"type":"step","epoch":${epoch},"step":2,`)) break;
    if (child.exitCode !== null) throw new Error(`dml train ended before epoch ${epoch}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  child.kill('SIGKILL');
  expect(await exited).to.equal('SIGKILL');
}

describe('train: resume in a fresh process', function () {
  this.timeout(180_000);
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'dml-resume-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('ort-cpu with batch norm: killed (SIGKILL) in the middle of epoch 2, --resume ends bit for bit where the uninterrupted run ends', async () => {
    const config = (out: string): string => {
      const file = path.join(dir, `${path.basename(out)}.json`);
      const model = { kind: 'mlp', inputDim: 784, hidden: [16], embeddingDim: 4, batchNorm: true };
      writeFileSync(file, JSON.stringify(tinyTrainConfig(out, { backend: 'ort-cpu', model, epochs: 3 })));
      return file;
    };
    const killed = path.join(dir, 'killed');
    const whole = path.join(dir, 'uninterrupted');
    await killDuringEpoch(config(killed), killed, 2);
    dmlTrain(config(killed), '--resume');
    dmlTrain(config(whole));
    expect(stepLosses(killed)).to.deep.equal(stepLosses(whole));
    const [a, b] = [namedWeights(killed), namedWeights(whole)];
    expect([...a.keys()]).to.include('head_bn_1/moving_variance');
    for (const [name, values] of b) expect(Array.from(a.get(name) as Float32Array), name).to.deep.equal(Array.from(values));
  });

  for (const backend of ['cpu', 'ort-cpu'] as const) {
    it(`${backend}: one epoch, then --resume to two in another process, equals two epochs uninterrupted`, () => {
      const config = (out: string): string => {
        const file = path.join(dir, `${path.basename(out)}.json`);
        writeFileSync(
          file,
          JSON.stringify(tinyTrainConfig(out, { backend })),
        );
        return file;
      };
      const split = path.join(dir, `${backend}-split`);
      const whole = path.join(dir, `${backend}-whole`);
      dmlTrain(config(split));
      dmlTrain(config(split), '--resume', '--epochs', '2');
      dmlTrain(config(whole), '--epochs', '2');
      expect(stepLosses(split)).to.deep.equal(stepLosses(whole));
      expect(Array.from(weights(split))).to.deep.equal(Array.from(weights(whole)));
    });
  }
});
