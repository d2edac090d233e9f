/**
 * @file Approximate nearest-neighbour search with HNSW (hnswlib-node 3, hnswlib 0.8), taking and
 * returning typed arrays and the shared {@link NeighbourBlock} result.
 *
 * Space: hnswlib's `'cosine'`, which L2-normalises every added point and every query inside C++ and
 * reports distance `1 - cos`. Similarity is therefore `1 - distance` = cosine similarity whatever the
 * input norms, and equals the inner product the exact search ranks by when rows are L2-normalised.
 * Gallery row i is stored under hnswlib label i.
 *
 * Within a returned row, neighbours are ordered by (similarity descending, gallery index ascending);
 * which of several tied items HNSW finds at all is up to the graph walk.
 *
 * Persistence: hnswlib's file holds the graph, M and efConstruction but neither the search-time ef
 * nor the seed nor the dimension in a checked form; {@link HnswIndex.load} reads M, efConstruction,
 * dimension and count from the file header and sets ef again.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import hnswlib from 'hnswlib-node';
import type { HierarchicalNSW as NativeIndex } from 'hnswlib-node';
import { DmlError, invalidParameterError } from '../errors.js';
import { copyRowExcludingSelf, validateSelfIndex } from './exact.js';
import type { NeighbourBlock } from './neighbours.js';
import { checkInteger, checkRows } from '../util/check.js';

const { HierarchicalNSW } = hnswlib;

/** The hnswlib space every dmlkit index uses. */
export const HNSW_SPACE = 'cosine';

/** Index parameters, as recorded in reports. */
export interface HnswParams {
  /** hnswlib space (`HNSW_SPACE`). */
  space: typeof HNSW_SPACE;
  /** Links per node (M). */
  m: number;
  /** Candidate list size while building. */
  efConstruction: number;
  /** Candidate list size while searching; raised to k + 1 by a search for k neighbours when smaller. */
  ef: number;
  /** Seed of hnswlib's level generator; null for a loaded index whose seed was not passed to load. */
  seed: number | null;
}

/** Options of {@link HnswIndex.build}. */
export interface HnswBuildOptions {
  /** Links per node, >= 2. Default 16. */
  m?: number;
  /** Build-time candidate list size, >= 1. Default 200. */
  efConstruction?: number;
  /** Search-time candidate list size, >= 1. Default 64. */
  ef?: number;
  /** Seed of the level generator, integer in [0, 2^32). Same seed and rows -> same graph. */
  seed: number;
  /** Called every `BUILD_YIELD_INTERVAL` rows and at the end with rows added and the total. */
  onProgress?: (done: number, total: number) => void;
  /** Cancels the build between batches with DmlError E_CANCELLED. */
  signal?: AbortSignal;
}

/** Options of {@link HnswIndex.search}. */
export interface HnswSearchOptions {
  /** Neighbours per query (>= 1). */
  k: number;
  /** Per query, the gallery row that is the query itself, or -1; that row is never returned for it. */
  selfIndex?: Int32Array;
  /** Queries per yielded block (>= 1). Default 1024. */
  chunkSize?: number;
}

/** Options of {@link HnswIndex.load}. */
export interface HnswLoadOptions {
  /** Expected dimension; a file of another dimension is rejected. */
  dim?: number;
  /** Search-time candidate list size. Default 64. */
  ef?: number;
  /** The seed the index was built with, when the caller recorded it. */
  seed?: number;
  /**
   * Let {@link HnswIndex.add} reuse the nodes of items removed with {@link HnswIndex.markDeleted}
   * (hnswlib's `allowReplaceDeleted`). Default false.
   */
  allowReplaceDeleted?: boolean;
}

/** One neighbour of {@link HnswIndex.nearest}. */
export interface HnswNeighbour {
  /** The row the item was added under (its hnswlib label: row i of {@link HnswIndex.build}, or `add`'s `label`). */
  row: number;
  /** Cosine similarity (1 - hnswlib's cosine distance), rounded to float32. */
  similarity: number;
}

