/**
 * @file EmbeddingSet: N embeddings of dimension D with their ids and labels.
 */

/** Row-major N x D embeddings with one id and one label per row. */
export interface EmbeddingSet {
  /** Row-major, length = count * dim. L2-normalised rows unless stated otherwise. */
  vectors: Float32Array;
  count: number;
  dim: number;
  /** One id per row, unique. */
  ids: string[];
  /** One label per row. */
  labels: string[];
}
