/**
 * @file The NCA (softmax) terms of the easy-positive family, in the first- and second-order forms
 * of paper 000 ("Extreme triplet learning", ICLR 2020 submission; docs/methods.md sections 1.2 and 2.1).
 *
 * With temperature τ, positive similarity `S_ap` and negative similarities `S_an`, the exponents are
 *
 * - order 1: `u_p = S_ap / τ`, `u_n = S_an / τ`;
 * - order 2: `u_p = (S_ap − S_ap²/2) / τ`, `u_n = (S_an²/2) / τ`
 *   (docs/methods.md Q2: τ applied to both, as in the EPHN code the paper modifies);
 *
 * and the loss of one anchor is `−log(e^{u_p} / (e^{u_p} + Σ_n e^{u_n})) = −u_p + logsumexp([u_p] ∪ {u_n})`,
 * which for a single negative is `softplus(u_n − u_p)`: L1st = `softplus((S_an − S_ap)/τ)`,
 * L2nd = `softplus((S_an²/2 − S_ap + S_ap²/2)/τ)`. The order-2 gradients are the order-1 ones scaled
 * by `w_ap = 1 − S_ap` and `w_an = S_an`.
 */
import * as tf from '@tensorflow/tfjs';
import { maskedLogSumExp } from './masked-ops.js';

/** 1: L1st (NCA on S); 2: L2nd (paper 000). */
export type NcaOrder = 1 | 2;

/** `u_p` of positive similarities (see the file comment). */
export function positiveExponent<T extends tf.Tensor>(similarities: T, order: NcaOrder, temperature: number): T {
  const phi = order === 1 ? similarities : tf.sub(similarities, tf.mul(tf.square(similarities), 0.5));
  return tf.div(phi, temperature) as T;
}

/** `u_n` of negative similarities (see the file comment). */
export function negativeExponent<T extends tf.Tensor>(similarities: T, order: NcaOrder, temperature: number): T {
  const phi = order === 1 ? similarities : tf.mul(tf.square(similarities), 0.5);
  return tf.div(phi, temperature) as T;
}

/** Per-triplet loss `softplus(u_n − u_p)` of [K] positive and [K] negative similarities. */
export function ncaTripletLosses(positive: tf.Tensor1D, negative: tf.Tensor1D, order: NcaOrder, temperature: number): tf.Tensor1D {
  return tf.softplus(tf.sub(negativeExponent(negative, order, temperature), positiveExponent(positive, order, temperature)));
}

/**
 * Per-anchor loss `−u_p + logsumexp([u_p] ∪ {u_n : mask})` of [K] positive similarities and the
 * [K, M] candidate negative similarities, of which `mask` [K, M] keeps the negatives.
 */
export function ncaSetLosses(
  positive: tf.Tensor1D,
  negatives: tf.Tensor2D,
  mask: tf.Tensor2D,
  order: NcaOrder,
  temperature: number,
): tf.Tensor1D {
  const up = positiveExponent(positive, order, temperature);
  const logits = tf.concat([tf.expandDims(up, 1) as tf.Tensor2D, negativeExponent(negatives, order, temperature)], 1);
  const keep = tf.concat([tf.ones([positive.shape[0], 1], 'bool') as tf.Tensor2D, mask], 1);
  return tf.sub(maskedLogSumExp(logits, keep, false), up);
}
