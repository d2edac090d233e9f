/**
 * @file Tests of the cross-batch memory (lib/train/losses/cross-batch-memory.ts): five steps of
 * contrastive, multi-similarity and triplet-margin through a memory that wraps, against PML's
 * CrossBatchMemory written out in float64 (scripts/reference/torch_pml_losses.py): each step's loss,
 * valid count and gradient; its step state saved and restored mid-sequence continues the sequence
 * exactly; the errors (a memory smaller than a batch, a state of another memory, `memory` on a loss
 * that does not take it); and a training run with a memory resumed from its checkpoint equals an
 * uninterrupted one.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { parseTrainConfig, type TrainConfigInput } from '../../../lib/train/config.js';
import type { MetricLoss } from '../../../lib/train/losses/metric-loss.js';
import { createLoss, type LossSpec } from '../../../lib/train/losses/registry.js';
import { normalizeEmbeddings } from '../../../lib/train/similarity.js';
import { train } from '../../../lib/train/trainer.js';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';
import { tinyTrainConfig } from '../../helpers/tiny-train-config.js';
import { onCpuBackend } from './loss-test-support.js';

interface XbmStep {
  labels: number[];
  embeddings: number[][];
  value: number;
  validCount: number;
  gradEmbeddings: number[][];
}

const fixture = JSON.parse(readFileSync(new URL('../../fixtures/losses/pml-losses.json', import.meta.url), 'utf8')) as {
  xbm: Array<{ loss: string; options: Record<string, unknown>; steps: XbmStep[] }>;
};

/** One step: the loss, its valid count and its gradient with respect to the (unnormalised) embeddings. */
function step(loss: MetricLoss, s: XbmStep): { value: number; validCount: number; gradient: Float32Array } {
  const embeddings = tf.variable(tf.tensor2d(s.embeddings));
  let validCount = 0;
  const { value, grads } = tf.variableGrads(() => {
    const out = loss.compute(normalizeEmbeddings(embeddings), Int32Array.from(s.labels));
    validCount = out.validCount;
    return out.loss;
  }, [embeddings]);
  const result = { value: value.dataSync()[0]!, validCount, gradient: grads[embeddings.name]!.dataSync() as Float32Array };
  tf.dispose([value, embeddings, ...Object.values(grads)]);
  return result;
}

describe('train/losses/cross-batch-memory', function () {
  this.timeout(120_000);
  onCpuBackend();

  for (const sequence of fixture.xbm) {
    it(`${sequence.loss} through a memory of 14 (wrapping), after 1 plain step, step by step as PML's CrossBatchMemory`, () => {
      const loss = createLoss({ name: sequence.loss, ...sequence.options } as LossSpec);
      for (const [i, s] of sequence.steps.entries()) {
        const got = step(loss, s);
        expect(Math.abs(got.value - s.value) / Math.max(1, Math.abs(s.value)), `step ${i + 1}: ${got.value} vs ${s.value}`).to.be.below(2e-6);
        expect(got.validCount, `step ${i + 1} valid count`).to.equal(s.validCount);
        const expected = s.gradEmbeddings.flat();
        const scale = Math.max(...expected.map(Math.abs));
        const worst = Math.max(...expected.map((e, k) => Math.abs(got.gradient[k]! - e)));
        expect(worst / scale, `step ${i + 1} gradient`).to.be.below(2e-4);
      }
    });
  }

  it('its step state, saved after step 3 and restored into a new loss, continues the sequence exactly', () => {
    const sequence = fixture.xbm[1]!;
    const spec = { name: sequence.loss, ...sequence.options } as LossSpec;
    const whole = createLoss(spec);
    const first = sequence.steps.map((s) => step(whole, s));
    const split = createLoss(spec);
    for (const s of sequence.steps.slice(0, 3)) step(split, s);
    const saved = split.stepState!.save();
    expect([...saved.arrays.keys()]).to.deep.equal(['memory/embeddings', 'memory/labels']);
    expect(saved.values).to.deep.equal([(2 * 6) % 14, 0, 3]);
    const resumed = createLoss(spec);
    resumed.stepState!.restore(saved, 'test');
    const rest = sequence.steps.slice(3).map((s) => step(resumed, s));
    expect(rest.map((r) => [r.value, Array.from(r.gradient)])).to.deep.equal(first.slice(3).map((r) => [r.value, Array.from(r.gradient)]));
  });

  it('names a memory smaller than a batch, a state of another memory, and memory on a loss that does not take it', () => {
    const small = createLoss({ name: 'contrastive', memory: { size: 4 } });
    const batch = fixture.xbm[0]!.steps[0]!;
    expectDmlErrorSync(() => step(small, batch), 'E_ARG', 'Expected at least the batch size 6 (the memory must hold a batch) for loss.memory.size but received 4');
    const other = createLoss({ name: 'contrastive', memory: { size: 8 } });
    expectDmlErrorSync(
      () => other.stepState!.restore({ arrays: new Map([['memory/labels', new Float32Array(14)], ['memory/embeddings', new Float32Array(14 * 6)]]), values: [2, 0, 3] }, 'run/checkpoints/last'),
      'E_ARG',
      'Cannot resume from run/checkpoints/last: it holds no cross-batch memory of 8 items for the contrastive loss',
    );
    expectDmlErrorSync(() => createLoss({ name: 'ephn', memory: { size: 8 } } as unknown as LossSpec), 'E_ARG', /^Expected no unknown option \(known: .*\) for loss\.memory but received/);
  });

  it('a training run with a memory, resumed from its checkpoint, equals an uninterrupted one', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dml-xbm-'));
    try {
      const config = (out: string, epochs: number): TrainConfigInput =>
        tinyTrainConfig(out, { epochs, loss: { name: 'multi-similarity', memory: { size: 90, startStep: 4 } } }) as TrainConfigInput;
      const losses = (out: string): number[] =>
        readFileSync(path.join(out, 'log.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; loss: number }).filter((e) => e.type === 'step').map((e) => e.loss);
      await train(parseTrainConfig(config(path.join(dir, 'whole'), 2), 'test'));
      await train(parseTrainConfig(config(path.join(dir, 'split'), 1), 'test'));
      await train(parseTrainConfig(config(path.join(dir, 'split'), 2), 'test'), { resume: true });
      expect(losses(path.join(dir, 'split'))).to.deep.equal(losses(path.join(dir, 'whole')));
      const state = JSON.parse(readFileSync(path.join(dir, 'whole', 'checkpoints', 'last', 'state.json'), 'utf8')) as { lossStepState: number[] };
      // The memory counted the training steps, not the trainer's probe step.
      expect(state.lossStepState[2]).to.equal(losses(path.join(dir, 'whole')).length);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
