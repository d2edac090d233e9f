/**
 * @file LoOp losses (paper 001: Vasudeva, Deora et al., "LoOp: Looking for Optimal Hard Negative
 * Embeddings for Deep Metric Learning"; docs/methods.md sections 3.3–3.8): the anchor–negative distance of
 * a positive pair (i, j) becomes the distance `d_ijkl` between the closest points of its arc and the
 * arc of a pair (k, l) of another class (loop-geometry.ts), so every positive pair meets an optimal
 * synthetic hard negative.
 *
 * Pairing (Algorithm 1): within each class, its images in batch order are paired consecutively, (1st,
 * 2nd), (3rd, 4th), … (a class's odd last image is left unpaired); with the `pairing` sampler (N even,
 * the N images of a class consecutive) these are the paper's pairs `(X[0], X[1]), (X[2], X[3]), …`.
 * Every unordered couple of pairs of different classes is solved once, `B(B − N)/8` of them for c
 * classes × N, and serves both pairs. `D⁻(i, j) = min_{(k,l)} d_ijkl` over the couples the pair is in.
 *
 * Losses (`d` = Euclidean distance on the unit sphere, mean over the positive pairs by default):
 *
 * | name | per positive pair (i, j) |
 * |------|--------------------------|
 * | `loop-triplet` | `Σ_{(k,l)} [d_ij − d_ijkl + m]_+` (paper Eq. 15) |
 * | `loop-hphn` | `[max(max_{k∈P(i)} d_ik, max_{l∈P(j)} d_jl) + m − D⁻(i, j)]_+` (hard positive over all same-class images of both members) |
 * | `loop-lifted` | `[d_ij + m − D⁻(i, j)]_+` (paper Eq. 16 with the min) |
 * | `loop-ms` | `(1/α) log(1 + Σ⁺ e^{−α(s − λ)}) + (1/β) log(1 + Σ⁻ e^{β(s − λ)})` with arc similarities `s_ijkl = 1 − d_ijkl²/2` |
 *
 * loop-ms follows the authors' code, with the positive pair as the unit: the positives are the
 * similarities of both members to their other same-class images (both orders of (i, j) included);
 * with `s⁺_min` the smallest of them, the negatives are the pair's arc similarities `s > s⁺_min − ε`;
 * with `s⁻_max` the largest arc similarity of the pair, the positives `s < s⁻_max + ε` are kept; a pair
 * without a kept positive or negative is skipped.
 *
 * Decisions on docs/methods.md section 10 (each an option; defaults first):
 * - Q6 `margin` m = 0.1 (the authors' Tripletloss default; their main.py passes 1e-5, the paper sweeps
 *   it without stating one); loop-triplet `negatives`: `all` (paper Eq. 15, every pair of another
 *   class) or `halves` (the authors' code: the t-th pair of the batch's first half against only the
 *   t-th of the second half, kept when their classes differ); loop-ms `base` λ = 0.5 (paper Fig. 3(c);
 *   code 0.4), `epsilon` ε = −0.02 (paper Fig. 3(d) and code), α = 2, β = 50. N per class is the
 *   sampler's `groupSize` (the `pairing` sampler requires it even).
 * - Q7 gradient: the case and the angles are chosen on detached similarities; the optimal points are
 *   rebuilt from the live embeddings (`p1 = x_i` or `x_j` at an arc end, `cos α̂ x_i + sin α̂ n2` with the
 *   live `n2 = (x_j − S_ij x_i)/sqrt(1 − S_ij²)` inside), which by the envelope theorem is the gradient of
 *   the minimum distance. `‖p1 − p2‖²` is expanded in the live similarities of the four images, so all
 *   couples cost [P, P] elementwise work (P = B/2 pairs) rather than a D-vector each. Arcs shorter
 *   than `sin α0 < 1e-3` (the authors filter acos ≤ 1e-3) keep their interpolation weights
 *   `sin(α0 − α̂)/sin α0, sin α̂/sin α0` constant instead (no 1/sin α0 blow-up).
 *   Segments (`geometry: 'segment'`) use the constant weights `1 − k, k`, exact for their box
 *   constraints. `reduction`: `mean` over the contributing positive pairs (paper, 1/|𝒫|) or `sum`
 *   (the authors' trainer backpropagates the per-pair vector); loop-lifted `negativeMin`: `hard`
 *   (paper, min) or `soft` (code: `[d_ij + m + log Σ exp(−d_ijkl)]_+`).
 * - Q17: distances are non-squared Euclidean, `sqrt(max(‖p1 − p2‖², 0) + 1e-12)`.
 *
 * `validCount` counts the positive pairs that contribute (have a couple; loop-ms: kept positives and
 * negatives), `totalCount` the positive pairs formed. A batch without two classes of pairs gives 0.
 *
 * Length: the four LoOp losses share the pairing, the couple solving and the per-pair negative
 * distance; each loss's own part is a few lines in one switch, so they stay together in this file
 * (the geometry itself is in loop-geometry.ts).
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { distancesFromSimilarities, labelPairMasks, oneHotRows, pickColumns, selectRows } from '../similarity.js';
import { closestPointsOnArcs, closestPointsOnSegments, type PointRole, type QuadrupleGram } from './loop-geometry.js';
import { maskedLogSumExp } from './masked-ops.js';
import { BaseMetricLoss } from './base-loss.js';
import { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';
import { parseSpec } from '../../util/parse-spec.js';
import { zeroLoss } from './reducers.js';
import { defineLoss } from './loss-entry.js';

/** Below this `sin α0` an interior point keeps constant interpolation weights (see the file comment). */
export const LIVE_ARC_SINE = 1e-3;

