/**
 * @file Contrastive loss (Hadsell, Chopra & LeCun, CVPR 2006) as pytorch-metric-learning's
 * `ContrastiveLoss` (defaults `pos_margin = 0`, `neg_margin = 1`, non-squared Euclidean distance on
 * normalised embeddings, AvgNonZeroReducer applied to each part and the parts summed):
 *
 *     l⁺(a, p) = [d_ap − m⁺]_+ ,  l⁻(a, n) = [m⁻ − d_an]_+
 *     loss = Σ l⁺ / |{l⁺ > 0}| + Σ l⁻ / |{l⁻ > 0}|      (a part with no non-zero term is 0)
 *
 * over every ordered positive and negative pair of the batch, or the pairs of `miner` (one of PML's
 * miners, mining/pair-miner.ts; default null: every pair). Options: `posMargin` m⁺ = 0, `negMargin`
 * m⁻ = 1, `miner`. `validCount` counts the pairs with a non-zero loss, `totalCount` all pairs (mined).
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { BaseMetricLoss } from './base-loss.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';
import { parseSpec } from '../../util/parse-spec.js';
import { sumAndNonZeroCount, zeroLoss } from './reducers.js';
import { defineLoss } from './loss-entry.js';
import { crossBatchMemorySchema, withCrossBatchMemory } from './cross-batch-memory.js';
import { pairMinerSchema } from '../mining/pair-miner.js';

/** Options of the contrastive loss. */
export const contrastiveOptionsSchema = z.strictObject({
  /** m⁺: positive pairs farther than this are pulled in (PML default 0). */
  posMargin: z.number().default(0),
  /** m⁻: negative pairs closer than this are pushed out (PML default 1). */
  negMargin: z.number().default(1),
  /** The pairs: every pair (null, default) or a miner's (mining/pair-miner.ts). */
  miner: pairMinerSchema,
  /** A cross-batch memory the batch is compared with (null, default: none; cross-batch-memory.ts). */
  memory: crossBatchMemorySchema,
});

/** Options as written in a config (every field optional). */
export type ContrastiveOptions = z.input<typeof contrastiveOptionsSchema>;

/** PML's contrastive loss (see the file comment). */
export class ContrastiveLoss extends BaseMetricLoss<z.output<typeof contrastiveOptionsSchema>> {
  constructor(options: ContrastiveOptions = {}) {
    super('contrastive', parseSpec(contrastiveOptionsSchema, options, 'loss'));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { size } = batch;
    const { posMargin, negMargin } = this.options;
    const masks = batch.minedMasks(this.options.miner);
    const columns = masks.columns;
    let totalCount = 0;
    for (let k = 0; k < size * columns; k++) totalCount += masks.positive[k]! + masks.negative[k]!;
    if (totalCount === 0) return zeroLoss(0);
    const distances = batch.distances('euclidean');
    const parts: tf.Scalar[] = [];
    let validCount = 0;
    for (const [mask, sign] of [[masks.positive, 1], [masks.negative, -1]] as const) {
      const hinge = tf.relu(sign === 1 ? tf.sub(distances, posMargin) : tf.sub(negMargin, distances));
      // Every ordered pair of the kind, as a [B, C] matrix with the other entries 0.
      const losses = tf.mul(hinge, tf.tensor2d(Float32Array.from(mask), [size, columns]));
      const { sum, nonZero } = sumAndNonZeroCount(losses);
      if (nonZero === 0) continue;
      parts.push(tf.div(sum, nonZero));
      validCount += nonZero;
    }
    if (validCount === 0) return zeroLoss(totalCount);
    return { loss: tf.addN(parts), validCount, totalCount };
  }
}

/** Registry entry: `contrastive`. */
export const CONTRASTIVE_LOSS = defineLoss('contrastive', contrastiveOptionsSchema, (options) => withCrossBatchMemory(new ContrastiveLoss(options)));
