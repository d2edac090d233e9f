/**
 * @file Randomised negative selection per anchor, on detached non-squared Euclidean distances of
 * L2-normalised embeddings, drawing from a seeded {@link Rng} (docs/methods.md sections 5.2 and 6; the
 * batchminers of Roth et al.'s "Revisiting Training Strategies and Generalization Performance in Deep
 * Metric Learning" framework, which paper 004 builds on):
 *
 * - semi-hard: a negative drawn uniformly among those with `d_ap < d_an < d_ap + margin` (Roth's
 *   `semihard`); when there is none, `fallback: 'random'` draws uniformly among all negatives (Roth)
 *   and `'drop'` leaves the anchor without a negative;
 * - distance-weighted (Wu et al., "Sampling Matters in Deep Embedding Learning", ICCV 2017): a negative
 *   drawn with probability ∝ `q(d)⁻¹`, `log q(d)⁻¹ = (2 − D) log d − ((D − 3)/2) log(1 − d²/4)` for
 *   dimension D, with d clamped at `cutoff` (0.5) from below; non-finite log-weights (d → 2) get weight
 *   0, the rest are max-subtracted before the exponential; `upperCutoff` (null: Roth, who disabled it;
 *   1.4: Wu et al. and pytorch-metric-learning) zeroes the weights of d ≥ upperCutoff. An anchor
 *   whose weights are all 0 gets no negative.
 *
 * Only anchors with a positive (`positives[a] ≥ 0`) draw; each draw consumes the generator in anchor
 * order, so the same generator state and distances give the same negatives. Returns the negative per
 * anchor, -1 where none.
 */
import { invalidParameterError } from '../../errors.js';
import type { Rng } from '../../util/rng.js';
import type { PairMasks } from '../similarity.js';
import { checkMatrix } from './anchor-selection.js';

/** What a semi-hard draw does for an anchor without a semi-hard negative. */
export type SemiHardFallback = 'random' | 'drop';

/** Options of {@link sampleDistanceWeightedNegatives}. */
export interface DistanceWeightedOptions {
  /** Embedding dimension D. */
  dim: number;
  /** Lower clamp of d (0.5). */
  cutoff: number;
  /** Weights of d ≥ upperCutoff are 0; null disables the cut. */
  upperCutoff: number | null;
}

/** Index drawn with probability ∝ `weights[i]` (their sum must be > 0). */
function drawWeighted(weights: Float64Array, total: number, rng: Rng): number {
  let u = rng.next() * total;
  let last = -1;
  for (let i = 0; i < weights.length; i++) {
    if (weights[i]! <= 0) continue;
    last = i;
    u -= weights[i]!;
    if (u < 0) return i;
  }
  return last;
}

function checkPositives(positives: Int32Array, size: number): void {
  if (!(positives instanceof Int32Array) || positives.length !== size) {
    throw invalidParameterError('positives', `an Int32Array of ${size} positive indices (-1 for none)`, positives);
  }
}

/** Roth's semi-hard negative per anchor (see the file comment). */
export function sampleSemiHardNegatives(
  distances: ArrayLike<number>,
  masks: PairMasks,
  positives: Int32Array,
  margin: number,
  fallback: SemiHardFallback,
  rng: Rng,
): Int32Array {
  checkMatrix(distances, masks, 'distances');
  const size = masks.size;
  checkPositives(positives, size);
  const negatives = new Int32Array(size).fill(-1);
  for (let a = 0; a < size; a++) {
    const p = positives[a]!;
    if (p < 0) continue;
    const dap = distances[a * size + p]!;
    const all: number[] = [];
    const semiHard: number[] = [];
    for (let n = 0; n < size; n++) {
      if (masks.negative[a * size + n] !== 1) continue;
      all.push(n);
      const dan = distances[a * size + n]!;
      if (dan > dap && dan < dap + margin) semiHard.push(n);
    }
    const pool = semiHard.length > 0 ? semiHard : fallback === 'random' ? all : [];
    if (pool.length > 0) negatives[a] = pool[rng.nextInt(pool.length)]!;
  }
  return negatives;
}

/** Distance-weighted negative per anchor (see the file comment). */
export function sampleDistanceWeightedNegatives(
  distances: ArrayLike<number>,
  masks: PairMasks,
  positives: Int32Array,
  options: DistanceWeightedOptions,
  rng: Rng,
): Int32Array {
  checkMatrix(distances, masks, 'distances');
  const size = masks.size;
  checkPositives(positives, size);
  const { dim, cutoff, upperCutoff } = options;
  const negatives = new Int32Array(size).fill(-1);
  const logWeights = new Float64Array(size);
  const weights = new Float64Array(size);
  for (let a = 0; a < size; a++) {
    if (positives[a]! < 0) continue;
    let top = Number.NEGATIVE_INFINITY;
    for (let n = 0; n < size; n++) {
      logWeights[n] = Number.NaN;
      const d = distances[a * size + n]!;
      if (masks.negative[a * size + n] !== 1 || (upperCutoff !== null && d >= upperCutoff)) continue;
      const clamped = Math.max(d, cutoff);
      const value = (2 - dim) * Math.log(clamped) - ((dim - 3) / 2) * Math.log(1 - (clamped * clamped) / 4);
      if (!Number.isFinite(value)) continue;
      logWeights[n] = value;
      top = Math.max(top, value);
    }
    let total = 0;
    for (let n = 0; n < size; n++) {
      weights[n] = Number.isNaN(logWeights[n]!) ? 0 : Math.exp(logWeights[n]! - top);
      total += weights[n]!;
    }
    if (total > 0) negatives[a] = drawWeighted(weights, total, rng);
  }
  return negatives;
}
