/**
 * @file FastAP (Cakir, He, Xia, Kulis and Sclaroff, "Deep Metric Learning to Rank", CVPR 2019) as
 * pytorch-metric-learning's `FastAPLoss`: average precision of each anchor's ranking of the batch,
 * made differentiable by soft histogram binning of the squared Euclidean distances d² = ‖x_i − x_j‖²
 * ∈ [0, 4] of the L2-normalised embeddings. With L = `numBins`, bin centres z_b = 4b/L (b = 0..L),
 * Δ = 4/L and the triangular kernel δ_b(d²) = [1 − |d² − z_b| / Δ]_+, per anchor i:
 *
 *     h⁺_b = Σ_{j ∈ P(i)} δ_b(d²_ij),   h_b = h⁺_b + Σ_{j ∈ N(i)} δ_b(d²_ij)
 *     H⁺_b = Σ_{b' ≤ b} h⁺_b',          H_b = Σ_{b' ≤ b} h_b'
 *     FastAP_i = (1/|P(i)|) Σ_b h⁺_b H⁺_b / H_b          (terms with h⁺_b H⁺_b = 0 or H_b = 0 are 0)
 *     ℓ = mean over anchors with a positive of (1 − FastAP_i)
 *
 * Options (PML's): `numBins` L = 10 (the paper's). The cumulative sums are products with a triangular
 * matrix of ones (no cumsum kernel needed). `validCount` counts the anchors with a positive,
 * `totalCount` the batch.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { parseSpec } from '../../util/parse-spec.js';
import { BaseMetricLoss } from './base-loss.js';
import { defineLoss } from './loss-entry.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';
import { zeroLoss } from './reducers.js';

/** Options of `fast-ap`. */
export const fastApOptionsSchema = z.strictObject({
  /** L, the histogram bins over [0, 4] (10). */
  numBins: z.int().min(1).default(10),
});

/** Options as written in a config. */
export type FastApOptions = z.input<typeof fastApOptionsSchema>;

/** The largest squared distance of unit vectors. */
const HISTOGRAM_MAX = 4;

/** FastAP (see the file comment). */
export class FastApLoss extends BaseMetricLoss<z.output<typeof fastApOptionsSchema>> {
  constructor(options: FastApOptions = {}) {
    super('fast-ap', parseSpec(fastApOptionsSchema, options, 'loss'));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { size, masks } = batch;
    const edges = this.options.numBins + 1;
    const delta = HISTOGRAM_MAX / this.options.numBins;
    const positiveCounts = new Float32Array(size);
    for (let k = 0; k < size * size; k++) positiveCounts[Math.floor(k / size)]! += masks.positive[k]!;
    const anchors = positiveCounts.reduce((n, c) => n + (c > 0 ? 1 : 0), 0);
    if (anchors === 0) return zeroLoss(size);
    const centres = tf.tensor3d(Float32Array.from({ length: edges }, (_, b) => b * delta), [edges, 1, 1]);
    // [edges, B, B]: every pair's kernel weight in every bin.
    const pulses = tf.relu(tf.sub(1, tf.div(tf.abs(tf.sub(tf.expandDims(batch.distances('squared-euclidean'), 0), centres)), delta)));
    const histogram = (mask: Uint8Array): tf.Tensor2D => tf.transpose(tf.sum(tf.mul(pulses, tf.tensor2d(Float32Array.from(mask), [size, size])), 2)) as tf.Tensor2D;
    const positiveHistogram = histogram(masks.positive);
    const allHistogram = tf.add(positiveHistogram, histogram(masks.negative)) as tf.Tensor2D;
    // Cumulative sums over the bins: [B, edges] x upper-triangular ones [edges, edges].
    const upper = tf.tensor2d(Float32Array.from({ length: edges * edges }, (_, k) => (Math.floor(k / edges) <= k % edges ? 1 : 0)), [edges, edges]);
    const products = tf.mul(positiveHistogram, tf.matMul(positiveHistogram, upper));
    const totals = tf.matMul(allHistogram, upper);
    // The terms PML keeps (h⁺H⁺ > 0 and H > 0), decided on the values; the others' denominators set to 1.
    const [productValues, totalValues] = [products.dataSync(), totals.dataSync()];
    const kept = Float32Array.from(productValues, (p, k) => (p > 0 && totalValues[k]! > 0 ? 1 : 0));
    const keptMask = tf.tensor2d(kept, [size, edges]);
    const safeTotals = tf.where(tf.cast(keptMask, 'bool'), totals, tf.onesLike(totals));
    const perAnchor = tf.sum(tf.mul(tf.div(products, safeTotals), keptMask), 1);
    const rowWeights = tf.tensor1d(positiveCounts.map((c) => (c > 0 ? 1 / c : 0)));
    const withPositive = tf.tensor1d(positiveCounts.map((c) => (c > 0 ? 1 : 0)));
    const losses = tf.mul(tf.sub(1, tf.mul(perAnchor, rowWeights)), withPositive);
    return { loss: tf.div(tf.sum(losses), anchors) as tf.Scalar, validCount: anchors, totalCount: size };
  }
}

/** Registry entry: `fast-ap`. */
export const FAST_AP_LOSS = defineLoss('fast-ap', fastApOptionsSchema, (options) => new FastApLoss(options));
