/**
 * @file The direct-gradient framework of paper 003 (Xuan & Pless, "Dissecting the impact of different
 * loss functions with gradient surgery"; docs/methods.md section 4): instead of differentiating a loss,
 * the gradient on the L2-normalised features is set directly from a unit direction, a pair weight and
 * a triplet weight (direct-gradient-weights.ts), and backpropagated through the normalisation into
 * the network.
 *
 * Triplets: EPHN mining over the batch (the paper's appendix), on detached similarities: per anchor
 * a, p = ep(a) (the most similar positive, near-duplicates `S > duplicateThreshold` = 0.9999 skipped)
 * and n = hn(a) (the most similar negative), ties to the lowest index (mining/anchor-selection.ts).
 * Anchors without a positive or a negative are dropped.
 *
 * Injection: the gradient G [B, D] (contributions summed over every triplet a feature is in, times
 * 1/K for `reduction: 'mean'` over the K kept anchors, or 1 for `sum`; docs/methods.md Q8: mean by
 * default, which matches the paper's large SGD learning rates) is computed in JavaScript from the
 * detached features, and `tf.customGrad` makes it the gradient of the returned scalar w.r.t. the
 * normalised embeddings given to `compute`.
 *
 * Reported loss value (the scalar's forward value, what the trainer logs): the mean (or sum) over
 * kept anchors of the per-triplet closed form when the combination has one — (euc, euc, con),
 * (cos, con, cos), (cos, lin, cir), (cos, sig, con), see {@link closedFormValue}; its autograd
 * gradient is then exactly the injected one — and otherwise of the cosine NCA triplet loss
 * `softplus(τ(S_an − S_ap))/τ`, a progress monitor whose own gradient is *not* the injected one.
 *
 * Registry names (each the same options, defaulting to a combination; any option overrides):
 *
 * | name | direction | pair weight | triplet weight | paper 003 Table 1 / section 6 |
 * |------|-----------|-------------|----------------|-------------------------------|
 * | `direct-gradient` | cos | con | con | the component study's baseline |
 * | `dg-triplet-euclidean` | euc | euc | con | triplet (Euclidean) |
 * | `dg-triplet-cosine` | cos | con | cos | triplet (cosine, NCA) |
 * | `dg-circle` | cos | lin | cir | circle loss |
 * | `dg-binomial-deviance` | cos | sig | con | binomial deviance |
 * | `dg-ms` | cos | sig-ms | con | multi-similarity |
 * | `dg-dr-ms` | cos-orth | sig-ms | con | direction-regularised MS |
 * | `dg-sct` | cos | con | cos+sc1 | selectively contrastive triplet |
 * | `dg-best` | cos-orth | lin-ms | cir | the paper's best combination (section 6) |
 *
 * Other options and defaults: `tau` τ = 10 (Q11), `alpha` 2, `beta` 10, `base` λ 0.5, `epsilon` ε 0.1
 * (the paper's appendix), `msRelative` mean-others (Q10), `orthogonalize` negative (Q9),
 * `sc2Boundary` circle (Q12), `reduction` mean (Q8), `duplicateThreshold` 0.9999.
 * `validCount` counts the kept anchors, `totalCount` is B.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { DEFAULT_DUPLICATE_THRESHOLD, selectNegatives, selectPositives } from '../mining/anchor-selection.js';
import { mineMultiSimilarityPairs } from '../mining/multi-similarity-miner.js';
import { type PairMasks } from '../similarity.js';
import {
  closedFormValue,
  cosineTripletValue,
  GRADIENT_DIRECTIONS,
  PAIR_WEIGHTS,
  pairWeights,
  TRIPLET_WEIGHTS,
  tripletDirections,
  tripletWeight,
  type GradientDirection,
  type PairWeight,
  type TripletSimilarities,
  type TripletWeight,
} from './direct-gradient-weights.js';
import { BaseMetricLoss } from './base-loss.js';
import { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';
import { parseSpec } from '../../util/parse-spec.js';
import { zeroLoss } from './reducers.js';
import { defineLoss } from './loss-entry.js';

/** The component defaults of each registry name (see the file comment). */
export const DIRECT_GRADIENT_PRESETS = {
  'direct-gradient': { direction: 'cos', pairWeight: 'con', tripletWeight: 'con' },
  'dg-triplet-euclidean': { direction: 'euc', pairWeight: 'euc', tripletWeight: 'con' },
  'dg-triplet-cosine': { direction: 'cos', pairWeight: 'con', tripletWeight: 'cos' },
  'dg-circle': { direction: 'cos', pairWeight: 'lin', tripletWeight: 'cir' },
  'dg-binomial-deviance': { direction: 'cos', pairWeight: 'sig', tripletWeight: 'con' },
  'dg-ms': { direction: 'cos', pairWeight: 'sig-ms', tripletWeight: 'con' },
  'dg-dr-ms': { direction: 'cos-orth', pairWeight: 'sig-ms', tripletWeight: 'con' },
  'dg-sct': { direction: 'cos', pairWeight: 'con', tripletWeight: 'cos+sc1' },
  'dg-best': { direction: 'cos-orth', pairWeight: 'lin-ms', tripletWeight: 'cir' },
} as const satisfies Record<string, { direction: GradientDirection; pairWeight: PairWeight; tripletWeight: TripletWeight }>;

