/**
 * @file The miner a pair loss may take (`loss.miner` of `contrastive`, `circle` and `supcon`), as
 * pytorch-metric-learning passes a miner's tuples to any loss: the mined pairs replace the batch's
 * positive and negative pairs, so a loss over pair masks sees only them (PML's `GenericPairLoss` builds
 * its masks from the tuples the same way). A triplet miner's triplets (a, p, n) give the pairs (a, p)
 * and (a, n). The miners, each on its PML default distance of the L2-normalised embeddings, computed
 * from the detached cosine similarities S:
 *
 * - `multi-similarity` (ε = `epsilon` 0.1; cosine similarity): multi-similarity-miner.ts;
 * - `pair-margin` (`posMargin` 0.2, `negMargin` 0.8; Euclidean distance √(2 − 2S)): pair-margin-miner.ts;
 * - `batch-hard` (Euclidean distance): batch-hard-miner.ts, its triplets as pairs.
 *
 * `null` (the default) keeps every pair.
 */
import { z } from 'zod';
import type { PairMasks } from '../similarity.js';
import { mineBatchHardTriplets } from './batch-hard-miner.js';
import { DEFAULT_MULTI_SIMILARITY_EPSILON, mineMultiSimilarityPairs } from './multi-similarity-miner.js';
import { DEFAULT_PAIR_MARGINS, minePairsByMargin } from './pair-margin-miner.js';
import type { MinedPairs, PairList } from './pairs.js';

/** A pair loss's `miner` option: null (every pair) or one of PML's miners with its options. */
export const pairMinerSchema = z
  .discriminatedUnion('name', [
    z.strictObject({ name: z.literal('multi-similarity'), epsilon: z.number().min(0).default(DEFAULT_MULTI_SIMILARITY_EPSILON) }),
    z.strictObject({ name: z.literal('pair-margin'), posMargin: z.number().default(DEFAULT_PAIR_MARGINS.posMargin), negMargin: z.number().default(DEFAULT_PAIR_MARGINS.negMargin) }),
    z.strictObject({ name: z.literal('batch-hard') }),
  ])
  .nullable()
  .default(null);

/** A parsed `miner` option. */
export type PairMiner = z.output<typeof pairMinerSchema>;

/**
 * The batch's pair masks restricted to the pairs `miner` mines: from the detached similarities
 * `similarities` (row-major B×B) or the batch's Euclidean distances, `euclidean()` (the values the loss
 * computes with).
 */
export function minedPairMasks(similarities: ArrayLike<number>, euclidean: () => ArrayLike<number>, masks: PairMasks, miner: PairMiner): PairMasks {
  if (miner === null) return masks;
  const { size, columns } = masks;
  let pairs: MinedPairs;
  if (miner.name === 'multi-similarity') pairs = mineMultiSimilarityPairs(similarities, masks, miner.epsilon);
  else if (miner.name === 'pair-margin') pairs = minePairsByMargin(euclidean(), masks, miner.posMargin, miner.negMargin);
  else {
    const triplets = mineBatchHardTriplets(euclidean(), masks);
    pairs = { positive: { anchors: triplets.anchors, others: triplets.positives }, negative: { anchors: triplets.anchors, others: triplets.negatives } };
  }
  const maskOf = (list: PairList): Uint8Array => {
    const mask = new Uint8Array(size * columns);
    list.anchors.forEach((a, k) => (mask[a * columns + list.others[k]!] = 1));
    return mask;
  };
  return { size, columns, positive: maskOf(pairs.positive), negative: maskOf(pairs.negative) };
}
