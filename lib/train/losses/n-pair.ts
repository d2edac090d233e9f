/**
 * @file Multi-class N-pair loss (Sohn, "Improved Deep Metric Learning with Multi-class N-pair Loss
 * Objective", NIPS 2016) with an NCA temperature τ (paper 002's baseline; docs/methods.md section 1.2).
 * Each class with at least two images in the batch contributes one pair: its two lowest batch
 * indices (anchor a_k, positive p_k), as pytorch-metric-learning's `NPairsLoss` picks them. The
 * negatives of pair k are the positives of the other pairs:
 *
 *     L_k = −u(S_{a_k p_k}) + logsumexp([u(S_{a_k p_k})] ∪ {u_n(S_{a_k p_j}) : j ≠ k})
 *
 * with the exponents of nca.ts (order 1: `S/τ`), averaged over the pairs. At τ = 1 and order 1 this
 * is `NPairsLoss` on cosine similarities. With group size 2 paper 002 treats N-pair as EP/HP
 * (every image an anchor, all negatives of the batch); use `ep` to reproduce that reading.
 *
 * Options: `temperature` (0.1), `order` (1), `reduction` (mean), `validity` (`exists`: a pair needs at
 * least one other pair; `positive-similarity`: also `S_{a_k p_k} > 0` and its hardest negative > 0).
 * Images of classes with a single image in the batch take no part. `validCount` counts the kept
 * pairs, `totalCount` the distinct labels of the batch.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { oneHotRows, pickColumns, selectRows } from '../similarity.js';
import { isValidTuple, ncaOptionsShape } from './easy-positive.js';
import { BaseMetricLoss } from './base-loss.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';
import { ncaSetLosses } from './nca.js';
import { parseSpec } from '../../util/parse-spec.js';
import { reduceLosses, zeroLoss } from './reducers.js';
import { defineLoss } from './loss-entry.js';

/** Options of the N-pair loss. */
export const nPairOptionsSchema = z.strictObject({ ...ncaOptionsShape });

/** Options as written in a config (every field optional). */
export type NPairOptions = z.input<typeof nPairOptionsSchema>;

/** Sohn's multi-class N-pair loss with NCA temperature (see the file comment). */
export class NPairLoss extends BaseMetricLoss<z.output<typeof nPairOptionsSchema>> {
  constructor(options: NPairOptions = {}) {
    super('npair', parseSpec(nPairOptionsSchema, options, 'loss'));
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const { size, labels } = batch;
    const { temperature, order, reduction, validity } = this.options;
    // First and second index of each label, in order of first appearance.
    const first = new Map<number, number>();
    const pairAnchors: number[] = [];
    const pairPositives: number[] = [];
    const paired = new Set<number>();
    for (let i = 0; i < size; i++) {
      const label = labels[i]!;
      const anchor = first.get(label);
      if (anchor === undefined) first.set(label, i);
      else if (!paired.has(label)) {
        paired.add(label);
        pairAnchors.push(anchor);
        pairPositives.push(i);
      }
    }
    const pairCount = pairAnchors.length;
    if (pairCount < 2) return zeroLoss(first.size);
    const similarities = batch.similarities;
    // [K, K]: row k holds S(a_k, p_j) for every pair j; the diagonal is the positive.
    const pairMatrix = tf.matMul(selectRows(similarities, Int32Array.from(pairAnchors)), oneHotRows(Int32Array.from(pairPositives), size), false, true) as tf.Tensor2D;
    const values = pairMatrix.dataSync();
    const kept: number[] = [];
    for (let k = 0; k < pairCount; k++) {
      let hardest = Number.NEGATIVE_INFINITY;
      for (let j = 0; j < pairCount; j++) if (j !== k) hardest = Math.max(hardest, values[k * pairCount + j]!);
      if (isValidTuple(validity, values[k * pairCount + k]!, hardest)) kept.push(k);
    }
    if (kept.length === 0) return zeroLoss(first.size);
    const rows = Int32Array.from(kept);
    const offDiagonal = new Uint8Array(kept.length * pairCount);
    kept.forEach((k, r) => {
      offDiagonal.fill(1, r * pairCount, (r + 1) * pairCount);
      offDiagonal[r * pairCount + k] = 0;
    });
    const keptRows = selectRows(pairMatrix, rows);
    const losses = ncaSetLosses(
      pickColumns(keptRows, rows),
      keptRows,
      tf.tensor2d(offDiagonal, [kept.length, pairCount], 'bool'),
      order,
      temperature,
    );
    return { loss: reduceLosses(losses, reduction), validCount: kept.length, totalCount: first.size };
  }
}

/** Registry entry: `npair`. */
export const N_PAIR_LOSS = defineLoss('npair', nPairOptionsSchema, (options) => new NPairLoss(options));
