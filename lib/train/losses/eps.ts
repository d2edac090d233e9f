/**
 * @file EPS, easy-positive sampling against class collapse (paper 004: Levi et al., "Reducing Class
 * Collapse in Metric Learning with Easy Positive Sampling", arXiv 2006.05162; docs/methods.md section 5):
 * every anchor a is paired with its closest same-class image in the batch,
 * `p_a = argmin_{t ∈ C_a, t ≠ a} ‖f_t − f_a‖` (= the easy positive ep(a); ties to the lowest index;
 * near-duplicates `S > duplicateThreshold` = 0.9999 skipped, as the easy-positive family, so that a
 * copy drawn by a with-replacement sampler is not its own positive; `null` keeps them), and the
 * triplet (a, p_a, n_a) or pair set of one of three losses:
 *
 * | name | negative(s) | loss |
 * |------|-------------|------|
 * | `eps-triplet` | semi-hard, sampled (mining/negative-sampling.ts) | `[D_ap − D_an + m]_+`, mean over the anchors' triplets |
 * | `eps-margin` | distance-weighted, sampled | `(Σ_a [d_ap − β_{y_a} + α]_+ + [β_{y_a} − d_an + α]_+) / #(non-zero terms) + ν Σ_a β_{y_a}` |
 * | `eps-ms` | multi-similarity mined | `(1/α) log(1 + e^{−α(S_ap − λ)}) + (1/β) log(1 + Σ_{n ∈ N̂(a)} e^{β(S_an − λ)})`, mean |
 *
 * - `eps-triplet` (Roth et al.'s triplet + semihard with the EPS positive): the negative is drawn
 *   uniformly among `d_ap < d_an < d_ap + margin` on non-squared distances (Roth's miner, with the loss
 *   margin), falling back to a uniform negative (`semiHardFallback: 'random'`, Roth) or dropping the
 *   anchor (`'drop'`); the loss is on squared distances `D = ‖f_a − f_b‖² = 2 − 2S` (`distance`, docs/methods.md
 *   Q17: `squared-euclidean` default as paper 004 and Roth, or `euclidean`); m = `margin` 0.2.
 * - `eps-margin` (Wu et al.'s margin loss with distance-weighted sampling): d non-squared
 *   (`sqrt(max(2 − 2S, 1e-12))`), α = `margin` 0.2, β = `beta` 1.2 learnt (`learnBeta` true) per class
 *   when `numClasses` is set (labels must then be class indices in [0, numClasses)), else one learnt
 *   scalar; ν = `nu` 0 (Roth); distance-weighted sampling with `cutoff` 0.5 and `upperCutoff` null
 *   (Roth; 1.4 for Wu et al. / PML). When no term is > 0 the loss is the constant 0.
 * - `eps-ms` (MS with the positive replaced by the easy positive, MS's negative mining kept):
 *   α = 2, β = 50, λ = `base` 1 (paper 004 "as in [52]"), ε = `epsilon` 0.1; negative n is kept when
 *   `S_an + ε > threshold`, docs/methods.md Q13 `negativeThreshold`: `hardest-positive` (default, the MS
 *   miner unchanged: the anchor's least similar positive) or `easy-positive` (S_ap of p_a). Anchors
 *   without a kept negative are skipped (as Roth's MS).
 *
 * Randomness (eps-triplet, eps-margin): the loss owns a generator seeded with `seed` (default 0) that
 * advances with every `compute`, so the same seed and sequence of batches draw the same negatives. Its
 * state is saved in each checkpoint (`generator`), so a resumed run draws what an uninterrupted one would.
 *
 * Anchors without a positive (a class alone in the batch) or without a negative are dropped.
 * `validCount`: kept anchors (eps-margin: non-zero terms), `totalCount`: B (eps-margin: 2 per kept
 * anchor). docs/methods.md Q14 (samples per class) is the sampler's `groupSize`: EPS needs more than 2.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { Rng } from '../../util/rng.js';
import { DEFAULT_DUPLICATE_THRESHOLD, selectPositives } from '../mining/anchor-selection.js';
import { sampleDistanceWeightedNegatives, sampleSemiHardNegatives } from '../mining/negative-sampling.js';
import { maskRows, pickColumns, selectRows } from '../similarity.js';
import { ClassBeta } from './class-beta.js';
import { marginOptionsSchema } from './margin.js';
import { maskedLogSumExp } from './masked-ops.js';
import { BaseMetricLoss } from './base-loss.js';
import { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';
import { parseSpec } from '../../util/parse-spec.js';
import { zeroLoss } from './reducers.js';
import { defineLoss } from './loss-entry.js';

const duplicateThreshold = z.number().nullable().default(DEFAULT_DUPLICATE_THRESHOLD);
const seed = z.int().min(0).max(0xffffffff).default(0);

/** Options of `eps-triplet`. */
export const epsTripletOptionsSchema = z.strictObject({
  margin: z.number().default(0.2),
  distance: z.enum(['squared-euclidean', 'euclidean']).default('squared-euclidean'),
  semiHardFallback: z.enum(['random', 'drop']).default('random'),
  duplicateThreshold,
  seed,
});

