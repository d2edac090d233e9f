/**
 * @file A run measured in optimiser steps (`steps`, validation and checkpoints every
 * `validation.everySteps`), per-step learning-rate schedules in log.jsonl, and resuming a steps run
 * in the middle of an epoch (with augmentation draws replayed) as if uninterrupted.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { parseTrainConfig, type TrainConfigInput } from '../../lib/train/config.js';
import { optimizerSchema } from '../../lib/train/optimizer.js';
import { scheduledLearningRate } from '../../lib/train/lr-schedule.js';
import { train } from '../../lib/train/trainer.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { expectValidTrainReport } from '../helpers/report-schema.js';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';

interface LogLine {
  type: string;
  epoch: number;
  step?: number;
  globalStep: number;
  loss: number | null;
  learningRate: number;
}

const logLines = (out: string): LogLine[] =>
  readFileSync(path.join(out, 'log.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as LogLine);
const stepLines = (out: string): LogLine[] => logLines(out).filter((l) => l.type === 'step');

function config(out: string, overrides: Record<string, unknown>): TrainConfigInput {
  const base = tinyTrainConfig(out, { scatter: { every: 1, set: 'validation', maxPoints: 100 }, validation: { maxItems: 100 } });
  delete base['epochs'];
  return { ...base, ...overrides } as TrainConfigInput;
}

describe('train: step budget and per-step schedules', function () {
  this.timeout(180_000);
  let dir: string;
  /** Batches per epoch of the tiny run's sampler. */
  let epochLength: number;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-steps-'));
    const out = path.join(dir, 'probe');
    await train(parseTrainConfig(config(out, { epochs: 1 }), 'test'));
    epochLength = stepLines(out).length;
    expect(epochLength).to.be.at.least(4);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('trains exactly `steps` steps across epochs, validating and checkpointing every validation.everySteps steps and after the last', async () => {
    const out = path.join(dir, 'steps');
    const steps = epochLength + 3;
    const optimizer = { kind: 'adam', learningRate: 0.01, schedule: { kind: 'onecycle', pctStart: 0.3 } };
    const result = await train(parseTrainConfig(config(out, { steps, optimizer, validation: { everySteps: 4, maxItems: 100 } }), 'test'));
    const points = [0, ...Array.from({ length: Math.floor(steps / 4) }, (_, i) => 4 * (i + 1)), ...(steps % 4 === 0 ? [] : [steps])];
    expect(result.history.map((r) => r.globalStep)).to.deep.equal(points);
    expect(result.history.map((r) => r.steps)).to.deep.equal(points.map((p, i) => (i === 0 ? 0 : p - (points[i - 1] as number))));
    expect(result.history.every((r) => r.validation !== undefined)).to.equal(true);
    const lines = stepLines(out);
    expect(lines.map((l) => l.globalStep)).to.deep.equal(Array.from({ length: steps }, (_, i) => i + 1));
    // The second epoch starts after epochLength steps, its step numbers from 1.
    expect(lines.map((l) => [l.epoch, l.step])).to.deep.equal(lines.map((_, i) => (i < epochLength ? [1, i + 1] : [2, i + 1 - epochLength])));
    // Each step's learning rate is OneCycle's at that step over `steps` steps (what PyTorch's OneCycleLR gives, lr-schedule.spec.ts).
    const parsed = optimizerSchema.parse(optimizer);
    lines.forEach((l, t) => expect(l.learningRate).to.equal(scheduledLearningRate(parsed, { step: t, epoch: 0, totalSteps: steps, milestoneUnit: 'steps' })));
    expect(logLines(out).filter((l) => l.type === 'validation').map((l) => l.globalStep)).to.deep.equal(points);
    expect(existsSync(path.join(out, `scatter/step-${String(steps).padStart(6, '0')}.svg`))).to.equal(true);
    expect(existsSync(path.join(out, 'scatter/step-000004.json'))).to.equal(true);
    expectValidTrainReport(JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')));
  });

  it('an epochs run logs each step\'s rate of a per-step schedule (cosine with warm-up over all its steps) and its global step', async () => {
    const out = path.join(dir, 'cosine');
    const optimizer = { kind: 'sgd', learningRate: 0.05, schedule: { kind: 'cosine', minLearningRate: 0.001 }, warmup: { steps: 3, startFactor: 0.2 } };
    const result = await train(parseTrainConfig(config(out, { epochs: 2, optimizer }), 'test'));
    const lines = stepLines(out);
    expect(lines).to.have.length(2 * epochLength);
    const parsed = optimizerSchema.parse(optimizer);
    lines.forEach((l, t) => {
      expect(l.globalStep).to.equal(t + 1);
      expect(l.learningRate).to.equal(scheduledLearningRate(parsed, { step: t, epoch: l.epoch - 1, totalSteps: 2 * epochLength, milestoneUnit: 'epochs' }));
    });
    expect(lines[0]?.learningRate).to.be.closeTo(0.01, 1e-15);
    expect(result.history.map((r) => [r.epoch, r.globalStep])).to.deep.equal([
      [0, 0],
      [1, epochLength],
      [2, 2 * epochLength],
    ]);
  });

  it('resuming a steps run from a checkpoint in the middle of an epoch (augmented, step milestones) equals the uninterrupted run', async () => {
    const run = (out: string, steps: number): TrainConfigInput =>
      config(out, {
        steps,
        data: { ...(tinyTrainConfig(out)['data'] as object), augmentation: { scale: [0.5, 1] } },
        optimizer: { kind: 'adam', learningRate: 0.01, milestones: [3], gamma: 0.5 },
        validation: { everySteps: 2, maxItems: 100 },
      });
    const total = epochLength + 2;
    await train(parseTrainConfig(run(path.join(dir, 'whole'), total), 'test'));
    const split = path.join(dir, 'split');
    await train(parseTrainConfig(run(split, 3), 'test')); // checkpoints after steps 2 and 3, inside epoch 1
    const resumed = await train(parseTrainConfig(run(split, total), 'test'), { resume: true });
    const strip = (lines: LogLine[]): unknown[] => lines.map((l) => [l.epoch, l.step, l.globalStep, l.loss, l.learningRate]);
    expect(strip(stepLines(split))).to.deep.equal(strip(stepLines(path.join(dir, 'whole'))));
    expect(stepLines(split).map((l) => l.learningRate).slice(0, 4)).to.deep.equal([0.01, 0.01, 0.01, 0.005]);
    // The resumed run validates at the multiples of everySteps (as the uninterrupted one) and after the last step.
    const evens = Array.from({ length: Math.floor(total / 2) - 1 }, (_, i) => 4 + 2 * i);
    expect(resumed.history.map((r) => r.globalStep)).to.deep.equal([...new Set([0, 2, 3, ...evens, total])]);
    await expectDmlError(
      train(parseTrainConfig(run(split, 2), 'test'), { resume: true }),
      'E_ARG',
      new RegExp(`^Cannot resume from .*: it is at step ${total}, past the 2 step\\(s\\) asked for; give --steps ${total} or more$`),
    );
  });

  it('refuses both or neither of epochs and steps, and validation.everySteps in an epochs run, naming the field', async () => {
    const out = path.join(dir, 'bad');
    await expectDmlError(() => parseTrainConfig(config(out, { epochs: 2, steps: 10 }), 'a.json'), 'E_ARG', /^a\.json: epochs: give exactly one of epochs .* and steps .*, got epochs 2 and steps 10$/);
    await expectDmlError(() => parseTrainConfig(config(out, {}), 'a.json'), 'E_ARG', /^a\.json: epochs: give exactly one of epochs .*, got neither$/);
    await expectDmlError(() => parseTrainConfig(config(out, { steps: 0 }), 'a.json'), 'E_ARG', /^a\.json: steps: /);
    await expectDmlError(
      () => parseTrainConfig(config(out, { epochs: 2, validation: { everySteps: 5 } }), 'a.json'),
      'E_ARG',
      /^a\.json: validation\.everySteps: applies to a steps run only .*got 5 in an epochs run$/,
    );
    await expectDmlError(
      train(parseTrainConfig(config(out, { steps: 3, optimizer: { learningRate: 0.01, schedule: { kind: 'onecycle', pctStart: 0.3 } } }), 'a.json')),
      'E_ARG',
      /^optimizer\.schedule\.pctStart: .*got 0\.3 x 3 steps$/,
    );
    expect(existsSync(out)).to.equal(false);
  });
});
