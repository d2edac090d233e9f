/**
 * @file Tests of the triplet margin loss: pytorch-metric-learning golden values (all triplets,
 * squared distance, the three miner types), degenerate batches, option errors and
 * finite-difference gradients with a fixed active set.
 */
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';
import { TripletMarginLoss, type TripletMarginOptions } from '../../../lib/train/losses/triplet-margin.js';
import { mineTripletsByMargin } from '../../../lib/train.js';
import { cosineSimilarityMatrix, distancesFromSimilarities, labelPairMasks } from '../../../lib/train/similarity.js';
import {
  checkFixture,
  clusteredBatch,
  expectDeterministic,
  expectZeroOnDegenerateBatches,
  gradientCheck,
  onCpuBackend,
} from './loss-test-support.js';

describe('train/losses/triplet-margin', () => {
  onCpuBackend();

  it('equals TripletMarginLoss (+ TripletMarginMiner) to 1e-5', () => {
    checkFixture('triplet-margin', 'triplet-margin', 1e-5);
  });

  it('returns 0 with validCount 0 without a valid or violating triplet, and is deterministic', () => {
    expectZeroOnDegenerateBatches(new TripletMarginLoss());
    expectZeroOnDegenerateBatches(new TripletMarginLoss({ miner: 'hard' }));
    expectDeterministic(new TripletMarginLoss({ miner: 'semihard', margin: 0.2 }), clusteredBatch(3, [0, 0, 1, 1, 2, 2], 4, 0.7));
  });

  it('names bad options', () => {
    expectDmlErrorSync(() => new TripletMarginLoss({ miner: 'easy' as 'all' }), 'E_ARG', 'Expected one of none, all, hard, semihard, batch-hard for loss.miner but received "easy"');
    expectDmlErrorSync(() => new TripletMarginLoss({ margin: '0.1' as unknown as number }), 'E_ARG', 'Expected a number for loss.margin but received "0.1"');
  });

  // Seed chosen so that no hinge or mining decision lies within 2 steps of its threshold (checked below).
  const batch = clusteredBatch(20, [0, 0, 0, 1, 1, 2, 2], 4, 0.8);
  const cases: TripletMarginOptions[] = [
    {},
    { distance: 'squared-euclidean', margin: 0.1 },
    { miner: 'semihard', margin: 0.2 },
    { miner: 'hard', margin: 0.2 },
  ];
  for (const options of cases) {
    it(`gradient through the normalisation matches finite differences ${JSON.stringify(options)}`, () => {
      const masks = labelPairMasks(batch.labels);
      const mined = (normalized: tf.Tensor2D): string => {
        if (options.miner === undefined) return '';
        const d = distancesFromSimilarities(cosineSimilarityMatrix(normalized), 'euclidean').dataSync();
        const t = mineTripletsByMargin(d, masks, options.miner as 'hard', options.margin ?? 0.05);
        return `${t.anchors.join()}/${t.positives.join()}/${t.negatives.join()}`;
      };
      const check = gradientCheck(new TripletMarginLoss(options), batch, 3e-3, mined);
      expect(check.relativeError).to.be.below(1e-3);
      expect(check.gradientScale).to.be.above(1e-3);
    });
  }
});
