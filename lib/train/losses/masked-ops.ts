/**
 * @file Row-wise log-sum-exp over a subset of the entries of each row, numerically stable
 * (max-subtracted, as docs/methods.md section 0 requires), as pytorch-metric-learning's
 * `lmu.logsumexp(x, keep_mask, add_one)`.
 */
import * as tf from '@tensorflow/tfjs';

/**
 * Excluded entries are replaced by this before the log-sum-exp: `exp(-1e30 − max) = 0` in float32,
 * while the value itself stays finite (−∞ would turn a fully excluded row into NaN).
 */
const EXCLUDED = -1e30;

/**
 * `log Σ_{j: mask_kj} exp(x_kj)` per row k of `x` [K, M]; with `addOne`, `log(1 + Σ …)` (a zero
 * logit appended to every row, so a row without kept entries gives exactly 0). Without `addOne`
 * every row must keep at least one entry. Excluded entries get no gradient.
 */
export function maskedLogSumExp(x: tf.Tensor2D, mask: tf.Tensor2D, addOne: boolean): tf.Tensor1D {
  const kept = tf.where(mask, x, tf.fill(x.shape, EXCLUDED));
  const rows = addOne ? tf.concat([kept, tf.zeros([x.shape[0], 1])], 1) : kept;
  return tf.logSumExp(rows, 1) as tf.Tensor1D;
}
