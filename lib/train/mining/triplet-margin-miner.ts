/**
 * @file Triplet lists: all valid triplets of a batch, and pytorch-metric-learning's
 * `TripletMarginMiner` on detached distances (docs/methods.md section 6). With
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

/**
 * Triplets grouped by anchor, the dense form the triplet losses compute on: anchor a's distinct
 * positives fill slots `0 .. c_a − 1` of its row (c_a ≤ `width`, the largest count; the rest are
 * empty), and the negatives paired with slot s are marked in a B-wide mask.
 */
export interface TripletSlots {
  /** Slots per anchor: the largest number of distinct positives of one anchor (0 without triplets). */
  readonly width: number;
  /** Row-major B×width: the positive in slot (a, s), or -1 for an empty slot. */
  readonly positives: Int32Array;
  /** Row-major B×width×C (C the columns, B for the batch itself): 1 where `(a, positives[a, s], n)` is a triplet of the list. */
  readonly negatives: Uint8Array;
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
  const columns = masks.columns;
  return tripletsWhere(masks, (a, p, n) => {
    const tripletMargin = distances[a * columns + n]! - distances[a * columns + p]!;
    if (tripletMargin > margin) return false;
    if (type === 'hard') return tripletMargin <= 0;
    if (type === 'semihard') return tripletMargin > 0;
    return true;
  });
}

/**
 * Groups a triplet list of a batch of `size` anchors by anchor (slots in order of first appearance);
 * positives and negatives index `columns` items (the batch itself unless given).
 */
export function groupTripletsByAnchor(triplets: TripletList, size: number, columns: number = size): TripletSlots {
  const slotOf = new Map<number, number>();
  const used = new Int32Array(size);
  for (let t = 0; t < triplets.anchors.length; t++) {
    const key = triplets.anchors[t]! * columns + triplets.positives[t]!;
    if (!slotOf.has(key)) slotOf.set(key, used[triplets.anchors[t]!]!++);
  }
  const width = used.reduce((max, count) => Math.max(max, count), 0);
  const positives = new Int32Array(size * width).fill(-1);
  const negatives = new Uint8Array(size * width * columns);
  for (let t = 0; t < triplets.anchors.length; t++) {
    const anchor = triplets.anchors[t]!;
    const slot = anchor * width + slotOf.get(anchor * columns + triplets.positives[t]!)!;
    positives[slot] = triplets.positives[t]!;
    negatives[slot * columns + triplets.negatives[t]!] = 1;
  }
  return { width, positives, negatives };
}

function tripletsWhere(masks: PairMasks, keep: (anchor: number, positive: number, negative: number) => boolean): TripletList {
  const { size, columns } = masks;
  const anchors: number[] = [];
  const positives: number[] = [];
  const negatives: number[] = [];
  for (let a = 0; a < size; a++) {
    for (let p = 0; p < columns; p++) {
      if (masks.positive[a * columns + p] !== 1) continue;
      for (let n = 0; n < columns; n++) {
        if (masks.negative[a * columns + n] === 1 && keep(a, p, n)) {
          anchors.push(a);
          positives.push(p);
          negatives.push(n);
        }
      }
    }
  }
  return { anchors: Int32Array.from(anchors), positives: Int32Array.from(positives), negatives: Int32Array.from(negatives) };
}