/** Floor added to squared distances before the square root. */
const DISTANCE_FLOOR = 1e-12;

const sharedShape = {
  /** `arc` (default, great-circle arcs) or `segment` (the line variant, docs/methods.md 3.6). */
  geometry: z.enum(['arc', 'segment']).default('arc'),
  /** Mean over the contributing positive pairs (default) or sum (docs/methods.md Q7). */
  reduction: z.enum(['mean', 'sum']).default('mean'),
};

/** Options of `loop-triplet`. */
export const loopTripletOptionsSchema = z.strictObject({
  ...sharedShape,
  margin: z.number().default(0.1),
  /** `all` (paper Eq. 15) or `halves` (the authors' one-to-one matching) (docs/methods.md Q6). */
  negatives: z.enum(['all', 'halves']).default('all'),
});

/** Options of `loop-hphn`. */
export const loopHphnOptionsSchema = z.strictObject({ ...sharedShape, margin: z.number().default(0.1) });

/** Options of `loop-lifted`. */
export const loopLiftedOptionsSchema = z.strictObject({
  ...sharedShape,
  margin: z.number().default(0.1),
  /** `hard` (paper, min) or `soft` (code, log-sum-exp) (docs/methods.md Q7). */
  negativeMin: z.enum(['hard', 'soft']).default('hard'),
});

/** Options of `loop-ms`. */
export const loopMsOptionsSchema = z.strictObject({
  ...sharedShape,
  alpha: z.number().positive().default(2),
  beta: z.number().positive().default(50),
  /** λ (paper Fig. 3(c) 0.5; code 0.4). */
  base: z.number().default(0.5),
  /** ε (paper Fig. 3(d) and code: −0.02). */
  epsilon: z.number().default(-0.02),
});

/** The LoOp loss names. */
export type LoopName = 'loop-triplet' | 'loop-hphn' | 'loop-lifted' | 'loop-ms';

/** Options of any LoOp loss as written in a config (the fields of the named loss only). */
export type LoopOptions =
  | z.input<typeof loopTripletOptionsSchema>
  | z.input<typeof loopHphnOptionsSchema>
  | z.input<typeof loopLiftedOptionsSchema>
  | z.input<typeof loopMsOptionsSchema>;

const SCHEMAS = {
  'loop-triplet': loopTripletOptionsSchema,
  'loop-hphn': loopHphnOptionsSchema,
  'loop-lifted': loopLiftedOptionsSchema,
  'loop-ms': loopMsOptionsSchema,
} as const;

