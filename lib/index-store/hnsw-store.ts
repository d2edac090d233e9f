/**
 * @file The on-disk image search index that `dml index` writes and `dml serve` serves: an HNSW graph
 * of L2-normalised embeddings plus each item's id, label and image source, the embedder (a copy of
 * the ONNX model), its preprocessing and the HNSW parameters.
 *
 * Layout of an index folder:
 * ```
 * index.json           metadata (format, model sha256, preprocessing, dim, HNSW parameters) and the
 *                      current generation G; replacing this file is the commit point of a snapshot
 * model/model.onnx     the embedder, copied at build time (its identity, a sha256, is in index.json),
 *                      with its external data files (e.g. model.onnx_data) beside it in model/, so
 *                      that no name the model gives them meets a file of the index (an index written
 *                      before this folder keeps model.onnx at the top; layout.ts, indexModelPath)
 * gen-G/hnsw.bin       hnswlib graph of snapshot G (hnswlib label = the item's slot)
 * gen-G/items.json     the live items of snapshot G: slot, id, label, source
 * journal-G.jsonl      changes since snapshot G: one line per acknowledged write (a batch of adds or
 *                      removals), each line fsynced before the write is acknowledged
 * uploads/<sha256>     images added over HTTP (item sources point here, relative to the folder)
 * lock                 pid of the process that holds the index open for writing
 * ```
 *
 * Durability and atomicity: a write appends one JSON line to the journal and fsyncs it before it
 * returns, so an acknowledged write survives kill -9; a line cut short by a crash was never
 * acknowledged and is ignored (and cut off before the next append). One line holds a whole batch, so a
 * batch is applied entirely or not at all. A snapshot writes generation G+1 into a temporary folder,
 * fsyncs it, renames it into place and then atomically replaces `index.json`; until that rename the
 * index on disk is snapshot G plus journal G, afterwards it is snapshot G+1 (with an empty journal),
 * and leftovers of either side are removed when the index is next opened for writing. The build writes
 * the whole folder beside the target and renames it into place.
 *
 * Removal: hnswlib marks removed items deleted (they are skipped by searches) and the index is opened
 * with hnswlib's `allowReplaceDeleted`, so later additions reuse the slots of removed items; the graph
 * never holds more nodes than the largest number of items it has held, but it is not rebuilt, and
 * marked nodes still route searches until they are replaced.
 *
 * Concurrency: reads (search, list, vector) are synchronous and see every write that has returned;
 * writes are serialised. A snapshot's graph file is written on the libuv pool while searches go on
 * (both only read the graph) and writes wait. Only one process may hold an index open for writing
 * (the `lock` file, util/folder-lock.ts); read-only opens take no lock.
 *
 * The parts live beside this file: layout.ts (file names, formats, checks), journal.ts and
 * snapshot.ts; the graph is a {@link HnswIndex} (search/hnsw.ts, the only hnswlib wrapper).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ImageSource } from '../data/manifest.js';
import { DmlError, invalidParameterError } from '../errors.js';
import { HnswIndex } from '../search/hnsw.js';
import { Journal } from './journal.js';
import {
  checkItemId,
  checkItemText,
  checkNewIndexFolder,
  checkNewItems,
  checkVector,
  copyIndexModel,
  decodeVector,
  DEFAULT_SNAPSHOT_EVERY,
  encodeVector,
  ioError,
  METADATA_FILE,
  indexModelPath,
  removeUnusedUploads,
  SEARCH_INDEX_FORMAT,
  storeUpload,
  syncPath,
  type CreateIndexInit,
  type IndexedItem,
  type IndexSearchOptions,
  type ItemsFile,
  type JournalOp,
  type NewItem,
  type OpenIndexOptions,
  type SearchHit,
  type SearchIndexMetadata,
} from './layout.js';
import type { IndexStore, OptimizeOptions } from './index-store.js';
import { acquireFolderLock, releaseFolderLock } from '../util/folder-lock.js';
import { readSnapshot, removeGeneration, removeLeftovers, writeGeneration, writeMetadata, writeSnapshot } from './snapshot.js';
import { checkPositiveInteger } from '../util/check.js';

/**
 * A mutable HNSW image index in a folder (see the file comment for the layout and guarantees); the
 * `hnsw` implementation of {@link IndexStore}, whose reads answer at once.
 */
