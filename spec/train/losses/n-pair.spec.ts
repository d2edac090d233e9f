/**
 * @file Tests of the multi-class N-pair loss: pytorch-metric-learning NPairsLoss golden values
 * (cosine, logits / tau for tau 1 and 0.1), the pair choice, degenerate batches and
 * finite-difference gradients.
 */
import { expect } from 'chai';
import { NPairLoss } from '../../../lib/train/losses/n-pair.js';
import {
  checkFixture,
  clusteredBatch,
  evaluate,
  expectDeterministic,
  expectZeroOnDegenerateBatches,
  gradientCheck,
  onCpuBackend,
} from './loss-test-support.js';

describe('train/losses/n-pair', () => {
  onCpuBackend();

  it('equals NPairsLoss on cosine similarities / tau (tau 1 and 0.1) to 1e-5', () => {
    checkFixture('npair', 'npair', 1e-5);
  });

  it('uses the two lowest indices of each class; singletons and third images take no part', () => {
    const batch = clusteredBatch(8, [0, 1, 0, 2, 1, 0, 3], 4, 0.8);
    const withExtra = evaluate(new NPairLoss(), batch);
    expect(withExtra).to.include({ validCount: 2, totalCount: 4 });
    // Drop images 5 (third of class 0) and 3, 6 (singletons): the same two pairs remain.
    const keep = [0, 1, 2, 4];
    const reduced = {
      values: Float32Array.from(keep.flatMap((i) => Array.from(batch.values.subarray(i * 4, i * 4 + 4)))),
      rows: 4,
      dim: 4,
      labels: Int32Array.from(keep, (i) => batch.labels[i]!),
    };
    expect(evaluate(new NPairLoss(), reduced).value).to.be.closeTo(withExtra.value, 1e-6);
  });

  it('returns 0 with validCount 0 for batches without two pairs, and is deterministic', () => {
    expectZeroOnDegenerateBatches(new NPairLoss());
    expect(evaluate(new NPairLoss(), clusteredBatch(2, [0, 0, 1, 2], 3, 0.5))).to.include({ value: 0, validCount: 0 });
    expectDeterministic(new NPairLoss({ order: 2 }), clusteredBatch(3, [0, 0, 1, 1, 2, 2], 4, 0.7));
  });

  for (const order of [1, 2] as const) {
    it(`gradient through the normalisation matches finite differences (order ${order})`, () => {
      const batch = clusteredBatch(13, [0, 0, 1, 1, 2, 2, 3, 3, 3], 4, 0.7);
      const check = gradientCheck(new NPairLoss({ order }), batch, 3e-3);
      expect(check.relativeError).to.be.below(1e-3);
      expect(check.gradientScale).to.be.above(1e-3);
    });
  }
});