/** The options of the four losses: the shared ones, and each loss's own (absent for the others). */
type ResolvedOptions = z.output<z.ZodObject<typeof sharedShape>> &
  Partial<z.output<typeof loopTripletOptionsSchema> & z.output<typeof loopLiftedOptionsSchema> & z.output<typeof loopMsOptionsSchema>>;

/** The positive pairs of a batch: `(first[t], second[t])`, same class. */
export interface PositivePairs {
  readonly first: Int32Array;
  readonly second: Int32Array;
}

/** Pairs each class's images consecutively in batch order (see the file comment). */
export function pairPositives(labels: Int32Array): PositivePairs {
  const open = new Map<number, number>();
  const first: number[] = [];
  const second: number[] = [];
  labels.forEach((label, i) => {
    const waiting = open.get(label);
    if (waiting === undefined) open.set(label, i);
    else {
      first.push(waiting);
      second.push(i);
      open.delete(label);
    }
  });
  return { first: Int32Array.from(first), second: Int32Array.from(second) };
}

/** Couples of positive pairs of different classes: pair `a[q]` (side x) with pair `b[q]` (side y), a < b. */
export interface PairCouples {
  readonly a: Int32Array;
  readonly b: Int32Array;
}

/** All couples of pairs of different classes (`all`), or the authors' first-half/second-half matching (`halves`). */
export function couplePairs(pairs: PositivePairs, labels: Int32Array, rule: 'all' | 'halves'): PairCouples {
  const count = pairs.first.length;
  const classOf = (t: number): number => labels[pairs.first[t]!]!;
  const a: number[] = [];
  const b: number[] = [];
  if (rule === 'all') {
    for (let s = 0; s < count; s++) {
      for (let t = s + 1; t < count; t++) {
        if (classOf(s) !== classOf(t)) {
          a.push(s);
          b.push(t);
        }
      }
    }
  } else {
    const half = Math.floor(count / 2);
    for (let s = 0; s < half; s++) {
      if (classOf(s) !== classOf(s + half)) {
        a.push(s);
        b.push(s + half);
      }
    }
  }
  return { a: Int32Array.from(a), b: Int32Array.from(b) };
}

/** How the optimal point of one side is built from its pair's two embeddings. */
interface PointWeights {
  /** Constant weights of the pair's first and second embedding. */
  readonly first: number;
  readonly second: number;
  /** The angle α̂ of a live interior arc point (`first`, `second` are then 0), or NaN. */
  readonly liveAngle: number;
}

/** The solved couples of one batch. */
export interface SolvedCouples extends PairCouples {
  /** Detached `d_ijkl` per couple (float64 from the detached similarities). */
  readonly distances: Float64Array;
  /** Per couple: the KKT case (arcs) or -1 (segments), for tests and diagnostics. */
  readonly cases: Int32Array;
  readonly pointsA: readonly PointWeights[];
  readonly pointsB: readonly PointWeights[];
}

function weightsOfArcPoint(role: PointRole, angle: number, range: number): PointWeights {
  if (role === 'start') return { first: 1, second: 0, liveAngle: Number.NaN };
  if (role === 'end') return { first: 0, second: 1, liveAngle: Number.NaN };
  if (Math.sin(range) >= LIVE_ARC_SINE) return { first: 0, second: 0, liveAngle: angle };
  return { first: Math.sin(range - angle) / Math.sin(range), second: Math.sin(angle) / Math.sin(range), liveAngle: Number.NaN };
}

