/**
 * @file Tests of the multi-similarity loss: pytorch-metric-learning golden values (miner on and off,
 * both reductions, other scales), degenerate batches and finite-difference gradients with a fixed
 * mined set.
 */
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { MultiSimilarityLoss } from '../../../lib/train/losses/multi-similarity.js';
import { mineMultiSimilarityPairs } from '../../../lib/train.js';
import { cosineSimilarityMatrix, labelPairMasks } from '../../../lib/train/similarity.js';
import {
  checkFixture,
  clusteredBatch,
  evaluate,
  expectDeterministic,
  expectZeroOnDegenerateBatches,
  gradientCheck,
  onCpuBackend,
} from './loss-test-support.js';

describe('train/losses/multi-similarity', () => {
  onCpuBackend();

  it('equals MultiSimilarityLoss + MultiSimilarityMiner (and the skip-anchor reduction) to 1e-5', () => {
    checkFixture('multi-similarity', 'multi-similarity', 1e-5);
  });

  it('all-rows and valid-anchors differ only in the divisor under the miner', () => {
    const batch = clusteredBatch(30, [0, 0, 0, 1, 1, 1, 2, 2, 3], 4, 0.5);
    const rows = evaluate(new MultiSimilarityLoss(), batch);
    const anchors = evaluate(new MultiSimilarityLoss({ reduction: 'valid-anchors' }), batch);
    expect(rows.validCount).to.equal(anchors.validCount);
    expect(anchors.validCount).to.be.below(9);
    expect(anchors.value * anchors.validCount).to.be.closeTo(rows.value * 9, 1e-5);
  });

  it('returns 0 with validCount 0 when nothing is mined, and is deterministic', () => {
    expectZeroOnDegenerateBatches(new MultiSimilarityLoss());
    expectZeroOnDegenerateBatches(new MultiSimilarityLoss({ reduction: 'valid-anchors', miner: 'none' }));
    expectZeroOnDegenerateBatches(new MultiSimilarityLoss({ miner: 'none' }), { oneClass: true, singletons: true });
    expectDeterministic(new MultiSimilarityLoss(), clusteredBatch(3, [0, 0, 1, 1, 2, 2], 4, 0.7));
  });

  for (const miner of ['multi-similarity', 'none'] as const) {
    it(`gradient through the normalisation matches finite differences (miner ${miner})`, () => {
      const batch = clusteredBatch(31, [0, 0, 0, 1, 1, 1, 2, 2], 4, 0.9);
      const masks = labelPairMasks(batch.labels);
      const mined = (normalized: tf.Tensor2D): string => {
        const pairs = mineMultiSimilarityPairs(cosineSimilarityMatrix(normalized).dataSync(), masks);
        return [pairs.positive.anchors, pairs.positive.others, pairs.negative.anchors, pairs.negative.others].map((a) => a.join()).join('/');
      };
      // beta = 50 makes the negative term sharp: a smaller step keeps the O(h^4) truncation small.
      const check = gradientCheck(new MultiSimilarityLoss({ miner }), batch, 1e-3, miner === 'none' ? undefined : mined);
      expect(check.relativeError).to.be.below(1e-3);
      expect(check.gradientScale).to.be.above(1e-3);
    });
  }
});
