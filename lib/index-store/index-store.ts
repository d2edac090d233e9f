/**
 * @file The index-store interface: what `dml index` and `dml serve` need of an image search index,
 * apart from how it is kept. Two implementations:
 *
 * - {@link SearchIndexStore} (store.ts): an hnswlib graph held in the process's memory, with a
 *   journal and snapshots in a folder. Locations are plain folder paths.
 * - `LanceIndexStore` (lance-store.ts): a LanceDB table in the folder or on object storage, searched
 *   from there; several read-only processes may serve one table while one writer changes it.
 *   Locations are `lance:<folder>` ({@link LANCE_PREFIX}); it needs the optional peer dependency
 *   `@lancedb/lancedb`.
 *
 * {@link openIndexStore} (open-store.ts) opens either from a location string.
 *
 * Both stores keep their items' ids unique, hold L2-normalised vectors, score hits by cosine
 * similarity and acknowledge a write (`add`, `remove`) only once it is durable: a process killed
 * afterwards loses nothing acknowledged.
 */
import type { ImageSource } from '../data/manifest.js';
import type { TokenPooling } from '../embed/model-signature.js';
import type { Preprocessing } from '../image/preprocessing.js';
import type { IndexedItem, IndexSearchOptions, NewItem, SearchHit } from './layout.js';

/** The prefix of a LanceDB store's location: `lance:<folder>`. */
export const LANCE_PREFIX = 'lance:';

/** The two kinds of index store. */
export type IndexStoreKind = 'hnsw' | 'lance';

/** A value or a promise of it: what a method returns when one store answers at once and the other asynchronously. */
export type Awaitable<T> = T | Promise<T>;

/** What every index store records about how its vectors were made. */
export interface IndexStoreMetadata {
  /** When the index was built (ISO 8601). */
  createdAt: string;
  model: {
    /** The model's identity: SHA-256 of `model.onnx`, covering its external data files when it has any. */
    sha256: string;
    /** The path the model was copied from, for provenance. */
    source: string;
    /** The model output holding the embeddings. */
    outputName: string;
    /** How a token output is pooled (absent for an output that is already [N, D]). */
    pooling?: TokenPooling;
  };
  preprocessing: Preprocessing;
  /** Embedding dimension. */
  dim: number;
  /** The dataset the index was built from. */
  dataset: { spec: string; manifestHash: string };
}

/** Items per label. */
export interface LabelCount {
  label: string;
  count: number;
}

/** Options of {@link IndexStore.list}. */
export interface ListOptions {
  /** Items to skip. Default 0. */
  offset?: number;
  /** Items to return at most. Default 100. */
  limit?: number;
  /** Only items with this label. */
  label?: string | undefined;
}

/** An image search index, open for reading or (one process at a time) for writing. */
export interface IndexStore {
  /** Which implementation this is. */
  readonly kind: IndexStoreKind;
  /** Whether it was opened for writing (`add` and `remove` refuse otherwise). */
  readonly writable: boolean;
  /** The folder holding the index (absolute). */
  readonly dir: string;
  /** Path of the embedder's copy (`model.onnx` in the folder). */
  readonly modelPath: string;
  /** How the vectors were made (a copy). */
  readonly metadata: IndexStoreMetadata;
  /** Embedding dimension. */
  readonly dim: number;
  /** Live items, as of the version this process sees (a reader sees a writer's changes after its refresh). */
  readonly count: number;
  /** The version this process sees: the snapshot generation (hnswlib) or the table version (LanceDB). */
  readonly generation: number;
  /** Acknowledged changes not folded into the search structure yet: journal lines (hnswlib), rows outside the ANN index (LanceDB). */
  pendingChanges(): Awaitable<number>;
  /** The data files a search reads (LanceDB: the table's fragments, compacted by the writer); null for the hnswlib store, which searches in memory. */
  dataFiles(): Awaitable<number | null>;
  /** Items per label, labels sorted. */
  labelCounts(): Awaitable<LabelCount[]>;
  /** The item with this id, if any. */
  get(id: string): Awaitable<IndexedItem | undefined>;
  /** Which of `ids` the index holds (one look-up for many ids, as `dml index add` needs). */
  existing(ids: readonly string[]): Awaitable<Set<string>>;
  /** The item's image source with relative paths resolved against the index folder. */
  resolveSource(item: IndexedItem): ImageSource;
  /** A page of the items, optionally of one label, in insertion order (LanceDB: storage order, insertion order until a compaction), with the total. */
  list(options?: ListOptions): Awaitable<{ total: number; items: IndexedItem[] }>;
  /** The stored embedding of item `id`. Errors: E_NOT_FOUND for an unknown id. */
  vector(id: string): Awaitable<Float32Array>;
  /** The `k` items nearest to `query` by cosine similarity, best first, optionally of one label and without one item. */
  search(query: Float32Array, options: IndexSearchOptions): Awaitable<SearchHit[]>;
  /** Adds items durably (all or none). Errors: E_ARG for a bad or duplicate item or a read-only store. */
  add(items: NewItem[]): Promise<void>;
  /** Removes items durably (all or none). Errors: E_NOT_FOUND for an unknown id, E_ARG for a read-only store. */
  remove(ids: string[]): Promise<void>;
  /**
   * Folds acknowledged changes into the search structure, off the serving path (`dml index optimize`):
   * a new snapshot (hnswlib); compaction, the ANN index brought up to date and old versions pruned
   * (LanceDB). Writable stores only. Resolves to what was done, as JSON-ready values.
   */
  optimize(options?: OptimizeOptions): Promise<Record<string, unknown>>;
  /** What the index holds and how it is kept, as JSON-ready values (`dml index info`). */
  info(): Awaitable<Record<string, unknown>>;
  /** Finishes pending writes and releases what the store holds (the write lock); idempotent. */
  close(): Promise<void>;
}

/** Options of {@link IndexStore.optimize}. */
export interface OptimizeOptions {
  /**
   * LanceDB store: train the ANN index again from all rows (new IVF partitions and graphs) instead of
   * adding the new rows to the one there is; for a table that has changed a lot since it was indexed.
   * The hnswlib store has no separate ANN index and refuses it (E_ARG).
   */
  rebuildAnn?: boolean;
}

/** Options of {@link openIndexStore}. */
export interface OpenIndexStoreOptions {
  /** Open for writing (one writer per index). Default false. */
  writable?: boolean;
  /** hnswlib store, writable: take a snapshot once the journal holds this many lines. */
  snapshotEvery?: number;
  /** LanceDB store, writable: compact the table's data files after this many commits (lance-store.ts). */
  compactEvery?: number;
  /** LanceDB store, read-only: seconds between checks for a newer table version written by another process. */
  refreshSeconds?: number;
}
