/**
 * @file Reductions of per-tuple losses to the batch scalar, as pytorch-metric-learning's reducers
 * (docs/methods.md section 6), plus the zero output every loss returns when no tuple is valid.
 *
 * - mean / sum over the kept tuples (`MeanReducer`, and the sum of the EPHN paper-time code);
 * - average over non-zero losses (`AvgNonZeroReducer`): `Σ l / |{l > 0}|`, 0 when no loss is > 0;
 * - divisor (`DivisorReducer`): `Σ l / divisor` with a divisor the loss computes.
 *
 * Counts are read back from the values (they are constants for the gradient, as in the reference).
 */
import * as tf from '@tensorflow/tfjs';
import type { LossOutput } from './metric-loss.js';

/** How the per-anchor losses of the easy-positive family are combined (docs/methods.md Q1). */
export type AnchorReduction = 'mean' | 'sum';

/** The output of a batch without any valid tuple: a constant 0 that does not depend on the embeddings. */
export function zeroLoss(totalCount: number): LossOutput {
  return { loss: tf.scalar(0), validCount: 0, totalCount };
}

/** Mean or sum of a [K] vector of per-tuple losses (K ≥ 1). */
export function reduceLosses(losses: tf.Tensor1D, reduction: AnchorReduction): tf.Scalar {
  return reduction === 'mean' ? tf.mean(losses) : tf.sum(losses);
}

/**
 * `AvgNonZeroReducer`: the sum of `losses` (any shape; entries outside the tuple set must be 0) and
 * the number of entries > 0 (divide when it is > 0).
 */
export function sumAndNonZeroCount(losses: tf.Tensor): { sum: tf.Scalar; nonZero: number } {
  let nonZero = 0;
  for (const value of losses.dataSync()) if (value > 0) nonZero++;
  return { sum: tf.sum(losses), nonZero };
}

/**
 * `AvgNonZeroReducer` as a loss output: the mean of the entries of `losses` that are > 0 (entries
 * outside the tuple set must be 0), `validCount` their number; the zero output when none is.
 */
export function averageNonZero(losses: tf.Tensor, totalCount: number): LossOutput {
  const { sum, nonZero } = sumAndNonZeroCount(losses);
  if (nonZero === 0) return zeroLoss(totalCount);
  return { loss: tf.div(sum, nonZero), validCount: nonZero, totalCount };
}
