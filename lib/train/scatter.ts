/**
 * @file The triplet scatter diagram (papers 000, 002, 003): for every anchor, the similarity of its
 * easiest positive (x: the most similar same-label item) and of its hardest negative (y: the most
 * similar other-label item). Points below the diagonal are correctly ordered triplets. Also the
 * histograms of all positive-pair and negative-pair similarities.
 *
 * Computed exactly over a seeded sample of at most `maxPoints` items (all pairs within the sample, in
 * float64), so the cost is bounded whatever the set size. Anchors without a positive in the sample
 * are left out of the scatter.
 */
import { Rng } from '../util/rng.js';

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
}

/** Computes the diagram for L2-normalised `vectors` (count x dim) with `labels`. */
export function tripletScatter(
  vectors: Float32Array,
  count: number,
  dim: number,
  labels: ArrayLike<number | string>,
  options: { maxPoints: number; seed: number; bins?: number },
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
  for (let a = 0; a < n; a++) {
    const ra = (rows[a] as number) * dim;
    for (let b = a + 1; b < n; b++) {
      const rb = (rows[b] as number) * dim;
      let s = 0;
      for (let j = 0; j < dim; j++) s += (vectors[ra + j] as number) * (vectors[rb + j] as number);
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
  let correct = 0;
  for (let a = 0; a < n; a++) {
    const x = bestPositive[a] as number;
    const y = bestNegative[a] as number;
    if (x === -Infinity) continue;
    points.push({ x, y });
    if (y < x) correct++;
  }
  return { points, correctFraction: points.length > 0 ? correct / points.length : 0, sampled: n, bins, positiveCounts, negativeCounts };
}
