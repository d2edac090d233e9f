/**
 * @file The multi-similarity miner (Wang et al., "Multi-Similarity Loss with General Pair Weighting
 * for Deep Metric Learning", CVPR 2019, section 4.1; docs/methods.md section 6), on detached cosine
 * similarities. For anchor i, with ε = 0.1 by default:
 *
 * - keep positive p when `S_ip − ε < max_{n ∈ N(i)} S_in` (a positive less similar than the hardest
 *   negative plus ε);
 * - keep negative n when `S_in + ε > min_{p ∈ P(i)} S_ip` (a negative more similar than the hardest
 *   positive minus ε).
 *
 * An anchor without positives keeps no negative and one without negatives keeps no positive, as in
 * pytorch-metric-learning's `MultiSimilarityMiner`. Both conditions reduce to
 * `max_n S_in + ε > min_p S_ip` for the hardest pair, so each anchor keeps pairs of both kinds or
 * none.
 */
import { invalidParameterError } from '../../errors.js';
import type { PairMasks } from '../similarity.js';
import { checkMatrix } from './anchor-selection.js';
import { pairsWhere, type MinedPairs } from './pairs.js';

/** The paper's (and pytorch-metric-learning's) ε. */
export const DEFAULT_MULTI_SIMILARITY_EPSILON = 0.1;

/** Mines the informative pairs of each anchor (see the file comment), in row-major order. */
export function mineMultiSimilarityPairs(
  similarities: ArrayLike<number>,
  masks: PairMasks,
  epsilon: number = DEFAULT_MULTI_SIMILARITY_EPSILON,
): MinedPairs {
  checkMatrix(similarities, masks, 'similarities');
  if (!Number.isFinite(epsilon) || epsilon < 0) throw invalidParameterError('epsilon', 'a finite number >= 0', epsilon);
  const { size, columns } = masks;
  const hardestPositive = new Float64Array(size).fill(Number.POSITIVE_INFINITY);
  const hardestNegative = new Float64Array(size).fill(Number.NEGATIVE_INFINITY);
  for (let a = 0; a < size; a++) {
    for (let j = 0; j < columns; j++) {
      const s = similarities[a * columns + j]!;
      if (masks.positive[a * columns + j] === 1) hardestPositive[a] = Math.min(hardestPositive[a]!, s);
      else if (masks.negative[a * columns + j] === 1) hardestNegative[a] = Math.max(hardestNegative[a]!, s);
    }
  }
  return {
    positive: pairsWhere(
      size,
      columns,
      (a, j) => masks.positive[a * columns + j] === 1 && similarities[a * columns + j]! - epsilon < hardestNegative[a]!,
    ),
    negative: pairsWhere(
      size,
      columns,
      (a, j) => masks.negative[a * columns + j] === 1 && similarities[a * columns + j]! + epsilon > hardestPositive[a]!,
    ),
  };
}
