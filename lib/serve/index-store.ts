/**
 * @file The on-disk image search index that `dml index` writes and `dml serve` serves: an HNSW graph
 * of L2-normalised embeddings plus each item's id, label and image source, the embedder (a copy of
 * the ONNX model), its preprocessing and the HNSW parameters.
 *
 * Layout of an index folder:
 * ```
 * index.json           metadata (format, model sha256, preprocessing, dim, HNSW parameters) and the
 *                      current generation G; replacing this file is the commit point of a snapshot
 * model.onnx           the embedder, copied at build time (its sha256 is in index.json)
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
 * (the `lock` file); read-only opens take no lock.
 */
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import hnswlib from 'hnswlib-node';
import type { HierarchicalNSW as NativeIndex } from 'hnswlib-node';
import type { ImageSource } from '../data/manifest.js';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import { DmlError, invalidParameterError } from '../errors.js';
import type { Preprocessing } from '../image/preprocessing.js';
import { HnswIndex, type HnswParams } from '../search/hnsw.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { sha256, sha256File } from '../util/hash.js';
import { DEFAULT_SNAPSHOT_EVERY } from './defaults.js';

const { HierarchicalNSW } = hnswlib;

/** Format tag of `index.json`. */
export const SEARCH_INDEX_FORMAT = 'dmlkit.search-index/1';

/** File name of the model copy inside an index folder. */
export const MODEL_FILE = 'model.onnx';

const METADATA_FILE = 'index.json';
const ITEMS_FILE = 'items.json';
const GRAPH_FILE = 'hnsw.bin';
const LOCK_FILE = 'lock';
const UPLOADS = 'uploads';

/** Longest item id and label accepted. */
export const MAX_ID_LENGTH = 512;


/** One indexed image. */
export interface IndexedItem {
  /** Unique id (the dataset's item id, or the id given when it was added). */
  id: string;
  label: string;
  /** Where the image is; a relative file path is relative to the index folder (uploads). */
  source: ImageSource;
}

/** What `index.json` records besides the generation. */
export interface SearchIndexMetadata {
  format: typeof SEARCH_INDEX_FORMAT;
  createdAt: string;
  model: {
    /** SHA-256 of `model.onnx`. */
    sha256: string;
    /** The path the model was copied from, for provenance. */
    source: string;
    /** The model output holding the embeddings. */
    outputName: string;
  };
  preprocessing: Preprocessing;
  /** Embedding dimension. */
  dim: number;
  /** HNSW parameters (ef is the search-time default; a search for k neighbours uses at least k). */
  hnsw: HnswParams;
  /** The dataset the index was built from. */
  dataset: { spec: string; manifestHash: string };
}

interface MetadataFile extends SearchIndexMetadata {
  generation: number;
  updatedAt: string;
}

interface ItemsFile {
  format: typeof SEARCH_INDEX_FORMAT;
  /** Slot to give the next added item (never reused: hnswlib labels must be fresh). */
  nextSlot: number;
  items: Array<IndexedItem & { slot: number }>;
}

/** One change in a journal line. */
type JournalOp =
  | { op: 'add'; id: string; label: string; source: ImageSource; /** base64 of the float32 vector */ vector: string }
  | { op: 'remove'; id: string };

/** An item to add: its embedding, and either where its image is or the image bytes to store. */
export interface NewItem {
  id: string;
  label: string;
  /** L2-normalised embedding of the index's dimension. */
  vector: Float32Array;
  /** The image: a source (kept as is) or encoded bytes (stored under `uploads/`). */
  image: ImageSource | Uint8Array;
}

/** One search result. */
export interface SearchHit {
  id: string;
  label: string;
  /** Cosine similarity to the query. */
  score: number;
}

/** Options of {@link SearchIndexStore.search}. */
export interface IndexSearchOptions {
  /** Neighbours wanted (fewer come back when fewer items qualify). */
  k: number;
  /** Only items with this label. */
  label?: string | undefined;
  /** Leave this item out (a search by an indexed item's own vector). */
  excludeId?: string | undefined;
}