/** Solves every couple on the detached row-major B×B similarities. */
export function solveCouples(similarities: ArrayLike<number>, size: number, pairs: PositivePairs, couples: PairCouples, geometry: 'arc' | 'segment'): SolvedCouples {
  const count = couples.a.length;
  const distances = new Float64Array(count);
  const cases = new Int32Array(count);
  const pointsA: PointWeights[] = [];
  const pointsB: PointWeights[] = [];
  const s = (i: number, j: number): number => similarities[i * size + j]!;
  for (let q = 0; q < count; q++) {
    const [i, j] = [pairs.first[couples.a[q]!]!, pairs.second[couples.a[q]!]!];
    const [k, l] = [pairs.first[couples.b[q]!]!, pairs.second[couples.b[q]!]!];
    const gram: QuadrupleGram = { x1x2: s(i, j), y1y2: s(k, l), x1y1: s(i, k), x1y2: s(i, l), x2y1: s(j, k), x2y2: s(j, l) };
    if (geometry === 'arc') {
      const solution = closestPointsOnArcs(gram);
      distances[q] = solution.distance;
      cases[q] = solution.kase;
      pointsA.push(weightsOfArcPoint(solution.alphaRole, solution.alpha, solution.alpha0));
      pointsB.push(weightsOfArcPoint(solution.betaRole, solution.beta, solution.beta0));
    } else {
      const solution = closestPointsOnSegments(gram);
      distances[q] = solution.distance;
      cases[q] = -1;
      pointsA.push({ first: 1 - solution.k1, second: solution.k1, liveAngle: Number.NaN });
      pointsB.push({ first: 1 - solution.k2, second: solution.k2, liveAngle: Number.NaN });
    }
  }
  return { ...couples, distances, cases, pointsA, pointsB };
}

/** The live similarity rows [P, B] of every pair's first and second member. */
interface MemberRows {
  readonly first: tf.Tensor2D;
  readonly second: tf.Tensor2D;
}

/** One side's point weights for every ordered couple (t, u), row-major [P, P]. */
interface SideWeights {
  readonly first: Float32Array;
  readonly second: Float32Array;
  /** 1 where the point is a live interior arc point, with cos α̂ and sin α̂. */
  readonly live: Float32Array;
  readonly cos: Float32Array;
  readonly sin: Float32Array;
}

/**
 * The couples as dense row-major [P, P] arrays, entry (t, u) for pair t against pair u, both orders
 * of every couple: whether it is a couple, its detached distance, and the point weights of the row
 * pair's side and of the column pair's side.
 */
interface DenseCouples {
  readonly isCouple: Uint8Array;
  readonly distances: Float64Array;
  readonly row: SideWeights;
  readonly column: SideWeights;
}

function sideWeights(length: number): SideWeights {
  return { first: new Float32Array(length), second: new Float32Array(length), live: new Float32Array(length), cos: new Float32Array(length), sin: new Float32Array(length) };
}

function setSide(side: SideWeights, entry: number, point: PointWeights): void {
  side.first[entry] = point.first;
  side.second[entry] = point.second;
  if (Number.isNaN(point.liveAngle)) return;
  side.live[entry] = 1;
  side.cos[entry] = Math.cos(point.liveAngle);
  side.sin[entry] = Math.sin(point.liveAngle);
}

function denseCouples(pairCount: number, solved: SolvedCouples): DenseCouples {
  const length = pairCount * pairCount;
  const dense = { isCouple: new Uint8Array(length), distances: new Float64Array(length), row: sideWeights(length), column: sideWeights(length) };
  for (let q = 0; q < solved.a.length; q++) {
    const [s, t] = [solved.a[q]!, solved.b[q]!];
    for (const [entry, rowPoint, columnPoint] of [
      [s * pairCount + t, solved.pointsA[q]!, solved.pointsB[q]!],
      [t * pairCount + s, solved.pointsB[q]!, solved.pointsA[q]!],
    ] as const) {
      dense.isCouple[entry] = 1;
      dense.distances[entry] = solved.distances[q]!;
      setSide(dense.row, entry, rowPoint);
      setSide(dense.column, entry, columnPoint);
    }
  }
  return dense;
}

/**
 * The live `d_tu` [P, P] of the couples (entries off the couples are finite and meaningless), from
 * the similarities alone: with `p1 = w1 x_i + w2 x_j` (pair t = (i, j)) and `p2 = v1 x_k + v2 x_l`
 * (pair u = (k, l)), `‖p1 − p2‖² = w1² + w2² + 2 w1 w2 S_ij + v1² + v2² + 2 v1 v2 S_kl
 * − 2(w1 v1 S_ik + w1 v2 S_il + w2 v1 S_jk + w2 v2 S_jl)`, clamped at 0, plus 1e-12 under the square root.
 * The weights are constants or, for a live interior arc point, `w1 = cos α̂ − sin α̂ S_ij/s`,
 * `w2 = sin α̂/s` with the live pair similarity and `s = sqrt(max(1 − S_ij², 1e-12))`.
 */
