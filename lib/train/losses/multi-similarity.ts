/**
 * @file Multi-similarity loss (Wang et al., "Multi-Similarity Loss with General Pair Weighting for
 * Deep Metric Learning", CVPR 2019) as pytorch-metric-learning's `MultiSimilarityLoss` with the
 * `MultiSimilarityMiner` (docs/methods.md section 6), on cosine similarities. For anchor i with mined
 * positives P̂(i) and negatives N̂(i):
 *
 *     l_i = (1/α) log(1 + Σ_{p ∈ P̂(i)} e^{−α (S_ip − λ)}) + (1/β) log(1 + Σ_{n ∈ N̂(i)} e^{β (S_in − λ)})
 *
 * (a term whose set is empty is 0). Options: `alpha` α = 2, `beta` β = 50, `base` λ = 0.5 (PML's
 * defaults; Roth et al. use β = 40); `miner`: `multi-similarity` (default, ε = `epsilon` = 0.1) or
 * `none` (all pairs); `reduction`:
 * - `all-rows` (default, PML's MeanReducer): `Σ_i l_i / B` over all B rows, rows without pairs
 *   counting 0. Under the miner an anchor keeps pairs of both kinds or none, so this equals the
 *   original MS code, which skips such anchors but divides by the batch size;
 * - `valid-anchors` (Roth et al.'s implementation): the mean over anchors with at least one mined
 *   positive and one mined negative; the others are skipped.
 *
 * `validCount` counts the rows that contribute (any pair for `all-rows`, both kinds for
 * `valid-anchors`), `totalCount` is B.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { DEFAULT_MULTI_SIMILARITY_EPSILON, mineMultiSimilarityPairs } from '../mining/multi-similarity-miner.js';
import { allPairs, type PairList } from '../mining/pairs.js';
import { maskedLogSumExp } from './masked-ops.js';
import { BaseMetricLoss } from './base-loss.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';
import { parseSpec } from '../../util/parse-spec.js';
import { zeroLoss } from './reducers.js';
import { defineLoss } from './loss-entry.js';
import { crossBatchMemorySchema, withCrossBatchMemory } from './cross-batch-memory.js';

/** Options of the multi-similarity loss. */
export const multiSimilarityOptionsSchema = z.strictObject({
  /** α, the positive scale (2). */
  alpha: z.number().positive().default(2),
  /** β, the negative scale (50, PML; Roth et al. use 40). */
  beta: z.number().positive().default(50),
  /** λ, the similarity offset (0.5). */
  base: z.number().default(0.5),
  /** `multi-similarity` (default) or `none` (all pairs). */
  miner: z.enum(['multi-similarity', 'none']).default('multi-similarity'),
  /** The miner's ε (0.1). */
  epsilon: z.number().min(0).default(DEFAULT_MULTI_SIMILARITY_EPSILON),
  /** `all-rows` (default, PML / original code) or `valid-anchors` (Roth et al.). */
  reduction: z.enum(['all-rows', 'valid-anchors']).default('all-rows'),
  /** A cross-batch memory the batch is compared with (null, default: none; cross-batch-memory.ts). */
  memory: crossBatchMemorySchema,
});

/** Options as written in a config (every field optional). */
export type MultiSimilarityOptions = z.input<typeof multiSimilarityOptionsSchema>;

/** PML's multi-similarity loss (see the file comment). */
export class MultiSimilarityLoss extends BaseMetricLoss<z.output<typeof multiSimilarityOptionsSchema>> {
  constructor(options: MultiSimilarityOptions = {}) {
    super('multi-similarity', parseSpec(multiSimilarityOptionsSchema, options, 'loss'));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { size, masks } = batch;
    const { alpha, beta, base, miner, epsilon, reduction } = this.options;
    const similarities = batch.similarities;
    const pairs = miner === 'none' ? allPairs(masks) : mineMultiSimilarityPairs(similarities.dataSync(), masks, epsilon);
    const hasPositive = rowsWithPairs(pairs.positive, size);
    const hasNegative = rowsWithPairs(pairs.negative, size);
    const contributes = new Float32Array(size);
    let validCount = 0;
    for (let i = 0; i < size; i++) {
      const counts = reduction === 'all-rows' ? hasPositive[i] === 1 || hasNegative[i] === 1 : hasPositive[i] === 1 && hasNegative[i] === 1;
      if (counts) {
        contributes[i] = 1;
        validCount++;
      }
    }
    if (validCount === 0) return zeroLoss(size);
    const positiveTerm = tf.div(
      maskedLogSumExp(tf.mul(tf.sub(base, similarities), alpha), pairMask(pairs.positive, size, masks.columns), true),
      alpha,
    );
    const negativeTerm = tf.div(
      maskedLogSumExp(tf.mul(tf.sub(similarities, base), beta), pairMask(pairs.negative, size, masks.columns), true),
      beta,
    );
    const rowLosses = tf.mul(tf.add(positiveTerm, negativeTerm), contributes);
    const divisor = reduction === 'all-rows' ? size : validCount;
    return { loss: tf.div(tf.sum(rowLosses), divisor), validCount, totalCount: size };
  }
}

function rowsWithPairs(pairs: PairList, size: number): Uint8Array {
  const has = new Uint8Array(size);
  for (const a of pairs.anchors) has[a] = 1;
  return has;
}

function pairMask(pairs: PairList, size: number, columns: number): tf.Tensor2D {
  const mask = new Uint8Array(size * columns);
  for (let k = 0; k < pairs.anchors.length; k++) mask[pairs.anchors[k]! * columns + pairs.others[k]!] = 1;
  return tf.tensor2d(mask, [size, columns], 'bool');
}

/** Registry entry: `multi-similarity`. */
export const MULTI_SIMILARITY_LOSS = defineLoss('multi-similarity', multiSimilarityOptionsSchema, (options) => withCrossBatchMemory(new MultiSimilarityLoss(options)));