/** Rows added between yields to the event loop during a build. */
export const BUILD_YIELD_INTERVAL = 1000;

const DEFAULT_M = 16;
const DEFAULT_EF_CONSTRUCTION = 200;
const DEFAULT_EF = 64;
const DEFAULT_SEARCH_CHUNK = 1024;

/** Byte size of hnswlib 0.8's `saveIndex` header: 6 size_t, int, uint32, 3 size_t, double, size_t. */
const HEADER_BYTES = 96;

function cancelled(what: string, signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new DmlError('E_CANCELLED', `${what} cancelled`);
}

/** What the header of an hnswlib index file says. */
interface IndexFileHeader {
  count: number;
  dim: number;
  m: number;
  efConstruction: number;
}

async function readHeader(file: string): Promise<IndexFileHeader> {
  const bytes = new Uint8Array(HEADER_BYTES);
  let read: number;
  try {
    const handle = await open(file, 'r');
    try {
      read = (await handle.read(bytes, 0, HEADER_BYTES, 0)).bytesRead;
    } finally {
      await handle.close();
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new DmlError(code === 'ENOENT' ? 'E_NOT_FOUND' : 'E_IO', `Cannot read HNSW index ${file}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const corrupt = (why: string): DmlError => new DmlError('E_DATASET', `${file} is not an hnswlib index: ${why}`);
  if (read < HEADER_BYTES) throw corrupt(`${read} bytes, shorter than the ${HEADER_BYTES}-byte header`);
  const view = new DataView(bytes.buffer);
  const sizeT = (offset: number): number => Number(view.getBigUint64(offset, true));
  const count = sizeT(16);
  const sizePerElement = sizeT(24);
  const labelOffset = sizeT(32);
  const dataOffset = sizeT(40);
  const maxM0 = sizeT(64);
  const m = sizeT(72);
  const efConstruction = sizeT(88);
  const dataBytes = labelOffset - dataOffset;
  if (dataOffset !== maxM0 * 4 + 4 || sizePerElement !== labelOffset + 8 || dataBytes <= 0 || dataBytes % 4 !== 0 || m < 1) {
    throw corrupt('inconsistent header fields');
  }
  return { count, dim: dataBytes / 4, m, efConstruction };
}

/**
 * An HNSW index over L2-normalised (or any, see `HNSW_SPACE`) float32 rows. It owns its native
 * hnswlib index for its whole life, as hnswlib-node's own class does: building, loading, searching,
 * adding, marking deleted and saving all go through it (the search index store, lib/index-store/,
 * changes its graph only through these methods).
 */
export class HnswIndex {
  readonly #native: NativeIndex;
  readonly #dim: number;
  readonly #allowReplaceDeleted: boolean;
  #params: HnswParams;

  private constructor(native: NativeIndex, dim: number, params: HnswParams, allowReplaceDeleted: boolean) {
    this.#native = native;
    this.#dim = dim;
    this.#params = params;
    this.#allowReplaceDeleted = allowReplaceDeleted;
  }

  /**
   * Builds an index over `count` row-major rows of `vectors` (row i gets label i). Adding points is
   * synchronous native work; the build yields to the event loop every `BUILD_YIELD_INTERVAL` rows
   * so progress and cancellation work.
   */
  static async build(vectors: Float32Array, count: number, dim: number, options: HnswBuildOptions): Promise<HnswIndex> {
    checkInteger('count', count, 1, 0xffffffff);
    checkInteger('dim', dim, 1);
    checkRows('vectors', vectors, count, dim);
    const m = checkInteger('m', options.m ?? DEFAULT_M, 2);
    const efConstruction = checkInteger('efConstruction', options.efConstruction ?? DEFAULT_EF_CONSTRUCTION, 1);
    const ef = checkInteger('ef', options.ef ?? DEFAULT_EF, 1);
    const seed = checkInteger('seed', options.seed, 0, 0xffffffff);
    const { onProgress, signal } = options;

    const native = new HierarchicalNSW(HNSW_SPACE, dim);
    native.initIndex({ maxElements: count, m, efConstruction, randomSeed: seed });
    for (let start = 0; start < count; start += BUILD_YIELD_INTERVAL) {
      cancelled('HNSW build', signal);
      const end = Math.min(count, start + BUILD_YIELD_INTERVAL);
      for (let i = start; i < end; i++) native.addPoint(Array.from(vectors.subarray(i * dim, (i + 1) * dim)), i);
      onProgress?.(end, count);
      if (end < count) await new Promise<void>((resolve) => setImmediate(resolve));
    }
    native.setEf(ef);
    return new HnswIndex(native, dim, { space: HNSW_SPACE, m, efConstruction, ef, seed }, false);
  }

  /**
   * Loads an index written by {@link HnswIndex.save}. M, efConstruction, dimension and count come from
   * the file header; ef (not persisted by hnswlib) is set from `options.ef`.
   */
  static async load(file: string, options: HnswLoadOptions = {}): Promise<HnswIndex> {
    const ef = checkInteger('ef', options.ef ?? DEFAULT_EF, 1);
    const seed = options.seed === undefined ? null : checkInteger('seed', options.seed, 0, 0xffffffff);
    const header = await readHeader(file);
    if (options.dim !== undefined && options.dim !== header.dim) {
      throw invalidParameterError('dim', `${header.dim} (the dimension of ${file})`, options.dim);
    }
    const allowReplaceDeleted = options.allowReplaceDeleted ?? false;
    const native = new HierarchicalNSW(HNSW_SPACE, header.dim);
    try {
      await native.readIndex(file, allowReplaceDeleted);
    } catch (err) {
      throw new DmlError('E_DATASET', `${file} is not a readable hnswlib index: ${(err as Error).message}`, { cause: err });
    }
    native.setEf(ef);
    return new HnswIndex(native, header.dim, { space: HNSW_SPACE, m: header.m, efConstruction: header.efConstruction, ef, seed }, allowReplaceDeleted);
  }

  /** Vector dimension. */
  get dim(): number {
    return this.#dim;
  }

  /** Nodes in the graph: the rows added, those marked deleted included until a later add reuses them. */
  get count(): number {
    return this.#native.getCurrentCount();
  }

  /** Nodes the graph has room for before {@link resize} is needed. */
  get capacity(): number {
    return this.#native.getMaxElements();
  }

  /** Gives the graph room for `capacity` nodes (at least {@link count}). */
  resize(capacity: number): void {
    this.#native.resizeIndex(checkInteger('capacity', capacity, this.count));
  }

  /** The labels of every node (deleted ones included), in no particular order. */
  labels(): number[] {
    return this.#native.getIdsList();
  }

  /**
   * Adds `vector` (of {@link dim} values) under `label`. An index loaded with `allowReplaceDeleted`
   * puts it in the node of a deleted item when there is one; otherwise it needs room
   * ({@link capacity} above {@link count}).
   */
  add(vector: Float32Array, label: number): void {
    checkRows('vector', vector, 1, this.#dim);
    this.#native.addPoint(Array.from(vector), checkInteger('label', label, 0, 0xffffffff), this.#allowReplaceDeleted);
  }

  /** Marks the item under `label` deleted: searches skip it, and an index allowing it reuses its node. */
  markDeleted(label: number): void {
    this.#native.markDelete(label);
  }

  /** The vector stored under `label` (as hnswlib keeps it: L2-normalised in the cosine space). */
  vector(label: number): Float32Array {
    return Float32Array.from(this.#native.getPoint(label));
  }

  /**
   * The `k` nearest items to one `query` that pass `filter` (by label), ordered by (similarity
   * descending, label ascending), searched with ef = max(the index's ef, k). Fewer come back when the
   * graph holds fewer, or when the filter leaves the walk too few within ef.
   */
  nearest(query: Float32Array, k: number, filter?: (label: number) => boolean): HnswNeighbour[] {
    checkRows('query', query, 1, this.#dim);
    this.#native.setEf(Math.max(this.#params.ef, checkInteger('k', k, 1)));
    const { distances, neighbors } = this.#native.searchKnn(Array.from(query), k, filter);
    const found = neighbors.map((row, j) => ({ row, similarity: Math.fround(1 - (distances[j] as number)) }));
    return found.sort((a, b) => b.similarity - a.similarity || a.row - b.row);
  }

  /** The index's parameters (a copy). */
  get params(): HnswParams {
    return { ...this.#params };
  }

  /**
   * The `options.k` approximate nearest rows of each of `count` row-major `queries`, by cosine
   * similarity, as one {@link NeighbourBlock} per chunk. Rows with fewer results than k (a small index,
   * or a graph walk that found fewer) are padded with index -1 and similarity -Infinity.
   *
   * ef must cover the k + 1 candidates a self-excluding search asks for: when the index's ef is below
   * k + 1 it is raised to k + 1 for this and later searches, and {@link HnswIndex.params} shows the
   * raised value (record it after searching).
   */
  async *search(queries: Float32Array, count: number, options: HnswSearchOptions): AsyncGenerator<NeighbourBlock> {
    const dim = this.#dim;
    checkInteger('count', count, 0);
    checkRows('queries', queries, count, dim);
    const k = checkInteger('k', options.k, 1);
    const chunkSize = checkInteger('chunkSize', options.chunkSize ?? DEFAULT_SEARCH_CHUNK, 1);
    const { selfIndex } = options;
    const rows = this.count;
    const excluding = validateSelfIndex(selfIndex, count, rows);
    if (this.#params.ef < k + 1) {
      this.#params = { ...this.#params, ef: k + 1 };
      this.#native.setEf(k + 1);
    }
    const wanted = Math.min(rows, excluding ? k + 1 : k);
    const candidateIndices = new Int32Array(wanted);
    const candidateSimilarities = new Float32Array(wanted);

    for (let start = 0; start < count; start += chunkSize) {
      const blockCount = Math.min(chunkSize, count - start);
      const indices = new Int32Array(blockCount * k);
      const similarities = new Float32Array(blockCount * k);
      for (let q = 0; q < blockCount; q++) {
        const row = start + q;
        const found =
          wanted > 0
            ? this.#nearest(queries.subarray(row * dim, (row + 1) * dim), wanted, candidateIndices, candidateSimilarities)
            : 0;
        const self = selfIndex === undefined ? -1 : (selfIndex[row] as number);
        copyRowExcludingSelf(candidateIndices, candidateSimilarities, 0, found, self, indices, similarities, q * k, k);
      }
      yield { queryOffset: start, queryCount: blockCount, k, indices, similarities };
    }
  }

  /** {@link nearest} for `wanted` neighbours, written to the candidate arrays; returns how many were found. */
  #nearest(query: Float32Array, wanted: number, outIndices: Int32Array, outSimilarities: Float32Array): number {
    const found = this.nearest(query, wanted);
    found.forEach(({ row, similarity }, j) => {
      outIndices[j] = row;
      outSimilarities[j] = similarity;
    });
    return found.length;
  }

  /**
   * Writes the index to `file` atomically: hnswlib writes a temporary file beside it, which is synced
   * and renamed over `file`. Creates the parent folder. Errors are DmlError E_IO.
   */
  async save(file: string): Promise<void> {
    const dir = path.dirname(file);
    const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    try {
      await mkdir(dir, { recursive: true });
      await this.#native.writeIndex(tmp);
      const handle = await open(tmp, 'r+');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => undefined);
      throw new DmlError('E_IO', `Cannot write HNSW index ${file}: ${(err as Error).message}`, { cause: err });
    }
  }
}
