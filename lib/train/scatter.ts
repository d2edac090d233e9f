/**
 * @file The triplet scatter diagram (papers 000, 002, 003): for every anchor, the similarity of its
 * easiest positive (x: the most similar same-label item) and of its hardest negative (y: the most
 * similar other-label item). Points below the diagonal are correctly ordered triplets. Also the
 * histograms of all positive-pair and negative-pair similarities.
 *
 * Computed exactly over a seeded sample of at most `maxPoints` items (all pairs within the sample, in
 * float64), so the cost is bounded whatever the set size. Anchors without a positive in the sample
 * are left out of the scatter.
 *
 * LoOp (paper 001, issue 5; option `loop`): a second series with the synthetic optimal negatives the
 * LoOp losses train against. The sample's items are paired as the losses pair a batch
 * (`pairPositives`: each label's items consecutively in sample order; an odd last item stays
 * unpaired), every couple of pairs of different labels is solved by the losses' own `solveCouples`
 * (geometry `arc` or `segment`, as the run's loss), and each anchor in a pair (i, j) gets the point
 * (x = its easiest-positive similarity, as in the first series; y = `1 − D⁻²/2`), where
 * `D⁻ = min over the other-label pairs (k, l) of d_ijkl` is the LoOp optimal (minimum) distance between
 * the arc (segment) i→j and the arc (segment) k→l. `1 − d²/2` is the scatter's conversion of a
 * distance to a similarity: for unit vectors `‖u − v‖² = 2 − 2 u·v`, so on arcs (whose points are unit
 * vectors) it is exactly the cosine of the two optimal points, and for segments it is the similarity
 * that distance has on the sphere (the loop-ms convention `s = 1 − d²/2`). Since both arcs (segments)
 * contain their endpoints, `D⁻ ≤ ‖x_a − x_n‖` for the anchor a and every paired other-label item n, so
 * the synthetic y is at least the real similarity of the anchor to any paired negative: with every
 * sampled item paired it is at least the real hardest-negative y. Couples are all pairs of pairs
 * (the losses' `all` rule, whatever the loss's `negatives` option), i.e. the hardest synthetic negative.
 */
import { Rng } from '../util/rng.js';
import { couplePairs, pairPositives, solveCouples } from './losses/loop.js';

/** The LoOp series of the diagram (see the file comment). */
export interface LoopScatterSeries {
  /** The geometry of the optimal points: great-circle arcs or straight segments. */
  geometry: 'arc' | 'segment';
  /** Positive pairs formed in the sample, and couples of pairs of different labels solved. */
  pairs: number;
  couples: number;
  /**
   * Per paired anchor with at least one couple: x (its easiest-positive similarity), y (the similarity
   * `1 − D⁻²/2` of its pair's optimal synthetic negative) and `point`, the index of the same anchor in
   * {@link TripletScatter.points} (whose y is the real hardest-negative similarity).
   */
  points: Array<{ x: number; y: number; point: number }>;
  /** Fraction of these points with y < x. */
  correctFraction: number;
}

/** The diagram's data. */
export interface TripletScatter {
  /** Per anchor with a positive: easiest-positive similarity x and hardest-negative similarity y. */
  points: Array<{ x: number; y: number }>;
  /** Fraction of those anchors with y < x. */
  correctFraction: number;
  /** Items sampled. */
  sampled: number;
  /** Histogram bin edges: `bins` equal bins over [-1, 1]. */
  bins: number;
  positiveCounts: number[];
  negativeCounts: number[];
  /** The synthetic optimal negatives of a LoOp loss; present only with the `loop` option. */
  loop?: LoopScatterSeries;
}

/** Options of {@link tripletScatter}. */
export interface TripletScatterOptions {
  /** Items sampled at most (seeded). */
  maxPoints: number;
  seed: number;
  /** Histogram bins over [-1, 1]; default 50. */
  bins?: number;
  /** Add the LoOp series for this geometry (the run's loss is a LoOp loss). */
  loop?: { geometry: 'arc' | 'segment' };
}

