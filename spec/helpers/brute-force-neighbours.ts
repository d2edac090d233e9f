/**
 * @file Test-only brute-force nearest neighbours: float64 cosine similarity against every gallery row,
 * stable order by (similarity descending, gallery index ascending), the query itself excluded by its
 * gallery row. Produces the same {@link NeighbourBlock}s as the real searches, for metric tests that
 * must not depend on them.
 */

import type { NeighbourBlock } from '../../lib/search/neighbours.js';

/** Row-major vectors: `count` rows of `dim` numbers. */
export interface Vectors {
  values: Float64Array;
  count: number;
  dim: number;
}

export interface BruteForceOptions {
  queries: Vectors;
  gallery: Vectors;
  /** Neighbours per query; rows with fewer candidates are padded with index -1, similarity -Infinity. */
  k: number;
  /** Gallery row of each query itself (excluded from its ranking), or -1. Default: all -1. */
  querySelfIndex?: Int32Array;
  /** Queries per block. Default: all queries in one block. */
  blockSize?: number;
}

/** Cosine similarity (dot product over the product of the norms), in float64. */
function cosine(a: Float64Array, aStart: number, b: Float64Array, bStart: number, dim: number): number {
  let dot = 0;
  let aSquared = 0;
  let bSquared = 0;
  for (let d = 0; d < dim; d++) {
    const x = a[aStart + d]!;
    const y = b[bStart + d]!;
    dot += x * y;
    aSquared += x * x;
    bSquared += y * y;
  }
  return dot / Math.sqrt(aSquared * bSquared);
}

/** The k nearest gallery rows of every query, as blocks of `blockSize` consecutive queries. */
export function bruteForceNeighbourBlocks(options: BruteForceOptions): NeighbourBlock[] {
  const { queries, gallery, k } = options;
  if (queries.dim !== gallery.dim) throw new Error('query and gallery dimensions differ');
  const blockSize = options.blockSize ?? queries.count;
  const blocks: NeighbourBlock[] = [];
  for (let queryOffset = 0; queryOffset < queries.count; queryOffset += blockSize) {
    const queryCount = Math.min(blockSize, queries.count - queryOffset);
    const indices = new Int32Array(queryCount * k).fill(-1);
    const similarities = new Float32Array(queryCount * k).fill(-Infinity);
    for (let row = 0; row < queryCount; row++) {
      const query = queryOffset + row;
      const selfIndex = options.querySelfIndex?.[query] ?? -1;
      const candidates: { index: number; similarity: number }[] = [];
      for (let g = 0; g < gallery.count; g++) {
        if (g === selfIndex) continue;
        candidates.push({ index: g, similarity: cosine(queries.values, query * queries.dim, gallery.values, g * gallery.dim, gallery.dim) });
      }
      candidates.sort((a, b) => b.similarity - a.similarity || a.index - b.index);
      candidates.slice(0, k).forEach((candidate, rank) => {
        indices[row * k + rank] = candidate.index;
        similarities[row * k + rank] = candidate.similarity;
      });
    }
    blocks.push({ queryOffset, queryCount, k, indices, similarities });
  }
  return blocks;
}
