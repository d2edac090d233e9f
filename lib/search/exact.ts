/**
 * @file Exact k-nearest-neighbour search by cosine similarity (inner product of L2-normalised rows),
 * with the query's own gallery row excluded by id when the query set is the gallery set.
 *
 * Self-exclusion never drops "the first neighbour": a duplicate of the query (another gallery row with
 * the same vector) ranks where it ranks and is kept, while the row that *is* the query is removed.
 * For that the search asks for k + 1 candidates; if the query's own row is among them it is removed,
 * otherwise the (k+1)-th candidate is dropped (the first k are then already the answer).
 */
import { DmlError, invalidParameterError } from '../errors.js';
import { gemmTopK } from './gemm-topk.js';
import type { NeighbourBlock } from './neighbours.js';

/** Options of {@link exactSearch}. */
export interface ExactSearchOptions {
  /** Neighbours per query (>= 1). */
  k: number;
  /**
   * Per query, the gallery row that is the query itself (same id), or -1 when the query is not in the
   * gallery. Length = queryCount. That row is never returned as a neighbour of its query.
   */
  selfIndex?: Int32Array;
  /** Queries per onnxruntime run; see `gemmTopK` in search/gemm-topk.ts. */
  chunkSize?: number;
  /** onnxruntime intra-op threads. */
  threads?: number;
  /** Also return each block's scores against every gallery row (see {@link NeighbourBlock.scores}). */
  withScores?: boolean;
  /** Called after each block with the number of queries done and the total. */
  onProgress?: (done: number, total: number) => void;
  /** Cancels the search between blocks with DmlError E_CANCELLED. */
  signal?: AbortSignal;
}

/**
 * Writes `k` neighbours into `outIndices`/`outSimilarities` at `to` from a candidate row (nearest first,
 * `candidateCount` entries at `from`), leaving out gallery row `self` (-1: leave out nothing). Only the
 * first k remaining candidates are kept; missing entries are padded with index -1 and similarity -Infinity.
 */
export function copyRowExcludingSelf(
  candidateIndices: Int32Array,
  candidateSimilarities: Float32Array,
  from: number,
  candidateCount: number,
  self: number,
  outIndices: Int32Array,
  outSimilarities: Float32Array,
  to: number,
  k: number,
): void {
  let written = 0;
  for (let j = 0; j < candidateCount && written < k; j++) {
    const index = candidateIndices[from + j] as number;
    if (index === self && self >= 0) continue;
    outIndices[to + written] = index;
    outSimilarities[to + written] = candidateSimilarities[from + j] as number;
    written++;
  }
  for (; written < k; written++) {
    outIndices[to + written] = -1;
    outSimilarities[to + written] = -Infinity;
  }
}

/** Checks `selfIndex` against the query and gallery counts; true when any query is in the gallery. */
export function validateSelfIndex(selfIndex: Int32Array | undefined, queryCount: number, galleryCount: number): boolean {
  if (selfIndex === undefined) return false;
  if (!(selfIndex instanceof Int32Array)) throw invalidParameterError('selfIndex', 'an Int32Array', selfIndex);
  if (selfIndex.length !== queryCount) throw invalidParameterError('selfIndex.length', `queryCount (${queryCount})`, selfIndex.length);
  let any = false;
  selfIndex.forEach((row, q) => {
    if (row < -1 || row >= galleryCount) {
      throw invalidParameterError(`selfIndex[${q}]`, `-1 or a gallery row in [0, ${galleryCount})`, row);
    }
    if (row >= 0) any = true;
  });
  return any;
}

/**
 * The `options.k` nearest gallery rows of every query by inner product, ordered by similarity
 * descending then gallery index ascending, as one {@link NeighbourBlock} per chunk of queries. Rows are
 * row-major `count x dim` Float32Arrays; similarities are cosine similarities when rows are
 * L2-normalised. Memory is bounded by one chunk x galleryCount score matrix.
 */
export async function* exactSearch(
  queries: Float32Array,
  queryCount: number,
  gallery: Float32Array,
  galleryCount: number,
  dim: number,
  options: ExactSearchOptions,
): AsyncGenerator<NeighbourBlock> {
  const { k, selfIndex, chunkSize, threads, withScores, onProgress, signal } = options;
  if (!Number.isSafeInteger(k) || k < 1) throw invalidParameterError('k', 'a positive integer', k);
  if (!Number.isSafeInteger(queryCount) || queryCount < 0) throw invalidParameterError('queryCount', 'a non-negative integer', queryCount);
  if (!Number.isSafeInteger(galleryCount) || galleryCount < 0) {
    throw invalidParameterError('galleryCount', 'a non-negative integer', galleryCount);
  }
  const excluding = validateSelfIndex(selfIndex, queryCount, galleryCount);
  const blocks = gemmTopK(queries, queryCount, gallery, galleryCount, dim, {
    k: excluding ? k + 1 : k,
    ...(chunkSize !== undefined ? { chunkSize } : {}),
    ...(threads !== undefined ? { threads } : {}),
    ...(withScores !== undefined ? { withScores } : {}),
  });
  let done = 0;
  for (;;) {
    if (signal?.aborted) throw new DmlError('E_CANCELLED', `Exact search cancelled after ${done} of ${queryCount} queries`);
    const next = await blocks.next();
    if (next.done) return;
    const block = next.value;
    let result = block;
    if (excluding && selfIndex !== undefined) {
      const indices = new Int32Array(block.queryCount * k);
      const similarities = new Float32Array(block.queryCount * k);
      for (let q = 0; q < block.queryCount; q++) {
        const self = selfIndex[block.queryOffset + q] as number;
        copyRowExcludingSelf(block.indices, block.similarities, q * block.k, block.k, self, indices, similarities, q * k, k);
      }
      result = { queryOffset: block.queryOffset, queryCount: block.queryCount, k, indices, similarities, ...(block.scores !== undefined ? { scores: block.scores } : {}) };
    }
    done += block.queryCount;
    onProgress?.(done, queryCount);
    yield result;
  }
}
