/**
 * @file Triplet margin loss (Weinberger & Saul 2009; Schroff et al., "FaceNet", CVPR 2015) as
 * pytorch-metric-learning's `TripletMarginLoss` (docs/methods.md section 6):
 *
 *     l(a, p, n) = [d_ap − d_an + μ]_+ ,   loss = Σ l / |{l > 0}|   (AvgNonZeroReducer; 0 if none)
 *
 * over all valid triplets (`miner: 'none'`, the default) or the triplets of the triplet-margin miner
 * (`all`: `d_an − d_ap ≤ μ_m`, `hard`: `≤ 0`, `semihard`: `0 < d_an − d_ap ≤ μ_m`; mining on detached
 * distances, see mining/triplet-margin-miner.ts), or PML's `BatchHardMiner` (`batch-hard`: each
 * anchor's farthest positive and nearest negative, mining/batch-hard-miner.ts).
 *
 * Options: `margin` μ = 0.05 (PML's default); `distance` (docs/methods.md Q17): `euclidean` (default,
 * PML: non-squared L2 on normalised embeddings) or `squared-euclidean` (Roth et al.'s variant,
 * `d² = 2 − 2S`); `miner`; `minerMargin` μ_m (default `null`: the loss margin; PML's
 * `TripletMarginMiner` defaults to 0.2 when built on its own). The miner uses the loss's distance.
 * `validCount` counts the triplets with a non-zero loss, `totalCount` the triplets considered.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { allTriplets, groupTripletsByAnchor, mineTripletsByMargin } from '../mining/triplet-margin-miner.js';
import { mineBatchHardTriplets } from '../mining/batch-hard-miner.js';
import { BaseMetricLoss } from './base-loss.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';
import { parseSpec } from '../../util/parse-spec.js';
import { averageNonZero, zeroLoss } from './reducers.js';
import { tripletTensors } from './triplet-slots.js';
import { defineLoss } from './loss-entry.js';
import { crossBatchMemorySchema, withCrossBatchMemory } from './cross-batch-memory.js';

/** Options of the triplet margin loss. */
export const tripletMarginOptionsSchema = z.strictObject({
  /** μ, PML's default 0.05. */
  margin: z.number().default(0.05),
  /** Non-squared (default, PML) or squared Euclidean distance on the unit sphere. */
  distance: z.enum(['euclidean', 'squared-euclidean']).default('euclidean'),
  /** `none` (all valid triplets, default), the triplet-margin miner's `all`, `hard`, `semihard`, or `batch-hard`. */
  miner: z.enum(['none', 'all', 'hard', 'semihard', 'batch-hard']).default('none'),
  /** The miner's margin; `null` (default) uses `margin`. */
  minerMargin: z.number().nullable().default(null),
  /** A cross-batch memory the batch is compared with (null, default: none; cross-batch-memory.ts). */
  memory: crossBatchMemorySchema,
});

/** Options as written in a config (every field optional). */
export type TripletMarginOptions = z.input<typeof tripletMarginOptionsSchema>;

/** Triplet margin loss with the AvgNonZero reduction (see the file comment). */
export class TripletMarginLoss extends BaseMetricLoss<z.output<typeof tripletMarginOptionsSchema>> {
  constructor(options: TripletMarginOptions = {}) {
    super('triplet-margin', parseSpec(tripletMarginOptionsSchema, options, 'loss'));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { size, masks } = batch;
    const { margin, distance, miner, minerMargin } = this.options;
    const distances = batch.distances(distance);
    const triplets =
      miner === 'none'
        ? allTriplets(masks)
        : miner === 'batch-hard'
          ? mineBatchHardTriplets(distances.dataSync(), masks)
          : mineTripletsByMargin(distances.dataSync(), masks, miner, minerMargin ?? margin);
    const count = triplets.anchors.length;
    if (count === 0) return zeroLoss(0);
    // [B, slots, B]: every (a, p, n) with the entries outside the triplet set masked to 0.
    const t = tripletTensors(distances, groupTripletsByAnchor(triplets, size, masks.columns));
    const losses = tf.mul(tf.relu(tf.add(tf.sub(tf.expandDims(t.positive, 2), t.negative), margin)), t.tripletMask);
    return averageNonZero(losses, count);
  }
}

/** Registry entry: `triplet-margin`. */
export const TRIPLET_MARGIN_LOSS = defineLoss('triplet-margin', tripletMarginOptionsSchema, (options) => withCrossBatchMemory(new TripletMarginLoss(options)));
