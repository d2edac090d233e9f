/**
 * @file Pair lists, the currency of the pair-based miners and losses (as pytorch-metric-learning's
 * `(a1, p, a2, n)` tuples): ordered `(anchor, other)` pairs in row-major order, i.e. both orders of
 * every unordered pair when all pairs are taken.
 */
import type { PairMasks } from '../similarity.js';

/** Ordered pairs `(anchors[k], others[k])`. */
export interface PairList {
  readonly anchors: Int32Array;
  readonly others: Int32Array;
}

/** Positive and negative pairs of one batch. */
export interface MinedPairs {
  readonly positive: PairList;
  readonly negative: PairList;
}

/** Every ordered positive pair and every ordered negative pair of the batch (no mining). */
export function allPairs(masks: PairMasks): MinedPairs {
  return {
    positive: pairsWhere(masks.size, masks.columns, (a, j) => masks.positive[a * masks.columns + j] === 1),
    negative: pairsWhere(masks.size, masks.columns, (a, j) => masks.negative[a * masks.columns + j] === 1),
  };
}

/** Ordered pairs `(a, j)` (a < `rows`, j < `columns`) for which `keep(a, j)` holds, in row-major order. */
export function pairsWhere(rows: number, columns: number, keep: (anchor: number, other: number) => boolean): PairList {
  const anchors: number[] = [];
  const others: number[] = [];
  for (let a = 0; a < rows; a++) {
    for (let j = 0; j < columns; j++) {
      if (keep(a, j)) {
        anchors.push(a);
        others.push(j);
      }
    }
  }
  return { anchors: Int32Array.from(anchors), others: Int32Array.from(others) };
}