function liveDistanceMatrix(rows: MemberRows, pairs: PositivePairs, pairSimilarities: tf.Tensor1D, dense: DenseCouples): tf.Tensor2D {
  const size = rows.first.shape[1];
  const count = pairs.first.length;
  const shape: [number, number] = [count, count];
  const firstColumns = oneHotRows(pairs.first, size);
  const secondColumns = oneHotRows(pairs.second, size);
  // S between the members of pair t (rows) and of pair u (columns), [P, P] each.
  const block = (memberRows: tf.Tensor2D, columns: tf.Tensor2D): tf.Tensor2D => tf.matMul(memberRows, columns, false, true);
  const weights = (side: SideWeights, pairCosine: tf.Tensor2D): [tf.Tensor2D, tf.Tensor2D] => {
    const sine = tf.sqrt(tf.maximum(tf.sub(1, tf.square(pairCosine)), DISTANCE_FLOOR));
    const [live, cos, sin] = [tf.tensor2d(side.live, shape), tf.tensor2d(side.cos, shape), tf.tensor2d(side.sin, shape)];
    return [
      tf.add(tf.tensor2d(side.first, shape), tf.mul(live, tf.sub(cos, tf.div(tf.mul(sin, pairCosine), sine)))),
      tf.add(tf.tensor2d(side.second, shape), tf.mul(live, tf.div(sin, sine))),
    ];
  };
  const rowCosine = tf.reshape(pairSimilarities, [count, 1]) as tf.Tensor2D;
  const columnCosine = tf.reshape(pairSimilarities, [1, count]) as tf.Tensor2D;
  const [w1, w2] = weights(dense.row, rowCosine);
  const [v1, v2] = weights(dense.column, columnCosine);
  const squaredNorm = (a: tf.Tensor2D, b: tf.Tensor2D, cosine: tf.Tensor2D): tf.Tensor => tf.add(tf.add(tf.square(a), tf.square(b)), tf.mul(tf.mul(tf.mul(a, b), cosine), 2));
  const cross = tf.addN([
    tf.mul(tf.mul(w1, v1), block(rows.first, firstColumns)),
    tf.mul(tf.mul(w1, v2), block(rows.first, secondColumns)),
    tf.mul(tf.mul(w2, v1), block(rows.second, firstColumns)),
    tf.mul(tf.mul(w2, v2), block(rows.second, secondColumns)),
  ]);
  const squared = tf.sub(tf.add(squaredNorm(w1, w2, rowCosine), squaredNorm(v1, v2, columnCosine)), tf.mul(cross, 2));
  return tf.sqrt(tf.add(tf.relu(squared), DISTANCE_FLOOR)) as tf.Tensor2D;
}

/** Per pair, the couple partner with the smallest detached distance (-1 without couples). */
function nearestPartners(pairCount: number, dense: DenseCouples): Int32Array {
  const best = new Int32Array(pairCount).fill(-1);
  for (let t = 0; t < pairCount; t++) {
    for (let u = 0; u < pairCount; u++) {
      const entry = t * pairCount + u;
      if (dense.isCouple[entry] === 1 && (best[t]! < 0 || dense.distances[entry]! < dense.distances[t * pairCount + best[t]!]!)) best[t] = u;
    }
  }
  return best;
}

/** What one batch produced before reduction. */
export interface LoopBatch {
  readonly pairs: PositivePairs;
  readonly solved: SolvedCouples;
  /** Pairs that contribute, ascending. */
  readonly contributing: Int32Array;
  /** [P] per-pair losses (0 for non-contributing pairs); null when no pair contributes. */
  readonly losses: tf.Tensor1D | null;
}

/** The four LoOp losses (see the file comment). */
export class LoopLoss extends BaseMetricLoss<ResolvedOptions> {
  declare readonly name: LoopName;

