/**
 * @file Margin loss (Wu et al., "Sampling Matters in Deep Embedding Learning", ICCV 2017) as
 * pytorch-metric-learning's `MarginLoss` (docs/methods.md section 6), with non-squared Euclidean
 * distances on normalised embeddings (as the paper), over all valid triplets (a, p, n):
 *
 *     pos = [d_ap − β + m]_+ ,  neg = [β − d_an + m]_+
 *     loss = (Σ (pos + neg) + R) / (|{pos > 0}| + |{neg > 0}|)      (DivisorReducer)
 *
 * β is one scalar (`beta` = 1.2) or, with `numClasses`, one value per class (`β_{y_a}`, all
 * starting at `beta`). With `learnBeta` the β values are `trainableVariables`, optimised with the
 * model, and the regulariser is R = ν Σ_triplets β_{y_a} (per class; divided by the divisor as
 * above) or ν β (scalar; added after the division, as PML's "already reduced" term). Options:
 * `margin` m = 0.2, `beta` = 1.2, `learnBeta` = false, `numClasses` = null, `nu` ν = 0; a learnt β trains
 * as parameter-options.ts says (`learningRateScale` 1, `weightDecay` 0).
 *
 * Wu et al. pair this loss with distance-weighted sampling; that miner is a separate part, so the
 * default triplets are all valid ones, as PML's default. When no pair term is > 0 the loss is the
 * constant 0 (PML would still return ν β for a learnable scalar β). Labels must be class indices
 * in [0, numClasses) when β is per class. `validCount` is the divisor (the non-zero pair terms),
 * `totalCount` the number of pair terms (two per triplet).
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { allTriplets, groupTripletsByAnchor } from '../mining/triplet-margin-miner.js';
import { ClassBeta } from './class-beta.js';
import { BaseMetricLoss } from './base-loss.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';
import { parseSpec } from '../../util/parse-spec.js';
import { zeroLoss } from './reducers.js';
import { tripletTensors } from './triplet-slots.js';
import { defineLoss } from './loss-entry.js';
import { parameterTrainingFields } from './parameter-options.js';

/** Options of the margin loss. */
export const marginOptionsSchema = z.strictObject({
  /** m, the margin around the boundary β (0.2). */
  margin: z.number().default(0.2),
  /** β, the boundary between positive and negative distances, or its initial value (1.2). */
  beta: z.number().default(1.2),
  /** Whether β is learnt (a trainable variable). */
  learnBeta: z.boolean().default(false),
  /** Number of classes for a per-class β; `null` (default) for one scalar β. */
  numClasses: z.int().min(1).nullable().default(null),
  /** ν, the weight of the β regulariser (0; only used with `learnBeta`). */
  nu: z.number().min(0).default(0),
  ...parameterTrainingFields,
});

/** Options as written in a config (every field optional). */
export type MarginOptions = z.input<typeof marginOptionsSchema>;

/** The margin loss of Wu et al. with PML's DivisorReducer (see the file comment). */
export class MarginLoss extends BaseMetricLoss<z.output<typeof marginOptionsSchema>> {
  override readonly trainableVariables: readonly tf.Variable[];
  private readonly beta: ClassBeta;

  constructor(options: MarginOptions = {}) {
    super('margin', parseSpec(marginOptionsSchema, options, 'loss'));
    const { learnBeta, beta, numClasses } = this.options;
    this.beta = new ClassBeta(beta, learnBeta, numClasses);
    this.trainableVariables = this.beta.variables;
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { size, labels } = batch;
    const { margin, learnBeta, numClasses, nu } = this.options;
    this.beta.checkLabels(labels);
    const triplets = allTriplets(batch.masks);
    const count = triplets.anchors.length;
    if (count === 0) return zeroLoss(0);
    const distances = batch.distances('euclidean');
    // [B, slots, B] as in triplet-slots.ts; a slot's positive term repeats once per triplet of the slot.
    const t = tripletTensors(distances, groupTripletsByAnchor(triplets, size));
    // [B, 1]: the anchor's beta (one shared value broadcasts).
    const anchorBeta = this.beta.ofRows(labels);
    const repeats = tf.tensor2d(t.tripletsPerSlot, t.positive.shape);
    const positive = tf.mul(tf.relu(tf.add(tf.sub(t.positive, anchorBeta), margin)), repeats);
    const negative = tf.mul(tf.relu(tf.add(tf.sub(tf.expandDims(anchorBeta, 2), t.negative), margin)), t.tripletMask);
    let divisor = 0;
    positive.dataSync().forEach((value, slot) => {
      if (value > 0) divisor += t.tripletsPerSlot[slot]!;
    });
    for (const value of negative.dataSync()) if (value > 0) divisor++;
    if (divisor === 0) return zeroLoss(2 * count);
    let loss = tf.div(tf.add(tf.sum(positive), tf.sum(negative)), divisor);
    if (learnBeta && nu > 0) {
      loss =
        numClasses === null
          ? tf.add(loss, tf.mul(tf.sum(this.beta.values()), nu))
          : tf.add(loss, tf.div(tf.mul(tf.sum(tf.mul(anchorBeta, repeats)), nu), divisor));
    }
    return { loss: loss as tf.Scalar, validCount: divisor, totalCount: 2 * count };
  }
}

/** Registry entry: `margin`. */
export const MARGIN_LOSS = defineLoss('margin', marginOptionsSchema, (options) => new MarginLoss(options));
