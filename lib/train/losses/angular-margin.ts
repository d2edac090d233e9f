/**
 * @file The additive-margin softmax losses, as pytorch-metric-learning's `ArcFaceLoss`, `CosFaceLoss`
 * and `SubCenterArcFaceLoss` (all on its `LargeMarginSoftmaxLoss`): a softmax classifier over the cosine
 * similarities of L2-normalised embeddings and L2-normalised class weights, scaled by s, with a margin
 * on the true class's cosine c_y = cos θ_y:
 *
 *     ℓ = −(1/B) Σ_i log( e^{s φ(c_{i,y_i})} / (e^{s φ(c_{i,y_i})} + Σ_{c ≠ y_i} e^{s c_{i,c}}) )
 *
 * - `arcface` (Deng, Guo, Xue and Zafeiriou, "ArcFace: Additive Angular Margin Loss for Deep Face
 *   Recognition", CVPR 2019): φ(c) = cos(θ + m), θ = arccos(clamp(c, −1 + 1e-7, 1 − 1e-7)), computed
 *   as c cos m − √(1 − c²) sin m on the clamped c (no arccos kernel needed; the same function);
 *   `margin` m in degrees, 28.6 (= 0.5 rad, the paper's), `scale` s = 64. Like PML, no "easy margin"
 *   or threshold variant of the authors' code: φ is cos(θ + m) for every θ.
 * - `cosface` (Wang et al., "CosFace: Large Margin Cosine Loss for Deep Face Recognition", CVPR
 *   2018): φ(c) = c − m, `margin` m = 0.35, `scale` s = 64 (the paper's).
 * - `subcenter-arcface` (Deng, Guo, Liu, Xue, Kotsia and Zafeiriou, "Sub-center ArcFace", ECCV 2020):
 *   `subCenters` K = 3 weight vectors per class, c_{i,c} = max_k cos(x_i, w_{c,k}), then ArcFace;
 *   `margin` 28.6 degrees, `scale` 64. (PML's `get_outliers`, the paper's second stage that drops
 *   samples far from their dominant sub-centre, is not part of the loss.)
 *
 * Options besides: `numClasses` (required), `embeddingSize` (default the model's); the weights are
 * drawn N(0, 1) from `seed` (PML's default init). Every embedding takes part: `validCount` =
 * `totalCount` = B.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { parseSpec } from '../../util/parse-spec.js';
import { classTableFields } from './class-table.js';
import { ClassTableLoss } from './class-table-loss.js';
import { defineLoss, type LossContext } from './loss-entry.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';

/** arccos's argument is clamped to [−1 + ε, 1 − ε] (PML's ε). */
const ARCCOS_CLAMP = 1e-7;

/** Options of `arcface`. */
export const arcFaceOptionsSchema = z.strictObject({
  ...classTableFields,
  /** m, the additive angular margin in degrees (28.6 = 0.5 rad). */
  margin: z.number().min(0).max(180).default(28.6),
  /** s, the scale of the logits (64). */
  scale: z.number().positive().default(64),
});

/** Options of `cosface`. */
export const cosFaceOptionsSchema = z.strictObject({
  ...classTableFields,
  /** m, the additive cosine margin (0.35). */
  margin: z.number().min(0).default(0.35),
  /** s, the scale of the logits (64). */
  scale: z.number().positive().default(64),
});

/** Options of `subcenter-arcface`. */
export const subCenterArcFaceOptionsSchema = arcFaceOptionsSchema.extend({
  /** K, weight vectors per class (3). */
  subCenters: z.int().min(1).default(3),
});

type AngularMarginOptions = z.output<typeof subCenterArcFaceOptionsSchema> | z.output<typeof cosFaceOptionsSchema>;

/** ArcFace, CosFace or Sub-center ArcFace (see the file comment). */
export class AngularMarginLoss extends ClassTableLoss<AngularMarginOptions> {
  constructor(name: 'arcface' | 'cosface' | 'subcenter-arcface', options: AngularMarginOptions, context: LossContext) {
    super(name, options, context, 'subCenters' in options ? options.subCenters : 1, 'normal');
  }

  protected override tableLossOf({ embeddings, labels, size }: LossBatch): LossOutput {
    const { margin, scale } = this.options;
    const { numClasses, rowsPerClass } = this.table;
    let cosines = this.table.cosines(embeddings);
    // Sub-centres: each class's best-matching weight vector.
    if (rowsPerClass > 1) cosines = tf.max(tf.reshape(cosines, [size, numClasses, rowsPerClass]), 2) as tf.Tensor2D;
    const oneHot = this.table.oneHot(labels);
    const target = tf.sum(tf.mul(cosines, oneHot), 1, true);
    let withMargin: tf.Tensor;
    if (this.name === 'cosface') {
      withMargin = tf.sub(target, margin);
    } else {
      const radians = (margin * Math.PI) / 180;
      const c = tf.clipByValue(target, -1 + ARCCOS_CLAMP, 1 - ARCCOS_CLAMP);
      withMargin = tf.sub(tf.mul(c, Math.cos(radians)), tf.mul(tf.sqrt(tf.sub(1, tf.square(c))), Math.sin(radians)));
    }
    return this.classifierOutput(tf.mul(tf.add(cosines, tf.mul(oneHot, tf.sub(withMargin, target))), scale) as tf.Tensor2D, oneHot);
  }
}

/** Registry entries: `arcface`, `cosface`, `subcenter-arcface`. */
export const ANGULAR_MARGIN_LOSSES = [
  defineLoss('arcface', arcFaceOptionsSchema, (options, context = {}) => new AngularMarginLoss('arcface', parseSpec(arcFaceOptionsSchema, options, 'loss'), context)),
  defineLoss('cosface', cosFaceOptionsSchema, (options, context = {}) => new AngularMarginLoss('cosface', parseSpec(cosFaceOptionsSchema, options, 'loss'), context)),
  defineLoss('subcenter-arcface', subCenterArcFaceOptionsSchema, (options, context = {}) => new AngularMarginLoss('subcenter-arcface', parseSpec(subCenterArcFaceOptionsSchema, options, 'loss'), context)),
] as const;