  constructor(name: LoopName, options: LoopOptions = {}) {
    super(name, parseSpec(SCHEMAS[name], options, 'loss'));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const paired = this.pairLossesOf(batch);
    const count = paired.contributing.length;
    if (paired.losses === null) return zeroLoss(paired.pairs.first.length);
    const total = tf.sum(paired.losses);
    return { loss: (this.options.reduction === 'mean' ? tf.div(total, count) : total) as tf.Scalar, validCount: count, totalCount: paired.pairs.first.length };
  }

  /** The pairs, their solved couples and the unreduced per-pair losses (what `compute` reduces). */
  pairLosses(embeddings: tf.Tensor2D, labels: Int32Array): LoopBatch {
    return this.pairLossesOf(new LossBatch(embeddings, labels));
  }

  private pairLossesOf(batch: LossBatch): LoopBatch {
    const { size, labels, similarities, values } = batch;
    const pairs = pairPositives(labels);
    const pairCount = pairs.first.length;
    const couples = couplePairs(pairs, labels, this.options.negatives ?? 'all');
    const solved = solveCouples(values, size, pairs, couples, this.options.geometry);
    const none = { pairs, solved, contributing: new Int32Array(0), losses: null };
    if (couples.a.length === 0) return none;
    const dense = denseCouples(pairCount, solved);
    const rows: MemberRows = { first: selectRows(similarities, pairs.first), second: selectRows(similarities, pairs.second) };
    const pairSimilarities = pickColumns(rows.first, pairs.second);
    const distances = liveDistanceMatrix(rows, pairs, pairSimilarities, dense);
    const nearest = nearestPartners(pairCount, dense);
    const coupleMask = tf.tensor2d(dense.isCouple, [pairCount, pairCount], 'bool');
    // The margin of loop-triplet, loop-hphn and loop-lifted (loop-ms has none).
    const margin = this.options.margin!;
    const positiveDistances = distancesFromSimilarities(pairSimilarities, 'euclidean');
    // D⁻ per pair (a pair without couples reads column 0; its loss is masked out below).
    const hardestNegative = (): tf.Tensor1D => pickColumns(distances, Int32Array.from(nearest, (u) => Math.max(u, 0)));
    let losses: tf.Tensor1D;
    let contributes: Int32Array = Int32Array.from(nearest, (u) => (u >= 0 ? 1 : 0));
    switch (this.name) {
      case 'loop-triplet': {
        const hinges = tf.relu(tf.add(tf.sub(tf.expandDims(positiveDistances, 1), distances), margin));
        losses = tf.sum(tf.mul(hinges, tf.cast(coupleMask, 'float32')), 1);
        break;
      }
      case 'loop-hphn':
        losses = tf.relu(tf.sub(tf.add(hardestPositiveDistances(rows, values, labels, pairs), margin), hardestNegative()));
        break;
      case 'loop-lifted': {
        const negativeTerm = this.options.negativeMin === 'soft' ? tf.neg(maskedLogSumExp(tf.neg(distances), coupleMask, false)) : hardestNegative();
        losses = tf.relu(tf.sub(tf.add(positiveDistances, margin), negativeTerm));
        break;
      }
      case 'loop-ms': {
        const ms = this.multiSimilarity(rows, values, labels, pairs, dense, distances);
        losses = ms.losses;
        contributes = ms.contributes;
        break;
      }
    }
    const contributing = Int32Array.from([...contributes.keys()].filter((t) => contributes[t] === 1));
    if (contributing.length === 0) return none;
    return { pairs, solved, contributing, losses: tf.mul(losses, Float32Array.from(contributes)) };
  }

