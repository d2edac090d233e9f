/**
 * @file The nearest-centroid step of k-means as GEMM work: every row's nearest centroid and its
 * squared Euclidean distance, through the exact-search kernel (`gemmTopK` in search/gemm-topk.ts).
 *
 * With bias `-|c|^2 / 2` per centroid, the top-1 of `x . c - |c|^2 / 2` is the nearest centroid,
 * since `|x - c|^2 = |x|^2 - 2 (x . c - |c|^2 / 2)`; ties go to the lower centroid index. The distance
 * is recovered from the same score in float64, `max(0, |x|^2 - 2 score)`, so it carries the float32
 * rounding of the score (about 1e-7 of |x|^2): exact enough to steer seeding and the convergence test,
 * while reported inertias are recomputed in float64 from the vectors. No N x K matrix is held: the
 * scores exist one chunk of rows at a time.
 */
import { gemmTopK } from '../search/gemm-topk.js';

/**
 * Floats of one chunk's score matrix (rows x k): 16 MiB. Measured on 60,000 x 784 with K = 1,000,
 * chunks of 512 and 2,048 rows take the same time (the GEMM dominates; TopK and ArgMax cost the same),
 * while few centroids (the seeding's early rounds) get large chunks and so few runs.
 */
const CHUNK_FLOATS = 1 << 22;

/** Nearest centroid of every row and the squared distance to it. */
export interface NearestCentroids {
  /** Index of the nearest centroid, per row. */
  assignments: Int32Array;
  /** Squared Euclidean distance to that centroid, per row (float64, >= 0). */
  distances: Float64Array;
}

/**
 * The nearest of `k` centroids (row-major `k x dim`) for each of the `count` rows of `vectors`, by
 * squared Euclidean distance. `squaredNorms` holds |x|^2 of every row (see `rowSquaredNorms`).
 */
export async function nearestCentroids(
  vectors: Float32Array,
  count: number,
  dim: number,
  squaredNorms: Float64Array,
  centroids: Float32Array,
  k: number,
  threads: number | undefined,
): Promise<NearestCentroids> {
  const bias = new Float32Array(k);
  for (let c = 0; c < k; c++) {
    let norm = 0;
    for (let j = c * dim, end = j + dim; j < end; j++) norm += (centroids[j] as number) ** 2;
    bias[c] = -norm / 2;
  }
  const assignments = new Int32Array(count);
  const distances = new Float64Array(count);
  const chunkSize = Math.max(1, Math.floor(CHUNK_FLOATS / k));
  for await (const block of gemmTopK(vectors, count, centroids, k, dim, {
    k: 1,
    bias,
    chunkSize,
    ...(threads !== undefined ? { threads } : {}),
  })) {
    assignments.set(block.indices, block.queryOffset);
    for (let q = 0; q < block.queryCount; q++) {
      const row = block.queryOffset + q;
      distances[row] = Math.max(0, (squaredNorms[row] as number) - 2 * (block.similarities[q] as number));
    }
  }
  return { assignments, distances };
}