/** Computes the diagram for L2-normalised `vectors` (count x dim) with `labels`. */
export function tripletScatter(
  vectors: Float32Array,
  count: number,
  dim: number,
  labels: ArrayLike<number | string>,
  options: TripletScatterOptions,
): TripletScatter {
  const bins = options.bins ?? 50;
  let rows = Array.from({ length: count }, (_, i) => i);
  if (count > options.maxPoints) rows = new Rng(options.seed).shuffle(rows).slice(0, options.maxPoints).sort((a, b) => a - b);
  const n = rows.length;
  const positiveCounts = new Array<number>(bins).fill(0);
  const negativeCounts = new Array<number>(bins).fill(0);
  const bin = (s: number): number => Math.min(bins - 1, Math.max(0, Math.floor(((s + 1) / 2) * bins)));
  const bestPositive = new Float64Array(n).fill(-Infinity);
  const bestNegative = new Float64Array(n).fill(-Infinity);
  // The sample's similarity matrix, kept only for the LoOp series (row-major n x n).
  const similarities = options.loop ? new Float64Array(n * n) : undefined;
  for (let a = 0; a < n; a++) {
    const ra = (rows[a] as number) * dim;
    if (similarities) {
      let self = 0;
      for (let j = 0; j < dim; j++) self += (vectors[ra + j] as number) ** 2;
      similarities[a * n + a] = self;
    }
    for (let b = a + 1; b < n; b++) {
      const rb = (rows[b] as number) * dim;
      let s = 0;
      for (let j = 0; j < dim; j++) s += (vectors[ra + j] as number) * (vectors[rb + j] as number);
      if (similarities) {
        similarities[a * n + b] = s;
        similarities[b * n + a] = s;
      }
      const same = labels[rows[a] as number] === labels[rows[b] as number];
      if (same) {
        positiveCounts[bin(s)] = (positiveCounts[bin(s)] as number) + 1;
        if (s > (bestPositive[a] as number)) bestPositive[a] = s;
        if (s > (bestPositive[b] as number)) bestPositive[b] = s;
      } else {
        negativeCounts[bin(s)] = (negativeCounts[bin(s)] as number) + 1;
        if (s > (bestNegative[a] as number)) bestNegative[a] = s;
        if (s > (bestNegative[b] as number)) bestNegative[b] = s;
      }
    }
  }
  const points: Array<{ x: number; y: number }> = [];
  /** Index in `points` of each sampled anchor, -1 for anchors without a positive. */
  const pointOf = new Int32Array(n).fill(-1);
  let correct = 0;
  for (let a = 0; a < n; a++) {
    const x = bestPositive[a] as number;
    const y = bestNegative[a] as number;
    if (x === -Infinity) continue;
    pointOf[a] = points.length;
    points.push({ x, y });
    if (y < x) correct++;
  }
  const scatter: TripletScatter = { points, correctFraction: points.length > 0 ? correct / points.length : 0, sampled: n, bins, positiveCounts, negativeCounts };
  if (options.loop && similarities) {
    scatter.loop = loopSeries(similarities, n, rows.map((r) => labels[r] as number | string), points, pointOf, options.loop.geometry);
  }
  return scatter;
}

/** The LoOp series over the sample's similarities (see the file comment). */
function loopSeries(
  similarities: Float64Array,
  n: number,
  sampleLabels: Array<number | string>,
  points: ReadonlyArray<{ x: number; y: number }>,
  pointOf: Int32Array,
  geometry: 'arc' | 'segment',
): LoopScatterSeries {
  const codeOf = new Map<number | string, number>();
  const codes = Int32Array.from(sampleLabels, (label) => {
    if (!codeOf.has(label)) codeOf.set(label, codeOf.size);
    return codeOf.get(label) as number;
  });
  const pairs = pairPositives(codes);
  const couples = couplePairs(pairs, codes, 'all');
  const solved = solveCouples(similarities, n, pairs, couples, geometry);
  // D⁻ per pair: the smallest optimal distance over the couples it is in, on either side.
  const nearest = new Float64Array(pairs.first.length).fill(Infinity);
  for (let q = 0; q < solved.a.length; q++) {
    const d = solved.distances[q] as number;
    const [s, t] = [solved.a[q] as number, solved.b[q] as number];
    if (d < (nearest[s] as number)) nearest[s] = d;
    if (d < (nearest[t] as number)) nearest[t] = d;
  }
  const series: Array<{ x: number; y: number; point: number }> = [];
  let correct = 0;
  for (let t = 0; t < pairs.first.length; t++) {
    const d = nearest[t] as number;
    if (d === Infinity) continue;
    const y = 1 - (d * d) / 2;
    for (const anchor of [pairs.first[t] as number, pairs.second[t] as number]) {
      const point = pointOf[anchor] as number;
      const x = (points[point] as { x: number }).x;
      series.push({ x, y, point });
      if (y < x) correct++;
    }
  }
  series.sort((p, q) => p.point - q.point);
  return { geometry, pairs: pairs.first.length, couples: couples.a.length, points: series, correctFraction: series.length > 0 ? correct / series.length : 0 };
}