/** The registry names of the framework. */
export type DirectGradientName = keyof typeof DIRECT_GRADIENT_PRESETS;

/** The registry names, in registry order. */
export const DIRECT_GRADIENT_NAMES = Object.keys(DIRECT_GRADIENT_PRESETS) as DirectGradientName[];

/** The options of the registry name `name`, whose components default to its preset. */
export function directGradientOptionsSchema<N extends DirectGradientName>(name: N) {
  const preset = DIRECT_GRADIENT_PRESETS[name];
  return z.strictObject({
    /** Unit direction e. */
    direction: z.enum(GRADIENT_DIRECTIONS).default(preset.direction),
    /** Pair weight P. */
    pairWeight: z.enum(PAIR_WEIGHTS).default(preset.pairWeight),
    /** Triplet weight T, optionally `+sc1` / `+sc2`. */
    tripletWeight: z.enum(TRIPLET_WEIGHTS).default(preset.tripletWeight),
    /** τ of T_cos, T_cir and of the reported cosine-triplet value (docs/methods.md Q11). */
    tau: z.number().positive().default(10),
    /** α, β, λ of P_sig and P_sig-ms. */
    alpha: z.number().positive().default(2),
    beta: z.number().positive().default(10),
    base: z.number().default(0.5),
    /** ε of the relative-similarity sets of P_sig-ms and P_lin-ms. */
    epsilon: z.number().default(0.1),
    /** Aggregation of the relative-similarity terms (docs/methods.md Q10). */
    msRelative: z.enum(['mean-others', 'mean-with-selected', 'sum-with-selected']).default('mean-others'),
    /** Which directions the orthogonal variants project (docs/methods.md Q9). */
    orthogonalize: z.enum(['negative', 'negative-and-anchor']).default('negative'),
    /** Reading of T_sc2's boundary (docs/methods.md Q12). */
    sc2Boundary: z.enum(['circle', 'text']).default('circle'),
    /** Mean (default) or sum of the triplets' gradients (docs/methods.md Q8). */
    reduction: z.enum(['mean', 'sum']).default('mean'),
    /** Positives with `S > duplicateThreshold` are not selected; `null` keeps them. */
    duplicateThreshold: z.number().nullable().default(DEFAULT_DUPLICATE_THRESHOLD),
  });
}

/** Options as written in a config (every field optional). */
export type DirectGradientOptions = z.input<ReturnType<typeof directGradientOptionsSchema>>;

type ResolvedOptions = z.output<ReturnType<typeof directGradientOptionsSchema>>;

/** The mined triplets of a batch: anchor `anchors[k]` with positive `positives[k]`, negative `negatives[k]`. */
export interface MinedTriplets {
  readonly anchors: Int32Array;
  readonly positives: Int32Array;
  readonly negatives: Int32Array;
}

/** The direct-gradient loss (see the file comment). */
export class DirectGradientLoss extends BaseMetricLoss<ResolvedOptions> {
  declare readonly name: DirectGradientName;

  constructor(name: DirectGradientName, options: DirectGradientOptions = {}) {
    super(name, parseSpec(directGradientOptionsSchema(name), options, 'loss'));
  }

