/**
 * @file Supervised contrastive loss (Khosla, Teterwak, Wang, Sarna, Tian, Isola, Maschinot, Liu and
 * Krishnan, "Supervised Contrastive Learning", NeurIPS 2020, L^sup_out) as pytorch-metric-learning's
 * `SupConLoss`: per anchor i with positives P(i) and every other item A(i) (positives and negatives),
 * cosine similarities S and temperature τ,
 *
 *     ℓ_i = −(1/|P(i)|) Σ_{p ∈ P(i)} log( e^{S_ip/τ} / Σ_{a ∈ A(i)} e^{S_ia/τ} )
 *
 * averaged over the anchors whose ℓ_i > 0 (PML's AvgNonZeroReducer; an anchor without a positive gives
 * 0). A batch without any positive pair or without any negative pair gives 0, as PML. Options:
 * `temperature` τ = 0.1 (PML's default; the paper's 0.1 too); `miner` (default null: every pair;
 * mining/pair-miner.ts) restricts P(i) and A(i) to the mined pairs. NT-Xent (SimCLR's loss, PML's
 * `NTXentLoss`), its one-positive-per-term form, is `batch-all` (batch-all.ts). `validCount` counts
 * the anchors with ℓ_i > 0, `totalCount` the batch.
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

/** Options of `supcon`. */
export const supConOptionsSchema = z.strictObject({
  /** τ, the temperature (0.1). */
  temperature: z.number().positive().default(0.1),
  /** The pairs: every pair (null, default) or a miner's (mining/pair-miner.ts). */
  miner: pairMinerSchema,
  /** A cross-batch memory the batch is compared with (null, default: none; cross-batch-memory.ts). */
  memory: crossBatchMemorySchema,
});

/** Options as written in a config. */
export type SupConOptions = z.input<typeof supConOptionsSchema>;

/** Supervised contrastive loss (see the file comment). */
export class SupConLoss extends BaseMetricLoss<z.output<typeof supConOptionsSchema>> {
  constructor(options: SupConOptions = {}) {
    super('supcon', parseSpec(supConOptionsSchema, options, 'loss'));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { size, similarities } = batch;
    const masks = batch.minedMasks(this.options.miner);
    const columns = masks.columns;
    if (!masks.positive.includes(1) || !masks.negative.includes(1)) return zeroLoss(size);
    const others = Uint8Array.from(masks.positive, (p, k) => p | masks.negative[k]!);
    const positiveCounts = new Float32Array(size);
    for (let k = 0; k < size * columns; k++) positiveCounts[Math.floor(k / columns)]! += masks.positive[k]!;
    const scaled = tf.div(similarities, this.options.temperature) as tf.Tensor2D;
    const logProbabilities = tf.sub(scaled, tf.expandDims(maskedLogSumExp(scaled, maskTensor(others, size, columns), false), 1));
    const positive = tf.tensor2d(Float32Array.from(masks.positive), [size, columns]);
    // Anchors without a positive: a sum of 0 over a count of 0, kept 0 (PML divides by the count + tiny).
    const means = tf.div(tf.sum(tf.mul(positive, logProbabilities), 1), tf.tensor1d(positiveCounts.map((c) => Math.max(c, 1))));
    return averageNonZero(tf.neg(means), size);
  }
}

/** Registry entry: `supcon`. */
export const SUPCON_LOSS = defineLoss('supcon', supConOptionsSchema, (options) => withCrossBatchMemory(new SupConLoss(options)));
