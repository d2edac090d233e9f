/**
 * @file Batch All (BA) with the NCA loss (paper 002's baseline; docs/methods.md section 1.2 and Q5).
 * Paper 002 only says BA "considers all possible positive and negative examples"; we use every
 * ordered positive pair (a, p) with all of a's negatives:
 *
 *     L_ap = −u_p + logsumexp([u_p] ∪ {u_n : N_an}),   order 1: u = S/τ
 *
 * averaged over the kept pairs. At order 1 this is pytorch-metric-learning's `NTXentLoss` with
 * temperature τ (default 0.1 here, 0.07 there); with group size 2 it coincides with EP and HP.
 *
 * Options as the easy-positive family (nca.ts, easy-positive.ts): `temperature`, `order`,
 * `reduction` (mean or sum over kept pairs) and `validity`. A pair whose anchor has no negative
 * (a batch of one class) is dropped, where NTXentLoss would count it as 0 in its mean; under
 * `positive-similarity` a pair is also dropped when `S_ap ≤ 0` or the hardest negative's `S_an ≤ 0`.
 * Near-duplicate positives are kept (BA mines nothing). `validCount` counts the kept pairs,
 * `totalCount` the ordered positive pairs.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { selectNegatives } from '../mining/anchor-selection.js';
import { maskTensor } from '../similarity.js';
import { isValidTuple, ncaOptionsShape } from './easy-positive.js';
import { BaseMetricLoss } from './base-loss.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';
import { maskedLogSumExp } from './masked-ops.js';
import { negativeExponent, positiveExponent } from './nca.js';
import { parseSpec } from '../../util/parse-spec.js';
import { zeroLoss } from './reducers.js';
import { defineLoss } from './loss-entry.js';

/** Options of Batch All. */
export const batchAllOptionsSchema = z.strictObject({ ...ncaOptionsShape });

/** Options as written in a config (every field optional). */
export type BatchAllOptions = z.input<typeof batchAllOptionsSchema>;

/** Batch All NCA loss over every positive pair (see the file comment). */
export class BatchAllLoss extends BaseMetricLoss<z.output<typeof batchAllOptionsSchema>> {
  constructor(options: BatchAllOptions = {}) {
    super('batch-all', parseSpec(batchAllOptionsSchema, options, 'loss'));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { size, masks, similarities, values } = batch;
    const { temperature, order, reduction, validity } = this.options;
    const hardest = selectNegatives(values, masks, { strategy: 'hard' });
    const kept = new Float32Array(size * size);
    let pairCount = 0;
    let keptCount = 0;
    for (let k = 0; k < size * size; k++) {
      if (masks.positive[k] !== 1) continue;
      pairCount++;
      const a = Math.floor(k / size);
      if (hardest.index[a]! < 0 || !isValidTuple(validity, values[k]!, hardest.similarity[a]!)) continue;
      kept[k] = 1;
      keptCount++;
    }
    if (keptCount === 0) return zeroLoss(pairCount);
    // −u_p + logsumexp([u_p] ∪ {u_n}) = softplus(logsumexp_n u_n − u_p); the negatives' term is per anchor.
    const negativeTerm = maskedLogSumExp(negativeExponent(similarities, order, temperature), maskTensor(masks.negative, size), false);
    const losses = tf.softplus(tf.sub(tf.expandDims(negativeTerm, 1), positiveExponent(similarities, order, temperature)));
    const total: tf.Scalar = tf.sum(tf.mul(losses, tf.tensor2d(kept, [size, size])));
    return {
      loss: reduction === 'mean' ? tf.div(total, keptCount) : total,
      validCount: keptCount,
      totalCount: pairCount,
    };
  }
}

/** Registry entry: `batch-all`. */
export const BATCH_ALL_LOSS = defineLoss('batch-all', batchAllOptionsSchema, (options) => new BatchAllLoss(options));
