/**
 * @file Tests of Batch All: pytorch-metric-learning NTXentLoss golden values (tau 0.1 and 0.07),
 * equality with EP and HP at group size 2 (paper 002), the validity option, degenerate batches and
 * finite-difference gradients.
 */
import { expect } from 'chai';
import { BatchAllLoss } from '../../../lib/train/losses/batch-all.js';
import { NcaTripletLoss } from '../../../lib/train/losses/easy-positive.js';
import {
  checkFixture,
  clusteredBatch,
  evaluate,
  evaluateNormalized,
  expectDeterministic,
  expectZeroOnDegenerateBatches,
  gradientCheck,
  onCpuBackend,
} from './loss-test-support.js';

describe('train/losses/batch-all', () => {
  onCpuBackend();

  it('equals NTXentLoss (tau 0.1 and 0.07) to 1e-5', () => {
    checkFixture('ntxent', 'batch-all', 1e-5);
  });

  it('coincides with EP and HP at group size 2 (paper 002), for both orders', () => {
    const batch = clusteredBatch(5, [0, 0, 1, 1, 2, 2], 4, 0.8);
    for (const order of [1, 2] as const) {
      const ba = evaluate(new BatchAllLoss({ order }), batch);
      expect(ba).to.include({ validCount: 6, totalCount: 6 });
      expect(evaluate(new NcaTripletLoss('ep', { order }), batch).value).to.be.closeTo(ba.value, 1e-5);
      expect(evaluate(new NcaTripletLoss('hp', { order }), batch).value).to.be.closeTo(ba.value, 1e-5);
    }
  });

  it('sums instead of averaging, and drops pairs with S_ap <= 0 under positive-similarity', () => {
    // Class 0 at 0 and 120 degrees (S = -0.5), class 1 at 10 and 30 degrees.
    const embeddings = [0, 120, 10, 30].map((d) => [Math.cos((d * Math.PI) / 180), Math.sin((d * Math.PI) / 180)]);
    const labels = [0, 0, 1, 1];
    const mean = evaluateNormalized(new BatchAllLoss(), embeddings, labels);
    expect(mean).to.include({ validCount: 4, totalCount: 4 });
    expect(evaluateNormalized(new BatchAllLoss({ reduction: 'sum' }), embeddings, labels).value).to.be.closeTo(4 * mean.value, 1e-4);
    expect(evaluateNormalized(new BatchAllLoss({ validity: 'positive-similarity' }), embeddings, labels)).to.include({
      validCount: 2,
      totalCount: 4,
    });
  });

  it('returns 0 with validCount 0 for batches without a valid pair, and is deterministic', () => {
    expectZeroOnDegenerateBatches(new BatchAllLoss());
    expectDeterministic(new BatchAllLoss(), clusteredBatch(3, [0, 0, 1, 1, 1, 2], 4, 0.7));
  });

  for (const order of [1, 2] as const) {
    it(`gradient through the normalisation matches finite differences (order ${order})`, () => {
      const batch = clusteredBatch(12, [0, 0, 0, 1, 1, 2, 2, 3], 4, 0.7);
      const check = gradientCheck(new BatchAllLoss({ order }), batch, 3e-3);
      expect(check.relativeError).to.be.below(1e-3);
      expect(check.gradientScale).to.be.above(1e-3);
    });
  }
});
