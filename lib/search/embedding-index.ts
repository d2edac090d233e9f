/**
 * @file The simple way to search an {@link EmbeddingSet}: build once, then `search(query, k)` returns
 * the ids, labels and cosine similarities of the k nearest items. Exact search (the default) or HNSW
 * underneath; for batches of queries and neighbour blocks use {@link exactSearch} or
 * {@link HnswIndex.search}.
 */
import type { EmbeddingSet } from '../embed/embedding-set.js';
import { normalizeRowsInPlace } from '../embed/normalize.js';
import { invalidParameterError } from '../errors.js';
import { checkInteger } from '../util/check.js';
import { exactSearch } from './exact.js';
import { HnswIndex, type HnswBuildOptions } from './hnsw.js';

/** Options of {@link EmbeddingIndex.build}. */
export interface EmbeddingIndexOptions {
  /** `exact` (default: every item compared, no recall loss) or `hnsw` (approximate, for large sets). */
  kind?: 'exact' | 'hnsw';
  /** HNSW settings (with `kind: 'hnsw'`); seed default 0. */
  hnsw?: Partial<Omit<HnswBuildOptions, 'onProgress' | 'signal'>>;
}

/** What {@link EmbeddingIndex.search} returns: the k nearest items, nearest first. */
export interface SearchResult {
  ids: string[];
  labels: string[];
  /** Cosine similarities, descending. */
  similarities: number[];
}

/** How far a row's L2 norm may be from 1 for {@link EmbeddingIndex.build} to take it as normalised. */
export const NORM_TOLERANCE = 1e-3;

/** True when every row of `set` has an L2 norm within {@link NORM_TOLERANCE} of 1 (and only finite values). */
function hasUnitRows(set: EmbeddingSet): boolean {
  for (let r = 0; r < set.count; r++) {
    let sum = 0;
    for (let j = r * set.dim; j < (r + 1) * set.dim; j++) sum += (set.vectors[j] as number) ** 2;
    if (!(Math.abs(Math.sqrt(sum) - 1) <= NORM_TOLERANCE)) return false;
  }
  return true;
}

/**
 * An {@link EmbeddingSet} ready to search.
 *
 * @example
 * ```ts
 * import { EmbeddingIndex, embedImages } from 'dmlkit';
 * const gallery = await embedImages('model.onnx', ['a.jpg', 'b.jpg', 'c.jpg']);
 * const index = await EmbeddingIndex.build(gallery);
 * const { ids, similarities } = await index.search(gallery.vectors.subarray(0, gallery.dim), 2);
 * // ids[0] === 'a.jpg', similarities[0] ≈ 1
 * ```
 */
export class EmbeddingIndex {
  private constructor(
    private readonly set: EmbeddingSet,
    private readonly hnsw: HnswIndex | undefined,
  ) {}

  /**
   * Indexes `set`. Its rows are searched by cosine similarity: rows whose L2 norm is not 1 (within
   * {@link NORM_TOLERANCE}; vectors from another library, say) are normalised in a copy, the caller's
   * set left as it is; a row that is all zeros or holds NaN or Inf is an E_EMBEDDING error naming it.
   */
  static async build(set: EmbeddingSet, options: EmbeddingIndexOptions = {}): Promise<EmbeddingIndex> {
    const kind = options.kind ?? 'exact';
    if (kind !== 'exact' && kind !== 'hnsw') throw invalidParameterError('kind', "'exact' or 'hnsw'", kind);
    if (set.ids.length !== set.count || set.labels.length !== set.count) {
      throw invalidParameterError('set', `${set.count} ids and labels`, `${set.ids.length} ids, ${set.labels.length} labels`);
    }
    if (set.vectors?.length !== set.count * set.dim) {
      throw invalidParameterError('set.vectors', `${set.count} x ${set.dim} = ${set.count * set.dim} values`, `${set.vectors?.length} values`);
    }
    const indexed = hasUnitRows(set) ? set : { ...set, vectors: Float32Array.from(set.vectors) };
    if (indexed !== set) normalizeRowsInPlace(indexed.vectors, set.count, set.dim, 'EmbeddingIndex.build');
    const hnsw = kind === 'hnsw' ? await HnswIndex.build(indexed.vectors, set.count, set.dim, { seed: 0, ...options.hnsw }) : undefined;
    return new EmbeddingIndex(indexed, hnsw);
  }

  /** Items indexed. */
  get count(): number {
    return this.set.count;
  }

  /** The `k` nearest items to `query` (D values, any norm), nearest first; fewer when the set holds fewer. */
  async search(query: ArrayLike<number>, k: number): Promise<SearchResult> {
    const { dim, count } = this.set;
    if (query?.length !== dim) throw invalidParameterError('query', `${dim} numbers (the embedding dimension)`, query?.length === undefined ? query : `${query.length} numbers`);
    checkInteger('k', k, 1);
    const wanted = Math.min(k, count);
    const q = Float32Array.from(query);
    normalizeRowsInPlace(q, 1, dim, 'query');
    const rows: number[] = [];
    const similarities: number[] = [];
    if (this.hnsw !== undefined) {
      for (const n of this.hnsw.nearest(q, wanted)) {
        rows.push(n.row);
        similarities.push(n.similarity);
      }
    } else {
      for await (const block of exactSearch(q, 1, this.set.vectors, count, dim, { k: wanted })) {
        for (let j = 0; j < wanted && (block.indices[j] as number) >= 0; j++) {
          rows.push(block.indices[j] as number);
          similarities.push(block.similarities[j] as number);
        }
      }
    }
    return { ids: rows.map((r) => this.set.ids[r] as string), labels: rows.map((r) => this.set.labels[r] as string), similarities };
  }
}
