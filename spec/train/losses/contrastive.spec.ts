/**
 * @file Tests of the contrastive loss: pytorch-metric-learning golden values, degenerate batches and
 * finite-difference gradients.
 */
import { expect } from 'chai';
import { ContrastiveLoss } from '../../../lib/train/losses/contrastive.js';
import {
  checkFixture,
  clusteredBatch,
  evaluate,
  expectDeterministic,
  expectZeroOnDegenerateBatches,
  gradientCheck,
  onCpuBackend,
} from './loss-test-support.js';

describe('train/losses/contrastive', () => {
  onCpuBackend();

  it('equals ContrastiveLoss (default and custom margins) to 1e-5', () => {
    checkFixture('contrastive', 'contrastive', 1e-5);
  });

  it('handles degenerate batches: one class still pulls its positives (as PML), nothing else is NaN', () => {
    expectZeroOnDegenerateBatches(new ContrastiveLoss(), { oneClass: true, singletons: true });
    const oneClass = evaluate(new ContrastiveLoss(), clusteredBatch(1, [4, 4, 4], 3, 0.5));
    expect(oneClass.value).to.be.above(0);
    expect(oneClass).to.include({ validCount: 6, totalCount: 6 });
    // Negatives all farther than the margin and no positive pair: a constant 0.
    expect(evaluate(new ContrastiveLoss({ negMargin: 0 }), clusteredBatch(1, [0, 1, 2], 3, 0.5))).to.deep.equal({
      value: 0,
      validCount: 0,
      totalCount: 6,
    });
    expectDeterministic(new ContrastiveLoss(), clusteredBatch(3, [0, 0, 1, 1, 2, 2], 4, 0.7));
  });

  it('gradient through the normalisation matches finite differences', () => {
    const batch = clusteredBatch(22, [0, 0, 0, 1, 1, 2, 2, 3], 4, 0.8);
    const check = gradientCheck(new ContrastiveLoss({ posMargin: 0.2 }), batch, 3e-3);
    expect(check.relativeError).to.be.below(1e-3);
    expect(check.gradientScale).to.be.above(1e-3);
  });
});
