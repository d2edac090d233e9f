/**
 * @file Result type shared by the exact and approximate (HNSW) searches.
 */

/**
 * The k nearest gallery items of a block of queries, nearest first.
 * Row q holds `k` entries at offsets [q*k, (q+1)*k). Rows with fewer than k neighbours (a gallery smaller
 * than k after self-exclusion, or HNSW returning fewer) are padded with index -1 and similarity -Infinity.
 */
export interface NeighbourBlock {
  /** Index of the first query in this block (within the whole query set). */
  queryOffset: number;
  /** Number of queries in this block. */
  queryCount: number;
  /** Neighbours per query. */
  k: number;
  /** Gallery row indices, length queryCount * k. */
  indices: Int32Array;
  /** Cosine similarities (inner products of L2-normalised vectors), length queryCount * k. */
  similarities: Float32Array;
  /**
   * Only when the search was asked for them (exact search's `withScores`): each query's similarity to
   * every gallery row, row-major [queryCount, galleryCount], the query's own row included.
   */
  scores?: Float32Array;
}

