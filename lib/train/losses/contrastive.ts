/**
 * @file Contrastive loss (Hadsell, Chopra & LeCun, CVPR 2006) as pytorch-metric-learning's
 * `ContrastiveLoss` (defaults `pos_margin = 0`, `neg_margin = 1`, non-squared Euclidean distance on
 * normalised embeddings, AvgNonZeroReducer applied to each part and the parts summed):
 *
 *     l⁺(a, p) = [d_ap − m⁺]_+ ,  l⁻(a, n) = [m⁻ − d_an]_+
 *     loss = Σ l⁺ / |{l⁺ > 0}| + Σ l⁻ / |{l⁻ > 0}|      (a part with no non-zero term is 0)
 *
 * over every ordered positive and negative pair of the batch. Options: `posMargin` m⁺ = 0,
 * `negMargin` m⁻ = 1. `validCount` counts the pairs with a non-zero loss, `totalCount` all pairs.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { allPairs } from '../mining/pairs.js';
import { checkBatch, cosineSimilarityMatrix, distancesFromSimilarities, gatherEntries, labelPairMasks } from '../similarity.js';
import type { LossOutput, MetricLoss } from './metric-loss.js';
import { parseLossOptions } from './options.js';
import { sumAndNonZeroCount, zeroLoss } from './reducers.js';

/** Options of the contrastive loss. */
export const contrastiveOptionsSchema = z.strictObject({
  /** m⁺: positive pairs farther than this are pulled in (PML default 0). */
  posMargin: z.number().default(0),
  /** m⁻: negative pairs closer than this are pushed out (PML default 1). */
  negMargin: z.number().default(1),
});

/** Options as written in a config (every field optional). */
export type ContrastiveOptions = z.input<typeof contrastiveOptionsSchema>;

/** PML's contrastive loss (see the file comment). */
export class ContrastiveLoss implements MetricLoss {
  readonly name = 'contrastive';
  readonly config: Readonly<Record<string, unknown>>;
  readonly trainableVariables: readonly tf.Variable[] = [];
  private readonly options: z.output<typeof contrastiveOptionsSchema>;

  constructor(options: ContrastiveOptions = {}) {
    this.options = parseLossOptions(contrastiveOptionsSchema, options, 'loss');
    this.config = { name: this.name, ...this.options };
  }

  compute(embeddings: tf.Tensor2D, labels: Int32Array): LossOutput {
    checkBatch(embeddings, labels);
    const { posMargin, negMargin } = this.options;
    const pairs = allPairs(labelPairMasks(labels));
    const totalCount = pairs.positive.anchors.length + pairs.negative.anchors.length;
    if (totalCount === 0) return zeroLoss(0);
    const distances = distancesFromSimilarities(cosineSimilarityMatrix(embeddings), 'euclidean');
    const parts: tf.Scalar[] = [];
    let validCount = 0;
    for (const [list, sign] of [[pairs.positive, 1], [pairs.negative, -1]] as const) {
      if (list.anchors.length === 0) continue;
      const d = gatherEntries(distances, list.anchors, list.others);
      const losses = tf.relu(sign === 1 ? tf.sub(d, posMargin) : tf.sub(negMargin, d)) as tf.Tensor1D;
      const { sum, nonZero } = sumAndNonZeroCount(losses);
      if (nonZero === 0) continue;
      parts.push(tf.div(sum, nonZero));
      validCount += nonZero;
    }
    if (validCount === 0) return zeroLoss(totalCount);
    return { loss: tf.addN(parts), validCount, totalCount };
  }
}
