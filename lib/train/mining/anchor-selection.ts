/**
 * @file Per-anchor selection of one positive and one negative on detached similarities (paper 002,
 * Xuan, Stylianou & Pless, "Improved Embeddings with Easy Positive Triplet Mining", WACV 2020,
 * section 3; docs/methods.md section 1.1). Over the batch, for anchor a:
 *
 * - easy positive `ep(a) = argmax_{j: P_aj} S_aj`, hard positive `hp(a) = argmin_{j: P_aj} S_aj`;
 * - hard negative `hn(a) = argmax_{j: N_aj} S_aj`, easy negative `en(a) = argmin_{j: N_aj} S_aj`;
 * - semi-hard negative relative to the chosen positive p:
 *   `shn(a) = argmax_{j: N_aj, S_aj < S_ap} S_aj` (the paper's strict rule; `inclusive` gives the
 *   authors' code's `S_aj ≤ S_ap`, docs/methods.md Q4).
 *
 * Ties: the lowest index wins (torch's `max` in the authors' code). Near-duplicate positives
 * (`S > 0.9999` by default, as in the authors' code) are skipped; an anchor whose positives are all
 * near-duplicates has no positive. The selection is plain JavaScript over values read back from the
 * similarity tensor, so no gradient flows through it.
 */
import { invalidParameterError } from '../../errors.js';
import type { PairMasks } from '../similarity.js';

/** The authors' near-duplicate threshold: positives with `S > 0.9999` are ignored. */
export const DEFAULT_DUPLICATE_THRESHOLD = 0.9999;

/** One selected partner per anchor. */
export interface AnchorSelection {
  /** Selected index per anchor, `-1` where no candidate qualifies. */
  readonly index: Int32Array;
  /** `S[a, index[a]]`, NaN where `index[a]` is -1. */
  readonly similarity: Float32Array;
  /** Number of anchors with a selection (`index[a] ≥ 0`). */
  readonly found: number;
}

/** `easy`: the most similar positive; `hard`: the least similar. */
export type PositiveStrategy = 'easy' | 'hard';

/** `hard`: the most similar negative; `semihard`: the most similar one below the positive; `easy`: the least similar. */
export type NegativeStrategy = 'hard' | 'semihard' | 'easy';

/** The semi-hard condition: `strict` is `S_an < S_ap` (paper 002), `inclusive` is `S_an ≤ S_ap` (authors' code). */
export type SemiHardRule = 'strict' | 'inclusive';

/** Options of {@link selectPositives}. */
export interface PositiveSelectionOptions {
  strategy: PositiveStrategy;
  /** Positives with `S > duplicateThreshold` are skipped; `null` keeps them. Default 0.9999. */
  duplicateThreshold?: number | null;
}

/** Options of {@link selectNegatives}. */
export interface NegativeSelectionOptions {
  strategy: NegativeStrategy;
  /** The chosen positives; required by `semihard` (anchors without a positive get no negative). */
  positives?: AnchorSelection;
  /** Default `strict`. */
  semiHardRule?: SemiHardRule;
}

/**
 * Selects one positive per anchor from the row-major B×B similarities `similarities` (read back from
 * the live matrix).
 */
export function selectPositives(
  similarities: ArrayLike<number>,
  masks: PairMasks,
  options: PositiveSelectionOptions,
): AnchorSelection {
  checkMatrix(similarities, masks, 'similarities');
  const threshold = options.duplicateThreshold === undefined ? DEFAULT_DUPLICATE_THRESHOLD : options.duplicateThreshold;
  if (threshold !== null && !Number.isFinite(threshold)) {
    throw invalidParameterError('duplicateThreshold', 'a finite number or null', threshold);
  }
  const wantLargest = strategyOf(options.strategy, ['easy', 'hard'], 'strategy') === 'easy';
  return select(similarities, masks.size, (a, j, s) => masks.positive[a * masks.size + j] === 1 && (threshold === null || s <= threshold), wantLargest);
}

/** Selects one negative per anchor (see the file comment for the rules). */
export function selectNegatives(
  similarities: ArrayLike<number>,
  masks: PairMasks,
  options: NegativeSelectionOptions,
): AnchorSelection {
  checkMatrix(similarities, masks, 'similarities');
  const strategy = strategyOf(options.strategy, ['hard', 'semihard', 'easy'], 'strategy');
  const size = masks.size;
  const isNegative = (a: number, j: number): boolean => masks.negative[a * size + j] === 1;
  if (strategy !== 'semihard') return select(similarities, size, isNegative, strategy === 'hard');
  const positives = options.positives;
  if (positives === undefined || positives.index.length !== size) {
    throw invalidParameterError('positives', `the positive selection of the same ${size} anchors (required by semihard)`, positives);
  }
  const inclusive = strategyOf(options.semiHardRule ?? 'strict', ['strict', 'inclusive'], 'semiHardRule') === 'inclusive';
  return select(
    similarities,
    size,
    (a, j, s) => {
      if (positives.index[a]! < 0 || !isNegative(a, j)) return false;
      const sap = positives.similarity[a]!;
      return inclusive ? s <= sap : s < sap;
    },
    true,
  );
}

function select(
  similarities: ArrayLike<number>,
  size: number,
  isCandidate: (anchor: number, other: number, similarity: number) => boolean,
  wantLargest: boolean,
): AnchorSelection {
  const index = new Int32Array(size).fill(-1);
  const similarity = new Float32Array(size).fill(Number.NaN);
  let found = 0;
  for (let a = 0; a < size; a++) {
    let best = -1;
    let bestValue = 0;
    for (let j = 0; j < size; j++) {
      const s = similarities[a * size + j]!;
      if (!isCandidate(a, j, s)) continue;
      // Strict comparison: on a tie the earlier (lower) index stays.
      if (best < 0 || (wantLargest ? s > bestValue : s < bestValue)) {
        best = j;
        bestValue = s;
      }
    }
    if (best >= 0) {
      index[a] = best;
      similarity[a] = bestValue;
      found++;
    }
  }
  return { index, similarity, found };
}

function strategyOf<T extends string>(value: T, allowed: readonly T[], name: string): T {
  if (!allowed.includes(value)) throw invalidParameterError(name, `one of ${allowed.join(', ')}`, value);
  return value;
}

/** Checks that a row-major similarity (or distance) matrix matches the masks' batch size. */
export function checkMatrix(values: ArrayLike<number>, masks: PairMasks, name: string): void {
  if (values.length !== masks.size * masks.columns) {
    throw invalidParameterError(name, `a row-major ${masks.size}x${masks.columns} matrix (${masks.size * masks.columns} values)`, values);
  }
}
