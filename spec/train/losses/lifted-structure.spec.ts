/**
 * @file Tests of the lifted structure loss: pytorch-metric-learning golden values, degenerate batches
 * and finite-difference gradients.
 */
import { expect } from 'chai';
import { LiftedStructureLoss } from '../../../lib/train/losses/lifted-structure.js';
import {
  checkFixture,
  clusteredBatch,
  expectDeterministic,
  expectZeroOnDegenerateBatches,
  gradientCheck,
  onCpuBackend,
} from './loss-test-support.js';

describe('train/losses/lifted-structure', () => {
  onCpuBackend();

  it('equals LiftedStructureLoss (default and custom margins) to 1e-5', () => {
    checkFixture('lifted-structure', 'lifted-structure', 1e-5);
  });

  it('returns 0 with validCount 0 without positive or negative pairs, and is deterministic', () => {
    expectZeroOnDegenerateBatches(new LiftedStructureLoss());
    expectDeterministic(new LiftedStructureLoss(), clusteredBatch(3, [0, 0, 1, 1, 2, 2], 4, 0.7));
  });

  it('gradient through the normalisation matches finite differences', () => {
    const batch = clusteredBatch(41, [0, 0, 0, 1, 1, 2, 2, 3], 4, 0.8);
    const check = gradientCheck(new LiftedStructureLoss(), batch, 3e-3);
    expect(check.relativeError).to.be.below(1e-3);
    expect(check.gradientScale).to.be.above(1e-3);
  });
});