  private multiSimilarity(
    rows: MemberRows,
    values: ArrayLike<number>,
    labels: Int32Array,
    pairs: PositivePairs,
    dense: DenseCouples,
    distances: tf.Tensor2D,
  ): { losses: tf.Tensor1D; contributes: Int32Array } {
    // loop-ms's options, always present for it.
    const [alpha, beta, base, epsilon] = [this.options.alpha!, this.options.beta!, this.options.base!, this.options.epsilon!];
    const size = labels.length;
    const pairCount = pairs.first.length;
    const masks = labelPairMasks(labels);
    // Positives [P, 2B]: the rows of both members; negatives [P, P]: the pair's arc similarities.
    const positiveMask = new Uint8Array(pairCount * 2 * size);
    const negativeMask = new Uint8Array(pairCount * pairCount);
    const contributes = new Int32Array(pairCount);
    for (let t = 0; t < pairCount; t++) {
      const members = [pairs.first[t]!, pairs.second[t]!];
      let smallestPositive = Number.POSITIVE_INFINITY;
      for (const m of members) {
        for (let k = 0; k < size; k++) if (masks.positive[m * size + k] === 1) smallestPositive = Math.min(smallestPositive, values[m * size + k]!);
      }
      let largestNegative = Number.NEGATIVE_INFINITY;
      let negatives = 0;
      for (let u = 0; u < pairCount; u++) {
        const entry = t * pairCount + u;
        if (dense.isCouple[entry] !== 1) continue;
        const arcSimilarity = 1 - dense.distances[entry]! ** 2 / 2;
        largestNegative = Math.max(largestNegative, arcSimilarity);
        if (arcSimilarity > smallestPositive - epsilon) {
          negativeMask[entry] = 1;
          negatives++;
        }
      }
      let positives = 0;
      members.forEach((m, side) => {
        for (let k = 0; k < size; k++) {
          if (masks.positive[m * size + k] === 1 && values[m * size + k]! < largestNegative + epsilon) {
            positiveMask[t * 2 * size + side * size + k] = 1;
            positives++;
          }
        }
      });
      contributes[t] = positives > 0 && negatives > 0 ? 1 : 0;
    }
    const positiveRows = tf.concat([rows.first, rows.second], 1);
    const positiveTerm = tf.div(
      maskedLogSumExp(tf.mul(tf.sub(base, positiveRows), alpha), tf.tensor2d(positiveMask, [pairCount, 2 * size], 'bool'), true),
      alpha,
    );
    const arcSimilarities = tf.sub(1, tf.div(tf.square(distances), 2));
    const negativeTerm = tf.div(maskedLogSumExp(tf.mul(tf.sub(arcSimilarities, base), beta) as tf.Tensor2D, tf.tensor2d(negativeMask, [pairCount, pairCount], 'bool'), true), beta);
    return { losses: tf.add(positiveTerm, negativeTerm), contributes };
  }
}

/** Per pair, the live distance of the hardest positive of either member (argmax on detached similarities: the smallest S). */
function hardestPositiveDistances(rows: MemberRows, values: ArrayLike<number>, labels: Int32Array, pairs: PositivePairs): tf.Tensor1D {
  const size = labels.length;
  const masks = labelPairMasks(labels);
  // Column side·B + k of [first rows | second rows]: member `side` of the pair against image k.
  const columns = new Int32Array(pairs.first.length);
  for (let t = 0; t < pairs.first.length; t++) {
    let best = Number.POSITIVE_INFINITY;
    [pairs.first[t]!, pairs.second[t]!].forEach((m, side) => {
      for (let k = 0; k < size; k++) {
        if (masks.positive[m * size + k] === 1 && values[m * size + k]! < best) {
          best = values[m * size + k]!;
          columns[t] = side * size + k;
        }
      }
    });
  }
  return distancesFromSimilarities(pickColumns(tf.concat([rows.first, rows.second], 1), columns), 'euclidean');
}

/** Registry entries of the four LoOp losses. */
export const LOOP_LOSSES = [
  defineLoss('loop-triplet', loopTripletOptionsSchema, (options) => new LoopLoss('loop-triplet', options)),
  defineLoss('loop-hphn', loopHphnOptionsSchema, (options) => new LoopLoss('loop-hphn', options)),
  defineLoss('loop-lifted', loopLiftedOptionsSchema, (options) => new LoopLoss('loop-lifted', options)),
  defineLoss('loop-ms', loopMsOptionsSchema, (options) => new LoopLoss('loop-ms', options)),
] as const;