export class SearchIndexStore implements IndexStore {
  /** Which {@link IndexStore} implementation this is. */
  readonly kind = 'hnsw';
  readonly #dir: string;
  readonly #metadata: SearchIndexMetadata;
  readonly #graph: HnswIndex;
  readonly #journal: Journal;
  readonly #writable: boolean;
  readonly #snapshotEvery: number;
  readonly #lockFile: string | undefined;
  readonly #modelPath: string;
  readonly #items = new Map<number, IndexedItem>();
  readonly #slots = new Map<string, number>();
  readonly #labelCounts = new Map<string, number>();
  #generation: number;
  #nextSlot: number;
  /** Marked-deleted graph nodes not yet reused. */
  #vacant: number;
  #writes: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(init: {
    dir: string;
    metadata: SearchIndexMetadata;
    graph: HnswIndex;
    generation: number;
    items: ItemsFile;
    writable: boolean;
    snapshotEvery: number;
    lockFile: string | undefined;
    modelPath: string;
  }) {
    this.#dir = init.dir;
    this.#modelPath = init.modelPath;
    this.#metadata = init.metadata;
    this.#graph = init.graph;
    this.#generation = init.generation;
    this.#journal = new Journal(init.dir, init.generation);
    this.#writable = init.writable;
    this.#snapshotEvery = init.snapshotEvery;
    this.#lockFile = init.lockFile;
    this.#nextSlot = init.items.nextSlot;
    for (const { slot, ...item } of init.items.items) this.#insert(slot, item);
    this.#vacant = init.graph.count - this.#items.size;
  }

  /**
   * Builds a new index in folder `dir` (which must not exist or be empty): copies the model, builds
   * the HNSW graph over `init.set` and writes everything beside `dir` before renaming it into place,
   * so `dir` is either untouched or a complete index.
   */
  static async create(dir: string, init: CreateIndexInit): Promise<void> {
    const target = path.resolve(dir);
    const { set, sources } = init;
    if (set.count === 0) throw new DmlError('E_EMPTY', `Cannot build index ${dir}: no items to index`);
    if (sources.length !== set.count || set.ids.length !== set.count || set.labels.length !== set.count) {
      throw invalidParameterError('sources', `${set.count} image sources (one per embedding)`, sources);
    }
    set.ids.forEach((id, i) => checkItemId(`set.ids[${i}]`, id));
    set.labels.forEach((label, i) => checkItemText(`set.labels[${i}]`, label));
    await checkNewIndexFolder(dir);
    const tmp = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    try {
      await mkdir(tmp, { recursive: true });
      await copyIndexModel(tmp, init.modelPath, init.metadata.model.sha256);
      const graph = await HnswIndex.build(set.vectors, set.count, set.dim, {
        ...init.hnsw,
        ...(init.onProgress !== undefined ? { onProgress: init.onProgress } : {}),
      });
      const items: ItemsFile = {
        format: SEARCH_INDEX_FORMAT,
        nextSlot: set.count,
        items: set.ids.map((id, slot) => ({ slot, id, label: set.labels[slot] as string, source: sources[slot] as ImageSource })),
      };
      await writeGeneration(path.join(tmp, 'gen-1'), graph, items);
      await writeMetadata(tmp, { format: SEARCH_INDEX_FORMAT, createdAt: new Date().toISOString(), ...init.metadata, dim: set.dim, hnsw: graph.params }, 1);
      if (await stat(target).catch(() => undefined)) await rmdir(target);
      await rename(tmp, target);
      await syncPath(path.dirname(target));
    } catch (err) {
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      throw ioError(`Cannot write index ${dir}`, err);
    }
  }

  /**
   * Opens the index in `dir`: loads the current snapshot and replays its journal. Errors: E_NOT_FOUND
   * when `dir` holds no index; E_DATASET when a file is corrupt; E_IO when it is locked by another
   * process (writable opens only).
   */
  static async open(dir: string, options: OpenIndexOptions = {}): Promise<SearchIndexStore> {
    const writable = options.writable ?? false;
    const snapshotEvery = options.snapshotEvery ?? DEFAULT_SNAPSHOT_EVERY;
    checkPositiveInteger('snapshotEvery', snapshotEvery);
    const root = path.resolve(dir);
    if (!(await stat(path.join(root, METADATA_FILE)).catch(() => undefined))) {
      throw new DmlError('E_NOT_FOUND', `No search index at ${dir} (${METADATA_FILE} is missing)`);
    }
    // Before the lock: an old index's model data file may be what sits in its place (layout.ts).
    const modelPath = await indexModelPath(root, dir);
    const lockFile = writable ? await acquireFolderLock(root, `Index ${dir}`) : undefined;
    try {
      // A reader racing a writer's snapshot may find the generation it read gone: it reads index.json again.
      for (let attempt = 1; ; attempt++) {
        try {
          return await SearchIndexStore.#load(root, dir, { writable, snapshotEvery, lockFile, modelPath });
        } catch (err) {
          if (writable || attempt === 3 || (err as DmlError).code !== 'E_NOT_FOUND') throw err;
        }
      }
    } catch (err) {
      if (lockFile !== undefined) await releaseFolderLock(lockFile);
      throw err;
    }
  }

  static async #load(
    root: string,
    dir: string,
    opened: { writable: boolean; snapshotEvery: number; lockFile: string | undefined; modelPath: string },
  ): Promise<SearchIndexStore> {
    const { writable } = opened;
    const { metadata, generation, items, graph } = await readSnapshot(root, dir);
    const store = new SearchIndexStore({ dir: root, metadata, graph, generation, items, ...opened });
    await store.#journal.replay((ops, where) => store.#apply(ops, where));
    if (writable) await removeLeftovers(root, generation);
    return store;
  }

  #insert(slot: number, item: IndexedItem): void {
    this.#items.set(slot, item);
    this.#slots.set(item.id, slot);
    this.#labelCounts.set(item.label, (this.#labelCounts.get(item.label) ?? 0) + 1);
  }

  /** Applies journal ops to the graph and the maps (checked first, so a bad line changes nothing). */
  #apply(ops: JournalOp[], where: string): void {
    const ids = new Set(this.#slots.keys());
    const vectors = ops.map((op, i) => {
      if (op.op === 'add' && !ids.has(op.id)) {
        ids.add(op.id);
        return decodeVector(op.vector, this.dim, `${where}, change ${i + 1}`);
      }
      if (op.op === 'remove' && ids.delete(op.id)) return undefined;
      throw new DmlError('E_DATASET', `${where}, change ${i + 1}: cannot ${String(op.op)} item ${JSON.stringify(op.id)}`);
    });
    ops.forEach((op, i) => {
      if (op.op === 'add') {
        if (this.#vacant > 0) {
          this.#vacant--;
        } else if (this.#graph.count >= this.#graph.capacity) {
          this.#graph.resize(Math.max(16, Math.ceil(this.#graph.capacity * 1.5)));
        }
        const slot = this.#nextSlot++;
        this.#graph.add(vectors[i] as Float32Array, slot);
        this.#insert(slot, { id: op.id, label: op.label, source: op.source });
      } else {
        const slot = this.#slots.get(op.id) as number;
        const item = this.#items.get(slot) as IndexedItem;
        this.#graph.markDeleted(slot);
        this.#vacant++;
        this.#items.delete(slot);
        this.#slots.delete(op.id);
        const left = (this.#labelCounts.get(item.label) as number) - 1;
        if (left === 0) this.#labelCounts.delete(item.label);
        else this.#labelCounts.set(item.label, left);
      }
    });
  }

  /** The index folder (absolute). */
  get dir(): string {
    return this.#dir;
  }

  /** Path of the model copy. */
  get modelPath(): string {
    return this.#modelPath;
  }

  /** What index.json records (a copy). */
  get metadata(): SearchIndexMetadata {
    return structuredClone(this.#metadata);
  }

  /** Embedding dimension. */
  get dim(): number {
    return this.#metadata.dim;
  }

  /** Number of live items. */
  get count(): number {
    return this.#items.size;
  }

  /** Current snapshot generation (grows by one per snapshot). */
  get generation(): number {
    return this.#generation;
  }

  /** Lines in the journal since the last snapshot. */
  get journalLines(): number {
    return this.#journal.lines;
  }

  /** Whether the index was opened for writing. */
  get writable(): boolean {
    return this.#writable;
  }

  /** No data file is read by a search: the graph is in memory. */
  dataFiles(): null {
    return null;
  }

  /** Changes not folded into a snapshot yet: the journal's lines. */
  pendingChanges(): number {
    return this.#journal.lines;
  }

  /** What `dml index info` prints: the folder, item count, generation, journal lines, labels and the metadata. */
  info(): Record<string, unknown> {
    return { kind: this.kind, dir: this.#dir, items: this.count, generation: this.#generation, journalLines: this.#journal.lines, labels: this.labelCounts(), ...this.metadata };
  }

  /** Number of items per label, labels sorted. */
  labelCounts(): Array<{ label: string; count: number }> {
    return [...this.#labelCounts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([label, count]) => ({ label, count }));
  }

  /** The item with this id, if any. */
  get(id: string): IndexedItem | undefined {
    const slot = this.#slots.get(id);
    return slot === undefined ? undefined : this.#items.get(slot);
  }

  /** Which of `ids` the index holds. */
  existing(ids: readonly string[]): Set<string> {
    return new Set(ids.filter((id) => this.#slots.has(id)));
  }

  /** The item's image source with relative paths resolved against the index folder. */
  resolveSource(item: IndexedItem): ImageSource {
    return item.source.kind === 'file' ? { kind: 'file', path: path.resolve(this.#dir, item.source.path) } : item.source;
  }

  /** Items in insertion order (build order, then additions), optionally of one label; `offset`/`limit` page through them. */
  list(options: { offset?: number; limit?: number; label?: string | undefined } = {}): { total: number; items: IndexedItem[] } {
    const { offset = 0, limit = 100, label } = options;
    const all = [...this.#items.values()].filter((item) => label === undefined || item.label === label);
    return { total: all.length, items: all.slice(offset, offset + limit) };
  }

  /** The stored (L2-normalised) embedding of item `id`. Errors: E_NOT_FOUND for an unknown id. */
  vector(id: string): Float32Array {
    const slot = this.#slots.get(id);
    if (slot === undefined) throw new DmlError('E_NOT_FOUND', `No item with id ${JSON.stringify(id)} in the index`);
    return this.#graph.vector(slot);
  }

  /**
   * The `k` items nearest to `query` by cosine similarity (HNSW, ef at least k), best first, ties by
   * insertion order. Fewer come back when fewer items qualify, or when a label filter leaves the graph
   * walk too few matches within ef.
   */
  search(query: Float32Array, options: IndexSearchOptions): SearchHit[] {
    checkVector('query', query, this.dim);
    const { k, label, excludeId } = options;
    checkPositiveInteger('k', k);
    const excluded = excludeId === undefined ? undefined : this.#slots.get(excludeId);
    const excludedItem = excluded === undefined ? undefined : this.#items.get(excluded);
    const pool =
      (label === undefined ? this.#items.size : (this.#labelCounts.get(label) ?? 0)) -
      (excludedItem !== undefined && (label === undefined || excludedItem.label === label) ? 1 : 0);
    const wanted = Math.min(k, pool);
    if (wanted <= 0) return [];
    const filter =
      label === undefined && excluded === undefined
        ? undefined
        : (slot: number): boolean => slot !== excluded && (label === undefined || this.#items.get(slot)?.label === label);
    return this.#graph.nearest(query, wanted, filter).map(({ row: slot, similarity }) => {
      const item = this.#items.get(slot) as IndexedItem;
      return { id: item.id, label: item.label, score: similarity };
    });
  }

  /**
   * Adds items durably: when the promise resolves the batch is in the journal (fsynced) and visible to
   * searches; if it rejects, nothing of the batch was added. Errors: E_ARG for a bad or duplicate id,
   * label or vector; E_IO when the journal cannot be written.
   */
  async add(items: NewItem[]): Promise<void> {
    checkNewItems(items, this.dim);
    await this.#exclusive(async () => {
      for (const item of items) {
        if (this.#slots.has(item.id)) throw invalidParameterError('id', 'an id not already in the index', item.id);
      }
      const ops: JournalOp[] = [];
      for (const item of items) {
        const source = item.image instanceof Uint8Array ? await storeUpload(this.#dir, item.image) : item.image;
        ops.push({ op: 'add', id: item.id, label: item.label, source, vector: encodeVector(item.vector) });
      }
      await this.#commit(ops);
    });
  }

  /** Removes items durably (see {@link add}). Errors: E_NOT_FOUND when an id is not in the index (nothing is removed). */
  async remove(ids: string[]): Promise<void> {
    if (!Array.isArray(ids) || ids.length === 0) throw invalidParameterError('ids', 'a non-empty array', ids);
    await this.#exclusive(async () => {
      const unique = [...new Set(ids)];
      const missing = unique.filter((id) => !this.#slots.has(id));
      if (missing.length > 0) {
        throw new DmlError('E_NOT_FOUND', `No item with id ${missing.map((id) => JSON.stringify(id)).join(', ')} in the index`);
      }
      await this.#commit(unique.map((id) => ({ op: 'remove', id })));
    });
  }

  /** Folds the journal into a new snapshot generation (see the file comment); a no-op when the journal is empty. */
  async snapshot(): Promise<void> {
    await this.#exclusive(() => this.#snapshot());
  }

  /** `dml index optimize`: {@link snapshot}; resolves to the generation before and after. Errors: E_ARG for `rebuildAnn`. */
  async optimize(options: OptimizeOptions = {}): Promise<{ generations: [number, number] }> {
    if (options.rebuildAnn === true) {
      throw invalidParameterError('rebuildAnn', 'false for an hnswlib index (its graph is the index; build a new index to rebuild it)', true);
    }
    const before = this.#generation;
    await this.snapshot();
    return { generations: [before, this.#generation] };
  }

  /**
   * Waits for pending writes, takes a snapshot if the journal is not empty and releases the lock;
   * later writes are refused. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    if (!this.#writable) {
      this.#closed = true;
      return;
    }
    const done = this.#exclusive(() => this.#snapshot());
    this.#closed = true;
    try {
      await done;
    } finally {
      if (this.#lockFile !== undefined) await releaseFolderLock(this.#lockFile);
    }
  }

  /** Runs `task` after every earlier write. */
  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    if (!this.#writable) return Promise.reject(new DmlError('E_ARG', `Index ${this.#dir} was opened read-only`));
    if (this.#closed) return Promise.reject(new DmlError('E_CANCELLED', `Index ${this.#dir} is closed`));
    const run = this.#writes.then(task);
    this.#writes = run.catch(() => undefined);
    return run;
  }

  /** Appends `ops` to the journal (fsynced), then applies them in memory; snapshots when the journal is long. */
  async #commit(ops: JournalOp[]): Promise<void> {
    await this.#journal.append(ops);
    this.#apply(ops, this.#journal.path);
    if (this.#journal.lines >= this.#snapshotEvery) await this.#snapshot();
  }

  /** Folds the journal into a new generation; then the old generation, its journal and unused uploads go. */
  async #snapshot(): Promise<void> {
    if (this.#journal.lines === 0) return;
    const next = this.#generation + 1;
    const items: ItemsFile = {
      format: SEARCH_INDEX_FORMAT,
      nextSlot: this.#nextSlot,
      items: [...this.#items].map(([slot, item]) => ({ slot, ...item })),
    };
    await writeSnapshot(this.#dir, next, this.#graph, items, this.#metadata);
    const old = this.#generation;
    this.#generation = next;
    this.#journal.startGeneration(next);
    await removeGeneration(this.#dir, old);
    await removeUnusedUploads(this.#dir, [...this.#items.values()].map((item) => item.source));
  }
}