/** Options of {@link SearchIndexStore.open}. */
export interface OpenIndexOptions {
  /** Open for writing: takes the lock and tidies leftovers of interrupted snapshots. Default false. */
  writable?: boolean;
  /** With `writable`: take a snapshot once the journal holds this many lines. Default {@link DEFAULT_SNAPSHOT_EVERY}. */
  snapshotEvery?: number;
}

/** What {@link SearchIndexStore.create} builds an index from. */
export interface CreateIndexInit {
  /** The ONNX model the embeddings came from; copied into the index. */
  modelPath: string;
  metadata: Omit<SearchIndexMetadata, 'format' | 'createdAt' | 'dim' | 'hnsw'>;
  /** Embeddings with ids and labels (L2-normalised rows). */
  set: EmbeddingSet;
  /** Image source of each row of `set`. */
  sources: ImageSource[];
  /** HNSW build parameters. */
  hnsw: { m: number; efConstruction: number; ef: number; seed: number };
  onProgress?: (done: number, total: number) => void;
}

/** fsyncs a file or folder (a folder: so that the names created or renamed in it are durable). */
async function syncPath(p: string): Promise<void> {
  const handle = await open(p, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function ioError(what: string, err: unknown): DmlError {
  if (err instanceof DmlError) return err;
  const code = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'E_NOT_FOUND' : 'E_IO';
  return new DmlError(code, `${what}: ${(err as Error).message}`, { cause: err });
}

function encodeVector(vector: Float32Array): string {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
}

function decodeVector(text: string, dim: number, where: string): Float32Array {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length !== dim * 4) throw new DmlError('E_DATASET', `${where}: vector of ${bytes.length} bytes (expected ${dim} float32 values)`);
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
}

/** Checks an id or label: a non-empty string of at most {@link MAX_ID_LENGTH} characters without control characters. */
export function checkItemText(name: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID_LENGTH || /[\u0000-\u001f\u007f]/.test(value)) {
    throw invalidParameterError(name, `a non-empty string of at most ${MAX_ID_LENGTH} characters without control characters`, value);
  }
  return value;
}

/** Checks a query or item vector: a Float32Array of `dim` finite values, not all zero. */
export function checkVector(name: string, vector: unknown, dim: number): Float32Array {
  if (!(vector instanceof Float32Array) || vector.length !== dim) {
    throw invalidParameterError(name, `a Float32Array of ${dim} values (the index's dimension)`, vector);
  }
  let norm = 0;
  for (const v of vector) {
    if (!Number.isFinite(v)) throw invalidParameterError(name, 'finite values', v);
    norm += v * v;
  }
  if (norm === 0) throw invalidParameterError(name, 'a vector with a non-zero norm', 'all zeros');
  return vector;
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the write lock of index folder `dir`, replacing a lock whose process on this host is gone. */
async function acquireLock(dir: string): Promise<string> {
  const file = path.join(dir, LOCK_FILE);
  const mine = JSON.stringify({ pid: process.pid, host: os.hostname(), since: new Date().toISOString() });
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(file, mine, { flag: 'wx' });
      return file;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw ioError(`Cannot lock index ${dir}`, err);
    }
    let holder: { pid?: unknown; host?: unknown } = {};
    try {
      holder = JSON.parse(await readFile(file, 'utf8')) as typeof holder;
    } catch {
      // An empty or half-written lock file: its writer died before finishing it.
    }
    const pid = typeof holder.pid === 'number' ? holder.pid : undefined;
    if (pid !== undefined && (holder.host !== os.hostname() || isProcessAlive(pid))) {
      throw new DmlError(
        'E_IO',
        `Index ${dir} is in use by process ${pid} on ${String(holder.host)} (lock file ${file}); stop that process, or delete the lock file if it is gone`,
      );
    }
    await rm(file, { force: true });
  }
}

/**
 * Checks that `dir` can become a new index folder: it does not exist or is an empty folder. `name`
 * names it in the error (E_ARG).
 */
export async function checkNewIndexFolder(dir: string, name = 'dir'): Promise<void> {
  const existing = await stat(dir).catch(() => undefined);
  if (existing && !(existing.isDirectory() && (await readdir(dir)).length === 0)) {
    throw invalidParameterError(name, 'a new or empty folder', dir);
  }
}

