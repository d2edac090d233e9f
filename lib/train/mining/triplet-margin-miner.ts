/**
 * @file Triplet lists: all valid triplets of a batch, and pytorch-metric-learning's
 * `TripletMarginMiner` on detached distances (METHODS.md section 6). With
 * `m(a, p, n) = d_an − d_ap` and margin μ:
 *
 * - `all`: `m ≤ μ` (every triplet that violates the margin);
 * - `hard`: `m ≤ 0` (the negative is at least as close as the positive);
 * - `semihard`: `0 < m ≤ μ`.
 *
 * Triplets are listed in lexicographic `(a, p, n)` order, as `get_all_triplets_indices` does.
 */
import { invalidParameterError } from '../../errors.js';
import type { PairMasks } from '../similarity.js';
import { checkMatrix } from './anchor-selection.js';

/** Triplets `(anchors[k], positives[k], negatives[k])`. */
export interface TripletList {
  readonly anchors: Int32Array;
  readonly positives: Int32Array;
  readonly negatives: Int32Array;
}

/** Which margin condition {@link mineTripletsByMargin} keeps. */
export type TripletMarginMinerType = 'all' | 'hard' | 'semihard';

const MINER_TYPES: readonly TripletMarginMinerType[] = ['all', 'hard', 'semihard'];

/** Every valid triplet: `P_ap` and `N_an`. */
export function allTriplets(masks: PairMasks): TripletList {
  return tripletsWhere(masks, () => true);
}

/** The triplets whose margin `d_an − d_ap` satisfies the `type` condition (see the file comment). */
export function mineTripletsByMargin(
  distances: ArrayLike<number>,
  masks: PairMasks,
  type: TripletMarginMinerType,
  margin: number,
): TripletList {
  checkMatrix(distances, masks, 'distances');
  if (!MINER_TYPES.includes(type)) throw invalidParameterError('type', `one of ${MINER_TYPES.join(', ')}`, type);
  if (!Number.isFinite(margin)) throw invalidParameterError('margin', 'a finite number', margin);
  const size = masks.size;
  return tripletsWhere(masks, (a, p, n) => {
    const tripletMargin = distances[a * size + n]! - distances[a * size + p]!;
    if (tripletMargin > margin) return false;
    if (type === 'hard') return tripletMargin <= 0;
    if (type === 'semihard') return tripletMargin > 0;
    return true;
  });
}

function tripletsWhere(masks: PairMasks, keep: (anchor: number, positive: number, negative: number) => boolean): TripletList {
  const size = masks.size;
  const anchors: number[] = [];
  const positives: number[] = [];
  const negatives: number[] = [];
  for (let a = 0; a < size; a++) {
    for (let p = 0; p < size; p++) {
      if (masks.positive[a * size + p] !== 1) continue;
      for (let n = 0; n < size; n++) {
        if (masks.negative[a * size + n] === 1 && keep(a, p, n)) {
          anchors.push(a);
          positives.push(p);
          negatives.push(n);
        }
      }
    }
  }
  return { anchors: Int32Array.from(anchors), positives: Int32Array.from(positives), negatives: Int32Array.from(negatives) };
}
