/**
 * @file Normalized Softmax (Zhai and Wu, "Classification is a Strong Baseline for Deep Metric
 * Learning", BMVC 2019; NormFace, Wang et al. 2017) as pytorch-metric-learning's
 * `NormalizedSoftmaxLoss`: a softmax classifier whose class weights w_c are L2-normalised, on
 * L2-normalised embeddings, with temperature T:
 *
 *     ℓ = −(1/B) Σ_i log( e^{cos(x_i, w_{y_i}) / T} / Σ_c e^{cos(x_i, w_c) / T} )
 *
 * Options (PML's names and defaults): `numClasses` (required), `embeddingSize` (default the model's),
 * `temperature` T = 0.05 (the paper's best); the weights are drawn N(0, 1) from `seed` (PML's default
 * init). The paper trains the classifier at the network's rate; its recipe's layer norm and class
 * balanced sampling are not the loss's. Every embedding takes part: `validCount` = `totalCount` = B.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { parseSpec } from '../../util/parse-spec.js';
import { classTableFields } from './class-table.js';
import { ClassTableLoss } from './class-table-loss.js';
import { defineLoss, type LossContext } from './loss-entry.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';

/** Options of `normalized-softmax`. */
export const normalizedSoftmaxOptionsSchema = z.strictObject({
  ...classTableFields,
  /** T, the temperature (0.05). */
  temperature: z.number().positive().default(0.05),
});

/** Options as written in a config. */
export type NormalizedSoftmaxOptions = z.input<typeof normalizedSoftmaxOptionsSchema>;

/** Normalized Softmax (see the file comment). */
export class NormalizedSoftmaxLoss extends ClassTableLoss<z.output<typeof normalizedSoftmaxOptionsSchema>> {
  constructor(options: NormalizedSoftmaxOptions, context: LossContext = {}) {
    super('normalized-softmax', parseSpec(normalizedSoftmaxOptionsSchema, options, 'loss'), context, 1, 'normal');
  }

  protected override tableLossOf({ embeddings, labels }: LossBatch): LossOutput {
    return this.classifierOutput(tf.div(this.table.cosines(embeddings), this.options.temperature) as tf.Tensor2D, this.table.oneHot(labels));
  }
}

/** Registry entry: `normalized-softmax`. */
export const NORMALIZED_SOFTMAX_LOSS = defineLoss('normalized-softmax', normalizedSoftmaxOptionsSchema, (options, context) => new NormalizedSoftmaxLoss(options, context));
