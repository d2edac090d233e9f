/**
 * @file Lifted structured loss (Oh Song et al., "Deep Metric Learning via Lifted Structured Feature
 * Embedding", CVPR 2016) in pytorch-metric-learning's `LiftedStructureLoss` form (METHODS.md
 * section 6), with non-squared Euclidean distances on normalised embeddings. For every ordered
 * positive pair (a, p) (both orders):
 *
 *     J_ap = [ log Σ_{n ∈ N(a)} e^{m⁻ − d_an} + Σ_{n ∈ N(p)} e^{m⁻ − d_pn} ) + d_ap − m⁺ ]_+
 *     loss = mean over the ordered positive pairs of J_ap² / 2
 *
 * which equals Song et al.'s `1/(2|P|) Σ_{unordered} J²`. Options: `negMargin` m⁻ = 1, `posMargin`
 * m⁺ = 0. A batch without positive or without negative pairs gives 0. `validCount` and `totalCount`
 * count the ordered positive pairs.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { allPairs } from '../mining/pairs.js';
import { checkBatch, cosineSimilarityMatrix, distancesFromSimilarities, gatherEntries, gatherMaskRows, labelPairMasks } from '../similarity.js';
import { maskedLogSumExp } from './masked-ops.js';
import type { LossOutput, MetricLoss } from './metric-loss.js';
import { parseLossOptions } from './options.js';
import { zeroLoss } from './reducers.js';

/** Options of the lifted structure loss. */
export const liftedStructureOptionsSchema = z.strictObject({
  /** m⁻ (PML default 1). */
  negMargin: z.number().default(1),
  /** m⁺ (PML default 0). */
  posMargin: z.number().default(0),
});

/** Options as written in a config (every field optional). */
export type LiftedStructureOptions = z.input<typeof liftedStructureOptionsSchema>;

/** PML's lifted structure loss (see the file comment). */
export class LiftedStructureLoss implements MetricLoss {
  readonly name = 'lifted-structure';
  readonly config: Readonly<Record<string, unknown>>;
  readonly trainableVariables: readonly tf.Variable[] = [];
  private readonly options: z.output<typeof liftedStructureOptionsSchema>;

  constructor(options: LiftedStructureOptions = {}) {
    this.options = parseLossOptions(liftedStructureOptionsSchema, options, 'loss');
    this.config = { name: this.name, ...this.options };
  }

  compute(embeddings: tf.Tensor2D, labels: Int32Array): LossOutput {
    const size = checkBatch(embeddings, labels);
    const masks = labelPairMasks(labels);
    const { negMargin, posMargin } = this.options;
    const pairs = allPairs(masks);
    const { anchors, others } = pairs.positive;
    // Within one class N(a) = N(p), so either every positive pair has negatives or none has.
    if (anchors.length === 0 || pairs.negative.anchors.length === 0) return zeroLoss(anchors.length);
    const distances = distancesFromSimilarities(cosineSimilarityMatrix(embeddings), 'euclidean');
    const negativeLogits = tf.concat([tf.gather(distances, anchors), tf.gather(distances, others)], 1);
    const mask = tf.concat([gatherMaskRows(masks.negative, size, anchors), gatherMaskRows(masks.negative, size, others)], 1);
    const logSum = maskedLogSumExp(tf.sub(negMargin, negativeLogits) as tf.Tensor2D, mask, false);
    const j = tf.relu(tf.add(logSum, tf.sub(gatherEntries(distances, anchors, others), posMargin)));
    return { loss: tf.mean(tf.div(tf.square(j), 2)), validCount: anchors.length, totalCount: anchors.length };
  }
}
