/**
 * @file The similarity and distance matrices the training losses work on, and the label masks that
 * say which entries are positives and negatives (docs/methods.md section 0).
 *
 * - `f_i = x_i / sqrt(Σ x_i² + 1e-12)` (L2 normalisation inside the graph, so gradients lose their
 *   radial component), `S = F Fᵀ` (cosine similarity).
 * - On the unit sphere `d² = ‖f_i − f_j‖² = 2 − 2 S_ij`; the Euclidean distance is computed from S as
 *   `d = sqrt(max(2 − 2S, 1e-12))`. The floor keeps the gradient finite on the diagonal and on exact
 *   duplicates (entries no loss selects but whose zero upstream gradient must not become 0 · ∞ = NaN);
 *   it moves d by at most 1e-6.
 * - Masks come from the labels in JavaScript (B is small): `P_ij = [y_i = y_j ∧ i ≠ j]` (positives),
 *   `N_ij = [y_i ≠ y_j]` (negatives). The diagonal is never a positive or a negative. Against a set of
 *   reference items (a cross-batch memory, losses/cross-batch-memory.ts) the masks are B×R, and each
 *   row's own reference item (its copy in the memory) is neither.
 */
import * as tf from '@tensorflow/tfjs';
import { invalidParameterError } from '../errors.js';

/** Added to Σx² before the square root in {@link normalizeEmbeddings}. */
export const NORMALIZATION_EPSILON = 1e-12;

/** Floor of `2 − 2S` before the square root in {@link distancesFromSimilarities}. */
export const SQUARED_DISTANCE_FLOOR = 1e-12;

/** Which distance a loss uses on the unit sphere (docs/methods.md Q17: each method keeps its own). */
export type DistanceKind = 'euclidean' | 'squared-euclidean';

/** Row-major B×C label masks: entry `i * columns + j` is 1 where the relation holds. */
export interface PairMasks {
  /** B, the batch size (the rows). */
  readonly size: number;
  /** C, the items each row is paired with: B for the batch itself, R against reference items. */
  readonly columns: number;
  /** 1 where `labels[i] = labels[j]` and `i ≠ j`. */
  readonly positive: Uint8Array;
  /** 1 where `labels[i] ≠ labels[j]`. */
  readonly negative: Uint8Array;
}

/** L2-normalises each row: `x / sqrt(Σx² + 1e-12)`, differentiable (the trainer's normalisation). */
export function normalizeEmbeddings(embeddings: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => tf.div(embeddings, tf.sqrt(tf.add(tf.sum(tf.square(embeddings), 1, true), NORMALIZATION_EPSILON))));
}

/** Cosine similarity matrix `S = F Fᵀ` [B, B] of L2-normalised embeddings F [B, D]. */
export function cosineSimilarityMatrix(normalized: tf.Tensor2D): tf.Tensor2D {
  return tf.matMul(normalized, normalized, false, true);
}

/**
 * Distances on the unit sphere from cosine similarities, elementwise: squared Euclidean
 * `max(2 − 2S, 0)`, Euclidean `sqrt(max(2 − 2S, 1e-12))`.
 */
export function distancesFromSimilarities<T extends tf.Tensor>(similarities: T, kind: DistanceKind): T {
  return tf.tidy(() => {
    const twoMinusTwoS = tf.sub(2, tf.mul(similarities, 2));
    return kind === 'euclidean'
      ? tf.sqrt(tf.maximum(twoMinusTwoS, SQUARED_DISTANCE_FLOOR))
      : tf.relu(twoMinusTwoS);
  }) as T;
}

/**
 * Checks one batch against the {@link MetricLoss} contract: `embeddings` of rank 2 and `labels` an
 * Int32Array with one label per row. Returns B.
 */
export function checkBatch(embeddings: tf.Tensor, labels: Int32Array): number {
  if (embeddings.rank !== 2) {
    throw invalidParameterError('embeddings', 'a tensor of rank 2 [B, D]', `a tensor of shape [${embeddings.shape.join(', ')}]`);
  }
  if (!(labels instanceof Int32Array)) throw invalidParameterError('labels', 'an Int32Array', labels);
  const size = embeddings.shape[0]!;
  if (labels.length !== size) {
    throw invalidParameterError('labels', `an Int32Array of length ${size} (one label per embedding)`, labels);
  }
  return size;
}

/** Positive and negative masks of a batch from its labels (see {@link PairMasks}). */
export function labelPairMasks(labels: Int32Array): PairMasks {
  const size = labels.length;
  const positive = new Uint8Array(size * size);
  const negative = new Uint8Array(size * size);
  for (let i = 0; i < size; i++) {
    const label = labels[i]!;
    for (let j = 0; j < size; j++) {
      if (labels[j] !== label) negative[i * size + j] = 1;
      else if (i !== j) positive[i * size + j] = 1;
    }
  }
  return { size, columns: size, positive, negative };
}

/**
 * Masks [B, R] of a batch's `labels` against reference items' `referenceLabels`: same label and not
 * the row's own reference item `selfColumns[i]` (-1: none) are positives, another label negatives.
 */
export function referencePairMasks(labels: Int32Array, referenceLabels: Int32Array, selfColumns: Int32Array): PairMasks {
  const size = labels.length;
  const columns = referenceLabels.length;
  const positive = new Uint8Array(size * columns);
  const negative = new Uint8Array(size * columns);
  for (let i = 0; i < size; i++) {
    for (let j = 0; j < columns; j++) {
      if (referenceLabels[j] !== labels[i]) negative[i * columns + j] = 1;
      else if (j !== selfColumns[i]) positive[i * columns + j] = 1;
    }
  }
  return { size, columns, positive, negative };
}

/**
 * One-hot rows [K, width] (a constant): row k has a 1 in column `indices[k]`. Selections are
 * applied through these with `matMul` and elementwise products instead of `tf.gather`, whose gradient
 * (`UnsortedSegmentSum`) costs one pass per segment on the cpu backend and does not exist on wasm.
 */
export function oneHotRows(indices: Int32Array, width: number): tf.Tensor2D {
  const values = new Float32Array(indices.length * width);
  for (let k = 0; k < indices.length; k++) values[k * width + indices[k]!] = 1;
  return tf.tensor2d(values, [indices.length, width]);
}

/** Rows `rows[k]` of a live [B, M] matrix as a [K, M] matrix (`onehot(rows) · matrix`). */
export function selectRows(matrix: tf.Tensor2D, rows: Int32Array): tf.Tensor2D {
  return tf.matMul(oneHotRows(rows, matrix.shape[0]), matrix);
}

/** Entry `cols[k]` of each row k of a live [K, M] matrix, as a [K] vector. */
export function pickColumns(matrix: tf.Tensor2D, cols: Int32Array): tf.Tensor1D {
  return tf.sum(tf.mul(matrix, oneHotRows(cols, matrix.shape[1])), 1);
}

/** Rows `rows[k]` of a row-major B×B mask as a [K, B] boolean tensor (a constant). */
export function maskRows(mask: Uint8Array, size: number, rows: Int32Array): tf.Tensor2D {
  const out = new Uint8Array(rows.length * size);
  for (let k = 0; k < rows.length; k++) out.set(mask.subarray(rows[k]! * size, (rows[k]! + 1) * size), k * size);
  return tf.tensor2d(out, [rows.length, size], 'bool');
}

/** A whole row-major B×C mask as a [B, C] boolean tensor (a constant); C = B unless given. */
export function maskTensor(mask: Uint8Array, size: number, columns: number = size): tf.Tensor2D {
  return tf.tensor2d(mask, [size, columns], 'bool');
}
