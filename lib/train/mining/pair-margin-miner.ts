/**
 * @file pytorch-metric-learning's `PairMarginMiner` on detached distances: the positive pairs farther
 * than `posMargin` (`d_ap > m⁺`) and the negative pairs nearer than `negMargin` (`d_an < m⁻`), the
 * pairs a contrastive loss with those margins would not ignore; PML's defaults m⁺ = 0.2, m⁻ = 0.8.
 * Ordered pairs in row-major order (pairs.ts).
 */
import { invalidParameterError } from '../../errors.js';
import type { PairMasks } from '../similarity.js';
import { checkMatrix } from './anchor-selection.js';
import { pairsWhere, type MinedPairs } from './pairs.js';

/** PML's default margins. */
export const DEFAULT_PAIR_MARGINS = { posMargin: 0.2, negMargin: 0.8 } as const;

/** The pairs that violate their margin (see the file comment); `distances` row-major B×B. */
export function minePairsByMargin(distances: ArrayLike<number>, masks: PairMasks, posMargin: number, negMargin: number): MinedPairs {
  checkMatrix(distances, masks, 'distances');
  if (!Number.isFinite(posMargin)) throw invalidParameterError('posMargin', 'a finite number', posMargin);
  if (!Number.isFinite(negMargin)) throw invalidParameterError('negMargin', 'a finite number', negMargin);
  const { size, columns } = masks;
  return {
    positive: pairsWhere(size, columns, (a, j) => masks.positive[a * columns + j] === 1 && distances[a * columns + j]! > posMargin),
    negative: pairsWhere(size, columns, (a, j) => masks.negative[a * columns + j] === 1 && distances[a * columns + j]! < negMargin),
  };
}