  /** The EPHN triplets of a batch (see the file comment); same calling rules as `compute`. */
  triplets(embeddings: tf.Tensor2D, labels: Int32Array): MinedTriplets {
    return this.mine(new LossBatch(embeddings, labels));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { size, masks, embeddings, values: similarities } = batch;
    const triplets = this.mine(batch);
    const { anchors, positives, negatives } = triplets;
    const count = anchors.length;
    if (count === 0) return zeroLoss(size);
    const o = this.options;
    const dim = embeddings.shape[1];
    const features = embeddings.dataSync() as Float32Array;
    const row = (i: number): Float32Array => features.subarray(i * dim, (i + 1) * dim);
    const relative = o.pairWeight === 'sig-ms' || o.pairWeight === 'lin-ms' ? mineMultiSimilarityPairs(similarities, masks, o.epsilon) : null;
    const scale = o.reduction === 'mean' ? 1 / count : 1;
    const gradient = new Float64Array(size * dim);
    const add = (i: number, weight: number, direction: Float64Array): void => {
      if (weight === 0) return;
      for (let d = 0; d < dim; d++) gradient[i * dim + d]! += weight * direction[d]!;
    };
    let value = 0;
    for (let k = 0; k < count; k++) {
      const a = anchors[k]!;
      const p = positives[k]!;
      const n = negatives[k]!;
      const t: TripletSimilarities = {
        sap: similarities[a * size + p]!,
        san: similarities[a * size + n]!,
        dap: distance(row(a), row(p)),
        dan: distance(row(a), row(n)),
        relativePositives: relative === null ? [] : othersOf(relative.positive, a, p, similarities, size),
        relativeNegatives: relative === null ? [] : othersOf(relative.negative, a, n, similarities, size),
      };
      const { weight, keepPositive } = tripletWeight(o.tripletWeight, t.sap, t.san, o);
      const [positiveWeight, negativeWeight] = pairWeights(o.pairWeight, t, o);
      const wp = scale * weight * (keepPositive ? positiveWeight : 0);
      const wn = scale * weight * negativeWeight;
      const e = tripletDirections(o.direction, row(a), row(p), row(n), o.orthogonalize);
      add(p, wp, e.ep);
      add(n, wn, e.en);
      add(a, wp, e.eap);
      add(a, wn, e.ean);
      value += scale * (closedFormValue(o.direction, o.pairWeight, o.tripletWeight, t, o) ?? cosineTripletValue(t.sap, t.san, o.tau));
    }
    const injected = Float32Array.from(gradient);
    const inject = tf.customGrad((x) => ({
      value: tf.scalar(value),
      gradFunc: (dy: tf.Tensor) => tf.mul(dy, tf.tensor2d(injected, (x as tf.Tensor2D).shape)),
    }));
    return { loss: inject(embeddings) as tf.Scalar, validCount: count, totalCount: size };
  }

  private mine(batch: LossBatch): MinedTriplets {
    return mine(batch.values, batch.masks, this.options.duplicateThreshold);
  }
}

function mine(similarities: ArrayLike<number>, masks: PairMasks, duplicateThreshold: number | null): MinedTriplets {
  const positives = selectPositives(similarities, masks, { strategy: 'easy', duplicateThreshold });
  const negatives = selectNegatives(similarities, masks, { strategy: 'hard' });
  const kept: number[] = [];
  for (let a = 0; a < masks.size; a++) if (positives.index[a]! >= 0 && negatives.index[a]! >= 0) kept.push(a);
  return {
    anchors: Int32Array.from(kept),
    positives: Int32Array.from(kept, (a) => positives.index[a]!),
    negatives: Int32Array.from(kept, (a) => negatives.index[a]!),
  };
}

/** The similarities of anchor a's mined pairs other than `selected`. */
function othersOf(pairs: { anchors: Int32Array; others: Int32Array }, anchor: number, selected: number, similarities: ArrayLike<number>, size: number): number[] {
  const out: number[] = [];
  for (let k = 0; k < pairs.anchors.length; k++) {
    if (pairs.anchors[k] === anchor && pairs.others[k] !== selected) out.push(similarities[anchor * size + pairs.others[k]!]!);
  }
  return out;
}

function distance(u: ArrayLike<number>, v: ArrayLike<number>): number {
  let s = 0;
  for (let d = 0; d < u.length; d++) s += (u[d]! - v[d]!) ** 2;
  return Math.sqrt(s);
}

function directGradientEntry<const Name extends DirectGradientName>(name: Name) {
  return defineLoss(name, directGradientOptionsSchema(name), (options) => new DirectGradientLoss(name, options));
}

/** Registry entries of the direct-gradient presets (the options' defaults differ per name). */
export const DIRECT_GRADIENT_LOSSES = [
  directGradientEntry('direct-gradient'),
  directGradientEntry('dg-triplet-euclidean'),
  directGradientEntry('dg-triplet-cosine'),
  directGradientEntry('dg-circle'),
  directGradientEntry('dg-binomial-deviance'),
  directGradientEntry('dg-ms'),
  directGradientEntry('dg-dr-ms'),
  directGradientEntry('dg-sct'),
  directGradientEntry('dg-best'),
] as const;