/** A mutable HNSW image index in a folder (see the file comment for the layout and guarantees). */
export class SearchIndexStore {
  readonly #dir: string;
  readonly #metadata: SearchIndexMetadata;
  readonly #native: NativeIndex;
  readonly #writable: boolean;
  readonly #snapshotEvery: number;
  readonly #lockFile: string | undefined;
  readonly #items = new Map<number, IndexedItem>();
  readonly #slots = new Map<string, number>();
  readonly #labelCounts = new Map<string, number>();
  #generation: number;
  #nextSlot: number;
  /** Marked-deleted graph nodes not yet reused. */
  #vacant: number;
  #journalLines = 0;
  /** Bytes of the journal that hold complete lines; anything after is a torn tail. */
  #journalBytes = 0;
  #writes: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(init: {
    dir: string;
    metadata: SearchIndexMetadata;
    native: NativeIndex;
    generation: number;
    items: ItemsFile;
    writable: boolean;
    snapshotEvery: number;
    lockFile: string | undefined;
  }) {
    this.#dir = init.dir;
    this.#metadata = init.metadata;
    this.#native = init.native;
    this.#generation = init.generation;
    this.#writable = init.writable;
    this.#snapshotEvery = init.snapshotEvery;
    this.#lockFile = init.lockFile;
    this.#nextSlot = init.items.nextSlot;
    for (const { slot, ...item } of init.items.items) this.#insert(slot, item);
    this.#vacant = init.native.getCurrentCount() - this.#items.size;
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
    set.ids.forEach((id, i) => checkItemText(`set.ids[${i}]`, id));
    set.labels.forEach((label, i) => checkItemText(`set.labels[${i}]`, label));
    await checkNewIndexFolder(dir);
    const tmp = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    try {
      await mkdir(tmp, { recursive: true });
      await copyFile(init.modelPath, path.join(tmp, MODEL_FILE));
      await syncPath(path.join(tmp, MODEL_FILE));
      const copied = await sha256File(path.join(tmp, MODEL_FILE));
      if (copied !== init.metadata.model.sha256) {
        throw new DmlError('E_MODEL', `Model ${init.modelPath} changed while the index was built (sha256 ${copied}, expected ${init.metadata.model.sha256})`);
      }
      const graph = await HnswIndex.build(set.vectors, set.count, set.dim, {
        ...init.hnsw,
        ...(init.onProgress !== undefined ? { onProgress: init.onProgress } : {}),
      });
      await graph.save(path.join(tmp, 'gen-1', GRAPH_FILE));
      const items: ItemsFile = {
        format: SEARCH_INDEX_FORMAT,
        nextSlot: set.count,
        items: set.ids.map((id, slot) => ({ slot, id, label: set.labels[slot] as string, source: sources[slot] as ImageSource })),
      };
      await writeFileAtomic(path.join(tmp, 'gen-1', ITEMS_FILE), JSON.stringify(items));
      await syncPath(path.join(tmp, 'gen-1'));
      const now = new Date().toISOString();
      const metadata: MetadataFile = {
        format: SEARCH_INDEX_FORMAT,
        createdAt: now,
        ...init.metadata,
        dim: set.dim,
        hnsw: graph.params,
        generation: 1,
        updatedAt: now,
      };
      await writeFileAtomic(path.join(tmp, METADATA_FILE), `${JSON.stringify(metadata, null, 2)}\n`);
      await syncPath(tmp);
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
    if (!Number.isInteger(snapshotEvery) || snapshotEvery < 1) throw invalidParameterError('snapshotEvery', 'a positive integer', snapshotEvery);
    const root = path.resolve(dir);
    if (!(await stat(path.join(root, METADATA_FILE)).catch(() => undefined))) {
      throw new DmlError('E_NOT_FOUND', `No search index at ${dir} (${METADATA_FILE} is missing)`);
    }
    const lockFile = writable ? await acquireLock(root) : undefined;
    try {
      // A reader racing a writer's snapshot may find the generation it read gone: it reads index.json again.
      for (let attempt = 1; ; attempt++) {
        try {
          return await SearchIndexStore.#load(root, dir, writable, snapshotEvery, lockFile);
        } catch (err) {
          if (writable || attempt === 3 || (err as DmlError).code !== 'E_NOT_FOUND') throw err;
        }
      }
    } catch (err) {
      if (lockFile !== undefined) await rm(lockFile, { force: true });
      throw err;
    }
  }

  static async #load(root: string, dir: string, writable: boolean, snapshotEvery: number, lockFile: string | undefined): Promise<SearchIndexStore> {
    const metadataPath = path.join(root, METADATA_FILE);
    let text: string;
    try {
      text = await readFile(metadataPath, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new DmlError('E_NOT_FOUND', `No search index at ${dir} (${METADATA_FILE} is missing)`);
      throw ioError(`Cannot read ${metadataPath}`, err);
    }
    let file: MetadataFile;
    try {
      file = JSON.parse(text) as MetadataFile;
    } catch (err) {
      throw new DmlError('E_DATASET', `${metadataPath} is not valid JSON: ${(err as Error).message}`, { cause: err });
    }
    if (file?.format !== SEARCH_INDEX_FORMAT || !Number.isInteger(file.generation) || !Number.isInteger(file.dim)) {
      throw new DmlError('E_DATASET', `${metadataPath}: expected a ${SEARCH_INDEX_FORMAT} file with a generation and a dim`);
    }
    const { generation, updatedAt: _updatedAt, ...metadata } = file;
    const genDir = path.join(root, `gen-${generation}`);
    const itemsPath = path.join(genDir, ITEMS_FILE);
    let items: ItemsFile;
    try {
      items = JSON.parse(await readFile(itemsPath, 'utf8')) as ItemsFile;
    } catch (err) {
      throw err instanceof SyntaxError
        ? new DmlError('E_DATASET', `${itemsPath} is not valid JSON: ${err.message}`, { cause: err })
        : ioError(`Cannot read ${itemsPath}`, err);
    }
    if (items?.format !== SEARCH_INDEX_FORMAT || !Array.isArray(items.items)) {
      throw new DmlError('E_DATASET', `${itemsPath}: expected a ${SEARCH_INDEX_FORMAT} item list`);
    }
    const graphPath = path.join(genDir, GRAPH_FILE);
    const native = new HierarchicalNSW(metadata.hnsw.space, metadata.dim);
    try {
      await native.readIndex(graphPath, true);
    } catch (err) {
      throw new DmlError('E_DATASET', `${graphPath} is not a readable hnswlib index: ${(err as Error).message}`, { cause: err });
    }
    native.setEf(metadata.hnsw.ef);
    const inGraph = new Set(native.getIdsList());
    const stray = items.items.find(({ slot }) => !inGraph.has(slot));
    if (stray !== undefined) {
      throw new DmlError('E_DATASET', `${itemsPath} lists item ${JSON.stringify(stray.id)} at slot ${stray.slot}, which ${graphPath} does not hold`);
    }
    const store = new SearchIndexStore({ dir: root, metadata, native, generation, items, writable, snapshotEvery, lockFile });
    await store.#replayJournal();
    if (writable) await store.#removeLeftovers();
    return store;
  }

  #insert(slot: number, item: IndexedItem): void {
    this.#items.set(slot, item);
    this.#slots.set(item.id, slot);
    this.#labelCounts.set(item.label, (this.#labelCounts.get(item.label) ?? 0) + 1);
  }

  get #journalPath(): string {
    return path.join(this.#dir, `journal-${this.#generation}.jsonl`);
  }

  /** Applies the complete lines of the current journal; a torn last line (a crash mid-write) is ignored. */
  async #replayJournal(): Promise<void> {
    let bytes: Buffer;
    try {
      bytes = await readFile(this.#journalPath);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw ioError(`Cannot read ${this.#journalPath}`, err);
    }
    let start = 0;
    let line = 0;
    for (let end = bytes.indexOf(10); end >= 0; start = end + 1, end = bytes.indexOf(10, start)) {
      line++;
      const where = `${this.#journalPath} line ${line}`;
      let entry: { ops?: unknown };
      try {
        entry = JSON.parse(bytes.subarray(start, end).toString('utf8')) as { ops?: unknown };
      } catch (err) {
        throw new DmlError('E_DATASET', `${where} is corrupt: ${(err as Error).message}`, { cause: err });
      }
      if (!Array.isArray(entry?.ops)) throw new DmlError('E_DATASET', `${where} is corrupt: no list of changes`);
      this.#apply(entry.ops as JournalOp[], where);
      this.#journalLines++;
    }
    this.#journalBytes = start;
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
        } else if (this.#native.getCurrentCount() >= this.#native.getMaxElements()) {
          this.#native.resizeIndex(Math.max(16, Math.ceil(this.#native.getMaxElements() * 1.5)));
        }
        const slot = this.#nextSlot++;
        this.#native.addPoint(Array.from(vectors[i] as Float32Array), slot, true);
        this.#insert(slot, { id: op.id, label: op.label, source: op.source });
      } else {
        const slot = this.#slots.get(op.id) as number;
        const item = this.#items.get(slot) as IndexedItem;
        this.#native.markDelete(slot);
        this.#vacant++;
        this.#items.delete(slot);
        this.#slots.delete(op.id);
        const left = (this.#labelCounts.get(item.label) as number) - 1;
        if (left === 0) this.#labelCounts.delete(item.label);
        else this.#labelCounts.set(item.label, left);
      }
    });
  }

  /** Removes generations, journals and temporary folders other than the current ones. */
  async #removeLeftovers(): Promise<void> {
    const keep = new Set([`gen-${this.#generation}`, `journal-${this.#generation}.jsonl`]);
    for (const name of await readdir(this.#dir)) {
      if (keep.has(name) || !(/^gen-\d+$/.test(name) || /^journal-\d+\.jsonl$/.test(name) || /^\..*\.tmp$/.test(name))) continue;
      await rm(path.join(this.#dir, name), { recursive: true, force: true });
    }
  }

  /** The index folder (absolute). */
  get dir(): string {
    return this.#dir;
  }

  /** Path of the model copy. */
  get modelPath(): string {
    return path.join(this.#dir, MODEL_FILE);
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
    return this.#journalLines;
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
    return Float32Array.from(this.#native.getPoint(slot));
  }

  /**
   * The `k` items nearest to `query` by cosine similarity (HNSW, ef at least k), best first, ties by
   * insertion order. Fewer come back when fewer items qualify, or when a label filter leaves the graph
   * walk too few matches within ef.
   */
  search(query: Float32Array, options: IndexSearchOptions): SearchHit[] {
    checkVector('query', query, this.dim);
    const { k, label, excludeId } = options;
    if (!Number.isInteger(k) || k < 1) throw invalidParameterError('k', 'a positive integer', k);
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
    this.#native.setEf(Math.max(this.#metadata.hnsw.ef, wanted));
    const { distances, neighbors } = this.#native.searchKnn(Array.from(query), wanted, filter);
    const hits = neighbors.map((slot, j) => {
      const item = this.#items.get(slot) as IndexedItem;
      return { slot, id: item.id, label: item.label, score: Math.fround(1 - (distances[j] as number)) };
    });
    hits.sort((a, b) => b.score - a.score || a.slot - b.slot);
    return hits.map(({ id, label: l, score }) => ({ id, label: l, score }));
  }

  /**
   * Adds items durably: when the promise resolves the batch is in the journal (fsynced) and visible to
   * searches; if it rejects, nothing of the batch was added. Errors: E_ARG for a bad or duplicate id,
   * label or vector; E_IO when the journal cannot be written.
   */
  async add(items: NewItem[]): Promise<void> {
    if (!Array.isArray(items) || items.length === 0) throw invalidParameterError('items', 'a non-empty array', items);
    const ids = new Set<string>();
    items.forEach((item, i) => {
      checkItemText(`items[${i}].id`, item.id);
      checkItemText(`items[${i}].label`, item.label);
      checkVector(`items[${i}].vector`, item.vector, this.dim);
      if (ids.has(item.id)) throw invalidParameterError(`items[${i}].id`, 'an id not given twice', item.id);
      ids.add(item.id);
    });
    await this.#exclusive(async () => {
      for (const item of items) {
        if (this.#slots.has(item.id)) throw invalidParameterError('id', 'an id not already in the index', item.id);
      }
      const ops: JournalOp[] = [];
      for (const item of items) {
        const source = item.image instanceof Uint8Array ? await this.#storeUpload(item.image) : item.image;
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
      if (this.#lockFile !== undefined) await rm(this.#lockFile, { force: true });
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

  /** Stores uploaded image bytes under uploads/<sha256> and returns their source (relative path). */
  async #storeUpload(bytes: Uint8Array): Promise<ImageSource> {
    const relative = `${UPLOADS}/${sha256(bytes)}`;
    const file = path.join(this.#dir, relative);
    if (!(await stat(file).catch(() => undefined))) await writeFileAtomic(file, bytes);
    return { kind: 'file', path: relative };
  }

  /**
   * Appends one journal line holding `ops`, fsyncs it, then applies it in memory. The file is opened
   * per commit (an open costs little next to the fsync), and a torn tail after the last complete line
   * (a crash, or a failed earlier write) is cut off first.
   */
  async #commit(ops: JournalOp[]): Promise<void> {
    const line = Buffer.from(`${JSON.stringify({ ops, at: new Date().toISOString() })}\n`);
    let handle: FileHandle | undefined;
    try {
      const fresh = this.#journalBytes === 0 && !(await stat(this.#journalPath).catch(() => undefined));
      handle = await open(this.#journalPath, 'a');
      if ((await handle.stat()).size !== this.#journalBytes) await handle.truncate(this.#journalBytes);
      await handle.write(line);
      await handle.datasync();
      if (fresh) await syncPath(this.#dir);
    } catch (err) {
      throw ioError(`Cannot write ${this.#journalPath}`, err);
    } finally {
      await handle?.close().catch(() => undefined);
    }
    this.#journalBytes += line.length;
    this.#journalLines++;
    this.#apply(ops, this.#journalPath);
    if (this.#journalLines >= this.#snapshotEvery) await this.#snapshot();
  }

  async #snapshot(): Promise<void> {
    if (this.#journalLines === 0) return;
    const next = this.#generation + 1;
    const genDir = path.join(this.#dir, `gen-${next}`);
    const tmp = path.join(this.#dir, `.gen-${next}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    try {
      await rm(genDir, { recursive: true, force: true });
      await mkdir(tmp);
      await this.#native.writeIndex(path.join(tmp, GRAPH_FILE));
      await syncPath(path.join(tmp, GRAPH_FILE));
      const items: ItemsFile = {
        format: SEARCH_INDEX_FORMAT,
        nextSlot: this.#nextSlot,
        items: [...this.#items].map(([slot, item]) => ({ slot, ...item })),
      };
      await writeFileAtomic(path.join(tmp, ITEMS_FILE), JSON.stringify(items));
      await syncPath(tmp);
      await rename(tmp, genDir);
      const file: MetadataFile = { ...this.#metadata, generation: next, updatedAt: new Date().toISOString() };
      await writeFileAtomic(path.join(this.#dir, METADATA_FILE), `${JSON.stringify(file, null, 2)}\n`);
      await syncPath(this.#dir);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      throw ioError(`Cannot write a snapshot of index ${this.#dir}`, err);
    }
    // Committed: the old generation, its journal and unreferenced uploads are obsolete.
    const old = this.#generation;
    this.#generation = next;
    this.#journalLines = 0;
    this.#journalBytes = 0;
    await rm(path.join(this.#dir, `gen-${old}`), { recursive: true, force: true }).catch(() => undefined);
    await rm(path.join(this.#dir, `journal-${old}.jsonl`), { force: true }).catch(() => undefined);
    await this.#removeUnusedUploads();
  }

  async #removeUnusedUploads(): Promise<void> {
    const used = new Set<string>();
    for (const { source } of this.#items.values()) if (source.kind === 'file' && source.path.startsWith(`${UPLOADS}/`)) used.add(source.path);
    const names = await readdir(path.join(this.#dir, UPLOADS)).catch(() => [] as string[]);
    for (const name of names) {
      if (!used.has(`${UPLOADS}/${name}`)) await rm(path.join(this.#dir, UPLOADS, name), { force: true }).catch(() => undefined);
    }
  }
}
