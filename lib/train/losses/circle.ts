/**
 * @file Circle loss, pair form (Sun, Cheng, Zhang, Zhang, Zheng, Wang and Wei, "Circle Loss: A Unified
 * Perspective of Pair Similarity Optimization", CVPR 2020, Eq. 6), as pytorch-metric-learning's
 * `CircleLoss`: per anchor i, over its positives s_p and negatives s_n (cosine similarities),
 *
 *     ℓ_i = softplus( logΣ_p e^{−γ α_p (s_p − Δ_p)} + logΣ_n e^{γ α_n (s_n − Δ_n)} )
 *     α_p = [1 + m − s_p]_+ ,  α_n = [s_n + m]_+   (weights, no gradient),   Δ_p = 1 − m,  Δ_n = m
 *
 * averaged over the anchors whose ℓ_i > 0 (PML's AvgNonZeroReducer); an anchor without a positive or
 * without a negative gives 0. Options (PML's names and defaults): `m` = 0.4 (relaxation), `gamma` γ =
 * 80 (scale), the paper's values for fine-grained retrieval (face recognition: m 0.25, γ 256); `miner`
 * (default null: every pair; mining/pair-miner.ts) restricts the pairs.
 * `validCount` counts the anchors with ℓ_i > 0, `totalCount` the batch.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { parseSpec } from '../../util/parse-spec.js';
import { maskTensor } from '../similarity.js';
import { BaseMetricLoss } from './base-loss.js';
import { defineLoss } from './loss-entry.js';
import { crossBatchMemorySchema, withCrossBatchMemory } from './cross-batch-memory.js';
import { pairMinerSchema } from '../mining/pair-miner.js';
import type { LossBatch } from './loss-batch.js';
import { maskedLogSumExp } from './masked-ops.js';
import type { LossOutput } from './metric-loss.js';
import { averageNonZero, zeroLoss } from './reducers.js';

/** Options of `circle`. */
export const circleOptionsSchema = z.strictObject({
  /** m, the relaxation margin (0.4). */
  m: z.number().default(0.4),
  /** γ, the scale (80). */
  gamma: z.number().positive().default(80),
  /** The pairs: every pair (null, default) or a miner's (mining/pair-miner.ts). */
  miner: pairMinerSchema,
  /** A cross-batch memory the batch is compared with (null, default: none; cross-batch-memory.ts). */
  memory: crossBatchMemorySchema,
});

/** Options as written in a config. */
export type CircleOptions = z.input<typeof circleOptionsSchema>;

/** Circle loss (see the file comment). */
export class CircleLoss extends BaseMetricLoss<z.output<typeof circleOptionsSchema>> {
  constructor(options: CircleOptions = {}) {
    super('circle', parseSpec(circleOptionsSchema, options, 'loss'));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { size, similarities, values } = batch;
    const { m, gamma } = this.options;
    const masks = batch.minedMasks(this.options.miner);
    const columns = masks.columns;
    // Anchors with a positive and a negative; the others give 0.
    const scored = new Float32Array(size);
    for (let i = 0; i < size; i++) {
      const row = (mask: Uint8Array): boolean => mask.subarray(i * columns, (i + 1) * columns).includes(1);
      if (row(masks.positive) && row(masks.negative)) scored[i] = 1;
    }
    if (!scored.includes(1)) return zeroLoss(size);
    // The weights α from the detached similarities, 0 outside their kind of pair.
    const weights = new Float32Array(size * columns);
    for (let k = 0; k < size * columns; k++) {
      if (masks.positive[k] === 1) weights[k] = -gamma * Math.max(0, 1 + m - values[k]!);
      else if (masks.negative[k] === 1) weights[k] = gamma * Math.max(0, values[k]! + m);
    }
    const offsets = Float32Array.from(masks.positive, (p) => (p === 1 ? 1 - m : m));
    const logits = tf.mul(tf.tensor2d(weights, [size, columns]), tf.sub(similarities, tf.tensor2d(offsets, [size, columns]))) as tf.Tensor2D;
    const positiveTerm = maskedLogSumExp(logits, maskTensor(masks.positive, size, columns), false);
    const negativeTerm = maskedLogSumExp(logits, maskTensor(masks.negative, size, columns), false);
    const losses = tf.mul(tf.softplus(tf.add(positiveTerm, negativeTerm)), tf.tensor1d(scored));
    return averageNonZero(losses, size);
  }
}

/** Registry entry: `circle`. */
export const CIRCLE_LOSS = defineLoss('circle', circleOptionsSchema, (options) => withCrossBatchMemory(new CircleLoss(options)));