/** Options of `eps-margin`: the margin loss's, with β learnt by default, and the sampler's. */
export const epsMarginOptionsSchema = marginOptionsSchema.extend({
  learnBeta: z.boolean().default(true),
  cutoff: z.number().positive().default(0.5),
  upperCutoff: z.number().positive().nullable().default(null),
  duplicateThreshold,
  seed,
});

/** Options of `eps-ms`. */
export const epsMsOptionsSchema = z.strictObject({
  alpha: z.number().positive().default(2),
  beta: z.number().positive().default(50),
  base: z.number().default(1),
  epsilon: z.number().default(0.1),
  negativeThreshold: z.enum(['hardest-positive', 'easy-positive']).default('hardest-positive'),
  duplicateThreshold,
});

export type EpsTripletOptions = z.input<typeof epsTripletOptionsSchema>;
export type EpsMarginOptions = z.input<typeof epsMarginOptionsSchema>;
export type EpsMsOptions = z.input<typeof epsMsOptionsSchema>;

/** One triplet per kept anchor. */
export interface EpsTriplets {
  readonly anchors: Int32Array;
  readonly positives: Int32Array;
  readonly negatives: Int32Array;
}

/** The EPS positive of every anchor (its most similar same-class item), -1 for none: what every EPS loss starts from. */
function easyPositives(batch: LossBatch, threshold: number | null): Int32Array {
  return selectPositives(batch.values, batch.masks, { strategy: 'easy', duplicateThreshold: threshold }).index;
}

/** The kept triplets: anchors with both a positive and a negative. */
function keptTriplets(positives: Int32Array, negatives: Int32Array): EpsTriplets {
  const anchors = Int32Array.from([...positives.keys()].filter((a) => positives[a]! >= 0 && negatives[a]! >= 0));
  return { anchors, positives: Int32Array.from(anchors, (a) => positives[a]!), negatives: Int32Array.from(anchors, (a) => negatives[a]!) };
}

/** `d(a, p)` and `d(a, n)` [K] of the triplets from a live [B, B] distance matrix. */
function tripletDistances(distances: tf.Tensor2D, triplets: EpsTriplets): [tf.Tensor1D, tf.Tensor1D] {
  const rows = selectRows(distances, triplets.anchors);
  return [pickColumns(rows, triplets.positives), pickColumns(rows, triplets.negatives)];
}

/** EPS + triplet + semi-hard (see the file comment). */
export class EpsTripletLoss extends BaseMetricLoss<z.output<typeof epsTripletOptionsSchema>> {
  readonly generator: Rng;

  constructor(options: EpsTripletOptions = {}) {
    super('eps-triplet', parseSpec(epsTripletOptionsSchema, options, 'loss'));
    this.generator = new Rng(this.options.seed);
  }

  /** The triplets of a batch (draws from the loss's generator); same calling rules as `compute`. */
  triplets(embeddings: tf.Tensor2D, labels: Int32Array): EpsTriplets {
    return this.mine(new LossBatch(embeddings, labels));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const triplets = this.mine(batch);
    const count = triplets.anchors.length;
    if (count === 0) return zeroLoss(batch.size);
    const [dap, dan] = tripletDistances(batch.distances(this.options.distance), triplets);
    return { loss: tf.mean(tf.relu(tf.add(tf.sub(dap, dan), this.options.margin))) as tf.Scalar, validCount: count, totalCount: batch.size };
  }

  private mine(batch: LossBatch): EpsTriplets {
    const { margin, semiHardFallback, duplicateThreshold: threshold } = this.options;
    const positives = easyPositives(batch, threshold);
    const negatives = sampleSemiHardNegatives(batch.distances('euclidean').dataSync(), batch.masks, positives, margin, semiHardFallback, this.generator);
    return keptTriplets(positives, negatives);
  }
}

/** EPS + margin loss + distance-weighted sampling (see the file comment). */
export class EpsMarginLoss extends BaseMetricLoss<z.output<typeof epsMarginOptionsSchema>> {
  override readonly trainableVariables: readonly tf.Variable[];
  private readonly beta: ClassBeta;
  readonly generator: Rng;

