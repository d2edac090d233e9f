/**
 * @file Lifted structured loss (Oh Song et al., "Deep Metric Learning via Lifted Structured Feature
 * Embedding", CVPR 2016) in pytorch-metric-learning's `LiftedStructureLoss` form (docs/methods.md
 * section 6), with non-squared Euclidean distances on normalised embeddings. For every ordered
 * positive pair (a, p) (both orders):
 *
 *     J_ap = [ log( Σ_{n ∈ N(a)} e^{m⁻ − d_an} + Σ_{n ∈ N(p)} e^{m⁻ − d_pn} ) + d_ap − m⁺ ]_+
 *     loss = mean over the ordered positive pairs of J_ap² / 2
 *
 * which equals Song et al.'s `1/(2|P|) Σ_{unordered} J²`. Computed densely: the per-anchor sums
 * `L_i = log Σ_{n ∈ N(i)} e^{m⁻ − d_in}` once, then `log(e^{L_a} + e^{L_p})` per pair. Options: `negMargin` m⁻ = 1, `posMargin`
 * m⁺ = 0. A batch without positive or without negative pairs gives 0. `validCount` and `totalCount`
 * count the ordered positive pairs.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { maskTensor } from '../similarity.js';
import { maskedLogSumExp } from './masked-ops.js';
import { BaseMetricLoss } from './base-loss.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';
import { parseSpec } from '../../util/parse-spec.js';
import { zeroLoss } from './reducers.js';
import { defineLoss } from './loss-entry.js';

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
export class LiftedStructureLoss extends BaseMetricLoss<z.output<typeof liftedStructureOptionsSchema>> {
  constructor(options: LiftedStructureOptions = {}) {
    super('lifted-structure', parseSpec(liftedStructureOptionsSchema, options, 'loss'));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { size, masks } = batch;
    const { negMargin, posMargin } = this.options;
    let pairCount = 0;
    let hasNegative = false;
    for (let k = 0; k < size * size; k++) {
      pairCount += masks.positive[k]!;
      hasNegative ||= masks.negative[k] === 1;
    }
    // Within one class N(a) = N(p), so either every positive pair has negatives or none has.
    if (pairCount === 0 || !hasNegative) return zeroLoss(pairCount);
    const distances = batch.distances('euclidean');
    // L_i = log Σ_{n ∈ N(i)} e^{m⁻ − d_in}; the pair's term log(e^{L_a} + e^{L_p}), stably.
    const perAnchor = maskedLogSumExp(tf.sub(negMargin, distances), maskTensor(masks.negative, size), false);
    // The shift max(L_a, L_p) is a constant: the value does not depend on it, so neither does the gradient.
    const anchorTerms = perAnchor.dataSync();
    const shift = new Float32Array(size * size);
    for (let k = 0; k < size * size; k++) shift[k] = Math.max(anchorTerms[Math.floor(k / size)]!, anchorTerms[k % size]!);
    const la = tf.expandDims(perAnchor, 1);
    const lp = tf.expandDims(perAnchor, 0);
    const top = tf.tensor2d(shift, [size, size]);
    const pairTerm = tf.add(top, tf.log(tf.add(tf.exp(tf.sub(la, top)), tf.exp(tf.sub(lp, top)))));
    const j = tf.relu(tf.add(pairTerm, tf.sub(distances, posMargin)));
    const perPair = tf.mul(tf.div(tf.square(j), 2), tf.tensor2d(Float32Array.from(masks.positive), [size, size]));
    return { loss: tf.div(tf.sum(perPair), pairCount), validCount: pairCount, totalCount: pairCount };
  }
}

/** Registry entry: `lifted-structure`. */
export const LIFTED_STRUCTURE_LOSS = defineLoss('lifted-structure', liftedStructureOptionsSchema, (options) => new LiftedStructureLoss(options));