  constructor(options: EpsMarginOptions = {}) {
    super('eps-margin', parseSpec(epsMarginOptionsSchema, options, 'loss'));
    this.beta = new ClassBeta(this.options.beta, this.options.learnBeta, this.options.numClasses);
    this.trainableVariables = this.beta.variables;
    this.generator = new Rng(this.options.seed);
  }

  /** The triplets of a batch (draws from the loss's generator); same calling rules as `compute`. */
  triplets(embeddings: tf.Tensor2D, labels: Int32Array): EpsTriplets {
    return this.mine(new LossBatch(embeddings, labels));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { labels } = batch;
    this.beta.checkLabels(labels);
    const triplets = this.mine(batch);
    const distances = batch.distances('euclidean');
    const count = triplets.anchors.length;
    if (count === 0) return zeroLoss(0);
    const { margin, learnBeta, nu } = this.options;
    const [dap, dan] = tripletDistances(distances, triplets);
    const anchorBeta = tf.reshape(this.beta.ofRows(Int32Array.from(triplets.anchors, (a) => labels[a]!)), [-1]);
    const positive = tf.relu(tf.add(tf.sub(dap, anchorBeta), margin));
    const negative = tf.relu(tf.add(tf.sub(anchorBeta, dan), margin));
    let nonZero = 0;
    for (const value of [...positive.dataSync(), ...negative.dataSync()]) if (value > 0) nonZero++;
    if (nonZero === 0) return zeroLoss(2 * count);
    let loss = tf.div(tf.add(tf.sum(positive), tf.sum(negative)), nonZero);
    // ν Σ_a β_{y_a} (a shared β counts once per anchor).
    if (learnBeta && nu > 0) loss = tf.add(loss, tf.mul(tf.sum(tf.mul(anchorBeta, tf.onesLike(dap))), nu));
    return { loss: loss as tf.Scalar, validCount: nonZero, totalCount: 2 * count };
  }

  private mine(batch: LossBatch): EpsTriplets {
    const { cutoff, upperCutoff, duplicateThreshold: threshold } = this.options;
    const positives = easyPositives(batch, threshold);
    const dim = batch.embeddings.shape[1];
    const negatives = sampleDistanceWeightedNegatives(batch.distances('euclidean').dataSync(), batch.masks, positives, { dim, cutoff, upperCutoff }, this.generator);
    return keptTriplets(positives, negatives);
  }
}

/** EPS + multi-similarity with MS negative mining (see the file comment). */
export class EpsMultiSimilarityLoss extends BaseMetricLoss<z.output<typeof epsMsOptionsSchema>> {
  constructor(options: EpsMsOptions = {}) {
    super('eps-ms', parseSpec(epsMsOptionsSchema, options, 'loss'));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { alpha, beta, base, epsilon, negativeThreshold, duplicateThreshold: threshold } = this.options;
    const { size, masks, similarities, values } = batch;
    const positives = easyPositives(batch, threshold);
    const negativeMask = new Uint8Array(size * size);
    const kept: number[] = [];
    for (let a = 0; a < size; a++) {
      const p = positives[a]!;
      if (p < 0) continue;
      let bound = values[a * size + p]!;
      if (negativeThreshold === 'hardest-positive') {
        for (let j = 0; j < size; j++) if (masks.positive[a * size + j] === 1) bound = Math.min(bound, values[a * size + j]!);
      }
      let negatives = 0;
      for (let n = 0; n < size; n++) {
        if (masks.negative[a * size + n] === 1 && values[a * size + n]! + epsilon > bound) {
          negativeMask[a * size + n] = 1;
          negatives++;
        }
      }
      if (negatives > 0) kept.push(a);
    }
    if (kept.length === 0) return zeroLoss(size);
    const anchors = Int32Array.from(kept);
    const rows = selectRows(similarities, anchors);
    const positiveSimilarities = pickColumns(rows, Int32Array.from(anchors, (a) => positives[a]!));
    const positiveTerm = tf.div(tf.softplus(tf.mul(tf.sub(positiveSimilarities, base), -alpha)), alpha);
    const negativeTerm = tf.div(maskedLogSumExp(tf.mul(tf.sub(rows, base), beta), maskRows(negativeMask, size, anchors), true), beta);
    return { loss: tf.mean(tf.add(positiveTerm, negativeTerm)) as tf.Scalar, validCount: anchors.length, totalCount: size };
  }
}

/** Registry entries of the three EPS losses. */
export const EPS_LOSSES = [
  defineLoss('eps-triplet', epsTripletOptionsSchema, (options) => new EpsTripletLoss(options)),
  defineLoss('eps-margin', epsMarginOptionsSchema, (options) => new EpsMarginLoss(options)),
  defineLoss('eps-ms', epsMsOptionsSchema, (options) => new EpsMultiSimilarityLoss(options)),
] as const;
