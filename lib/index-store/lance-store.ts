/**
 * @file The LanceDB index store (`lance:<folder>`): the `lance` implementation of {@link IndexStore}.
 * The vectors stay on disk in a LanceDB table and are searched from there, so an index is not bound
 * by one process's memory, and any number of read-only processes can serve one table while one writer
 * changes it. Needs the optional peer dependency `@lancedb/lancedb` (with `apache-arrow`).
 *
 * Layout of an index folder:
 * ```
 * index.json      metadata (format, model sha256, preprocessing, dim, dataset, ANN parameters)
 * model/model.onnx the embedder, copied at build time (with its external data files, if any, beside it
 *                 in model/, apart from the index's own files; an index written before keeps model.onnx at the top)
 * items.lance/    the LanceDB table `items`: id, label, source (JSON of the image source), vector;
 *                 or elsewhere: `index.json` names a database URI (`s3://bucket/prefix`, `gs://`,
 *                 `az://`) holding the table, and the folder holds the rest
 * uploads/<sha256> images added over HTTP (item sources point here, relative to the folder)
 * lock            pid of the process that holds the index open for writing (util/folder-lock.ts)
 * ```
 *
 * Search: exact (every row compared) while the table has no ANN index; the build creates an
 * IVF_HNSW_SQ index (cosine) once the table holds {@link LanceAnnParams.minRows} rows, and
 * `dml index optimize` creates it when additions have crossed that size later. With the index, a
 * search asks for `refineFactor` x k candidates and re-ranks them by their full vectors; rows added
 * since the index was built are searched exactly beside it until the next optimize. Concurrent
 * searches are coalesced (search-batcher.ts): at most one LanceDB query per core runs at a time, and
 * searches that wait for one, with the same k and filter, go to LanceDB as one query of several
 * vectors (up to `SEARCH_BATCH`), which returns for each vector what a query of its own would.
 * Only with the ANN index: without it every search is its own query, since a batch of query vectors on
 * an unindexed table is a path that exhausted the memory of a 23 GB machine (docs/stack.md, section 10).
 *
 * Durability: an add or remove returns once LanceDB has committed a new table version (its manifest
 * written and renamed into place), so a writer killed afterwards loses nothing acknowledged; one
 * killed before leaves the table at the previous version (files of the unfinished version are
 * unreferenced and go at the next optimize). LanceDB does not fsync: a power failure can lose the
 * last versions, unlike the hnswlib store's journal.
 *
 * Compaction: every commit is a data file of its own, and a search reads every file the table's
 * version holds (all of them while there is no ANN index): after 200 HTTP writes a search took ten
 * times as long. So a writable store compacts itself, as the hnswlib store folds its journal: after
 * `compactEvery` commits, when no write came for {@link COMPACT_IDLE_SECONDS} seconds after a commit,
 * and when it closes (LanceDB's optimize: small data files merged, indices brought up to date, versions
 * older than LanceDB's default of 7 days pruned). A write's answer never waits for a compaction (it
 * runs after the commit, before the next write); one that fails is retried at the next occasion and
 * shown in `info()`. `dataFiles()` counts the data files (fragments) of the version this process sees.
 *
 * Read replicas: a read-only store checks for a newer table version every `refreshSeconds`
 * (LanceDB's read consistency interval), and refreshes its item count and label counts when it finds
 * one. Only one process may hold an index open for writing (the `lock` file, as for the hnswlib store;
 * with the table on object storage the lock guards one machine only, and keeping to one writer across
 * machines is up to whoever runs them). Object-storage credentials come from the environment
 * variables LanceDB reads (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT`,
 * ...); dmlkit neither reads, records nor logs them.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import { readRegular } from '../util/regular-file.js';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { ImageSource } from '../data/manifest.js';
import { DmlError, invalidParameterError } from '../errors.js';
import { explainMissingLancedb } from '../util/optional-deps.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { checkInteger, checkPositiveInteger, checkTimerSeconds } from '../util/check.js';
import { LANCE_PREFIX, type IndexStore, type IndexStoreMetadata, type LabelCount, type ListOptions, type OptimizeOptions } from './index-store.js';
import {
  checkItemId,
  checkItemText,
  checkNewIndexFolder,
  checkNewItems,
  checkVector,
  copyIndexModel,
  ioError,
  METADATA_FILE,
  indexModelPath,
  removeUnusedUploads,
  storeUpload,
  syncPath,
  type CreateIndexInit,
  type IndexedItem,
  type IndexSearchOptions,
  type NewItem,
  type SearchHit,
} from './layout.js';
import { acquireFolderLock, releaseFolderLock } from '../util/folder-lock.js';
import { SearchBatcher } from './search-batcher.js';

/** Format tag of a LanceDB index folder's `index.json`. */
export const LANCE_INDEX_FORMAT = 'dmlkit.lance-index/1';

/** Name of the LanceDB table in the folder (`items.lance/`). */
export const LANCE_TABLE = 'items';

/** Name of the ANN index on the vector column. */
const VECTOR_INDEX = 'vector_idx';

/** Rows per write while a table is built (bounds the JavaScript copies of the vectors held at once). */
const BUILD_CHUNK = 20_000;

/** Ids per `id IN (...)` query of {@link LanceIndexStore.existing}. */
const ID_CHUNK = 1000;

/** Searches per LanceDB query at most when concurrent searches are coalesced (see the file comment). */
const SEARCH_BATCH = 16;

/** Seconds a read-only store waits before it looks for a newer table version, by default. */
export const DEFAULT_REFRESH_SECONDS = 5;

/** Commits after which a writable store compacts its data files, by default (see the file comment). */
export const DEFAULT_COMPACT_EVERY = 20;

/** Seconds without a write after which a writable store compacts the commits it has not compacted yet, by default. */
export const COMPACT_IDLE_SECONDS = 10;

/** How the ANN index of a LanceDB store is built and searched. */
export interface LanceAnnParams {
  /** Build the IVF_HNSW_SQ index once the table holds this many rows; below, search is exact. */
  minRows: number;
  /** IVF partitions (each its own HNSW graph); 0: one per 500,000 rows, at least 1. */
  partitions: number;
  /** HNSW M (neighbours per node). */
  m: number;
  /** HNSW efConstruction. */
  efConstruction: number;
  /** HNSW ef at query time (raised to k by a search for k neighbours). */
  ef: number;
  /** IVF partitions searched per query. */
  nprobes: number;
  /** Candidates per wanted neighbour re-ranked by their full vectors (1: no refine step). */
  refineFactor: number;
}

/** The ANN parameters `dml index build` uses unless told otherwise. */
export const DEFAULT_LANCE_ANN: LanceAnnParams = { minRows: 50_000, partitions: 0, m: 20, efConstruction: 300, ef: 64, nprobes: 20, refineFactor: 4 };

/** What `index.json` of a LanceDB index folder holds. */
export interface LanceIndexMetadata extends IndexStoreMetadata {
  format: typeof LANCE_INDEX_FORMAT;
  /** ANN parameters. */
  ann: LanceAnnParams;
  /**
   * Where the table is: null for `items.lance/` in the index folder, else the URI of the LanceDB
   * database holding the table `items` (`s3://bucket/prefix`, `gs://...`, `az://...`, or an absolute path).
   */
  table: string | null;
}

/**
 * What {@link LanceIndexStore.create} builds an index from: as for the hnswlib store, with ANN
 * parameters instead of HNSW ones, and optionally where to put the table (see
 * {@link LanceIndexMetadata.table}; a path is made absolute; the database must not hold a table
 * `items` yet).
 */
export type CreateLanceIndexInit = Omit<CreateIndexInit, 'hnsw'> & { ann: LanceAnnParams; table?: string | undefined };

/** What {@link LanceIndexStore.optimize} did. */
export interface LanceOptimizeResult {
  /** Table version before and after. */
  versions: [number, number];
  /** Data files LanceDB compacted away and wrote. */
  filesRemoved: number;
  filesAdded: number;
  /** Old table versions pruned. */
  versionsPruned: number;
  /** Whether the ANN index was trained now, created or rebuilt (rather than extended with the new rows, or still absent). */
  indexBuilt: boolean;
  /** Rows outside the ANN index afterwards. */
  unindexedRows: number;
}

// The part of LanceDB's API this store uses (structural types, so that dmlkit type-checks and builds
// without the optional package installed).
interface LanceQuery {
  where(predicate: string): LanceQuery;
  select(columns: string[]): LanceQuery;
  limit(limit: number): LanceQuery;
  offset(offset: number): LanceQuery;
  toArray(): Promise<Array<Record<string, unknown>>>;
}
interface LanceVectorQuery {
  distanceType(type: 'cosine'): LanceVectorQuery;
  where(predicate: string): LanceVectorQuery;
  select(columns: string[]): LanceVectorQuery;
  limit(limit: number): LanceVectorQuery;
  bypassVectorIndex(): LanceVectorQuery;
  addQueryVector(vector: Float32Array): LanceVectorQuery;
  refineFactor(factor: number): LanceVectorQuery;
  ef(ef: number): LanceVectorQuery;
  nprobes(nprobes: number): LanceVectorQuery;
  toArray(): Promise<Array<Record<string, unknown>>>;
}
interface LanceIndexConfig {
  name: string;
  columns: string[];
  numUnindexedRows?: number;
}
interface LanceTable {
  add(rows: Array<Record<string, unknown>>): Promise<unknown>;
  delete(predicate: string): Promise<unknown>;
  countRows(filter?: string): Promise<number>;
  createIndex(column: string, options: { config: unknown; replace?: boolean }): Promise<void>;
  listIndices(): Promise<LanceIndexConfig[]>;
  query(): LanceQuery;
  vectorSearch(vector: Float32Array): LanceVectorQuery;
  version(): Promise<number>;
  optimize(options?: { cleanupOlderThan?: Date }): Promise<{ compaction: { filesRemoved: number; filesAdded: number }; prune: { oldVersionsRemoved: number } }>;
  stats(): Promise<{ fragmentStats: { numFragments: number } }>;
  close(): void;
}
interface LanceConnection {
  tableNames(): Promise<string[]>;
  dropTable(name: string): Promise<void>;
  createTable(name: string, rows: Array<Record<string, unknown>>): Promise<LanceTable>;
  openTable(name: string): Promise<LanceTable>;
  close(): void;
}
interface LanceModule {
  connect(uri: string, options?: { readConsistencyInterval?: number }): Promise<LanceConnection>;
  Index: {
    hnswSq(options: { distanceType: 'cosine'; numPartitions: number; m: number; efConstruction: number }): unknown;
    btree(): unknown;
  };
}

/** Loads LanceDB; without it, one E_NOT_FOUND naming the packages to install (optional-deps.ts). */
async function loadLancedb(dir: string): Promise<LanceModule> {
  // Opts in to LanceDB's future behaviour, which silences the deprecation warning it prints on stderr
  // when it reads vector-index statistics (seen during an optimize after the ANN index was rebuilt).
  process.env['LANCE_INCLUDE_VECTOR_CENTROIDS'] ??= 'false';
  try {
    return (await import('@lancedb/lancedb' as string)) as LanceModule;
  } catch (err) {
    throw explainMissingLancedb(err, `Index ${LANCE_PREFIX}${dir}`);
  }
}

/** A table location as recorded: a URI (`scheme://...`) as given, a path made absolute. Errors: E_ARG for an empty one. */
function tableLocation(table: string): string {
  if (typeof table !== 'string' || table.trim() === '') throw invalidParameterError('table', 'a database URI (s3://bucket/prefix, gs://..., az://...) or a folder', table);
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(table) ? table : path.resolve(table);
}

/** A string as an SQL literal for LanceDB filters (single quotes doubled). */
function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** Checks ANN parameters; `name` prefixes the field names in errors. */
export function checkLanceAnnParams(params: LanceAnnParams, name = 'ann'): LanceAnnParams {
  checkPositiveInteger(`${name}.minRows`, params.minRows);
  checkInteger(`${name}.partitions`, params.partitions, 0);
  for (const key of ['m', 'efConstruction', 'ef', 'nprobes', 'refineFactor'] as const) checkPositiveInteger(`${name}.${key}`, params[key]);
  return params;
}

/** A table row as an item. */
function rowItem(row: Record<string, unknown>): IndexedItem {
  return { id: row['id'] as string, label: row['label'] as string, source: JSON.parse(row['source'] as string) as ImageSource };
}

/** One search as the store's {@link SearchBatcher} holds it: the query vector, k and the SQL filter ('' for none). */
interface LanceSearch {
  query: Float32Array;
  k: number;
  where: string;
}

/** An item as a table row. */
function itemRow(id: string, label: string, source: ImageSource, vector: Float32Array): Record<string, unknown> {
  return { id, label, source: JSON.stringify(source), vector };
}

/** A LanceDB image index in a folder (see the file comment for the layout and guarantees). */
export class LanceIndexStore implements IndexStore {
  /** Which {@link IndexStore} implementation this is. */
  readonly kind = 'lance';
  readonly #dir: string;
  readonly #metadata: LanceIndexMetadata;
  readonly #db: LanceConnection;
  readonly #table: LanceTable;
  readonly #lance: LanceModule;
  readonly #writable: boolean;
  readonly #lockFile: string | undefined;
  readonly #modelPath: string;
  readonly #refreshTimer: NodeJS.Timeout | undefined;
  readonly #compaction: { every: number; idleSeconds: number };
  /** Commits since the last compaction. */
  #uncompacted = 0;
  #idleTimer: NodeJS.Timeout | undefined;
  #compactionError: string | undefined;
  #dataFiles: { version: number; count: number } | undefined;
  readonly #searches = new SearchBatcher<LanceSearch, SearchHit[]>((_key, searches) => this.#searchBatch(searches), {
    maxInFlight: availableParallelism(),
    maxBatch: SEARCH_BATCH,
  });
  #count: number;
  #version: number;
  #annIndex: boolean;
  #labels: { version: number; counts: LabelCount[] } | undefined;
  #writes: Promise<unknown> = Promise.resolve();
  #refreshing: Promise<void> | undefined;
  #closed = false;

  private constructor(init: {
    dir: string;
    metadata: LanceIndexMetadata;
    lance: LanceModule;
    db: LanceConnection;
    table: LanceTable;
    writable: boolean;
    lockFile: string | undefined;
    modelPath: string;
    count: number;
    version: number;
    annIndex: boolean;
    refreshSeconds: number;
    compaction: { every: number; idleSeconds: number };
  }) {
    this.#dir = init.dir;
    this.#metadata = init.metadata;
    this.#lance = init.lance;
    this.#db = init.db;
    this.#table = init.table;
    this.#writable = init.writable;
    this.#lockFile = init.lockFile;
    this.#modelPath = init.modelPath;
    this.#count = init.count;
    this.#version = init.version;
    this.#annIndex = init.annIndex;
    this.#compaction = init.compaction;
    if (!init.writable) {
      this.#refreshTimer = setInterval(() => void this.refresh().catch(() => undefined), init.refreshSeconds * 1000);
      this.#refreshTimer.unref();
    }
  }

  /**
   * Builds a new index in folder `dir` (which must not exist or be empty): copies the model, writes
   * the table (and its ANN index when it is large enough) beside `dir` and renames it into place, so
   * `dir` is either untouched or a complete index. Errors: E_ARG for bad input; E_NOT_FOUND when
   * LanceDB is not installed; E_IO.
   */
  static async create(dir: string, init: CreateLanceIndexInit): Promise<void> {
    const target = path.resolve(dir);
    const { set, sources } = init;
    if (set.count === 0) throw new DmlError('E_EMPTY', `Cannot build index ${LANCE_PREFIX}${dir}: no items to index`);
    if (sources.length !== set.count || set.ids.length !== set.count || set.labels.length !== set.count) {
      throw invalidParameterError('sources', `${set.count} image sources (one per embedding)`, sources);
    }
    checkLanceAnnParams(init.ann);
    const ids = new Set<string>();
    set.ids.forEach((id, i) => {
      checkItemId(`set.ids[${i}]`, id);
      if (ids.has(id)) throw invalidParameterError(`set.ids[${i}]`, 'an id not given twice', id);
      ids.add(id);
    });
    set.labels.forEach((label, i) => checkItemText(`set.labels[${i}]`, label));
    const table = init.table === undefined ? null : tableLocation(init.table);
    await checkNewIndexFolder(dir);
    const lance = await loadLancedb(dir);
    const tmp = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    let db: LanceConnection | undefined;
    /** Whether this build created a table outside the folder (to drop if the build fails). */
    let createdElsewhere = false;
    try {
      await mkdir(tmp, { recursive: true });
      await copyIndexModel(tmp, init.modelPath, init.metadata.model.sha256);
      db = await lance.connect(table ?? tmp);
      const taken = (): DmlError => invalidParameterError('table', `a database that holds no table ${JSON.stringify(LANCE_TABLE)} yet`, table);
      if (table !== null && (await db.tableNames()).includes(LANCE_TABLE)) throw taken();
      const rows = (start: number): Array<Record<string, unknown>> =>
        set.ids.slice(start, start + BUILD_CHUNK).map((id, j) => {
          const row = start + j;
          return itemRow(id, set.labels[row] as string, sources[row] as ImageSource, set.vectors.subarray(row * set.dim, (row + 1) * set.dim));
        });
      // An object store may not list the table (s3rver does not): LanceDB's refusal to create it again is the check then.
      const created = await db.createTable(LANCE_TABLE, rows(0)).catch((err: unknown) => {
        throw table !== null && /already exists/i.test((err as Error).message) ? taken() : err;
      });
      createdElsewhere = table !== null;
      init.onProgress?.(Math.min(BUILD_CHUNK, set.count), set.count);
      for (let start = BUILD_CHUNK; start < set.count; start += BUILD_CHUNK) {
        await created.add(rows(start));
        init.onProgress?.(Math.min(start + BUILD_CHUNK, set.count), set.count);
      }
      // Each chunk is a fragment (a data file) of its own; a search reads its candidates' rows from the
      // fragments they lie in, and costs less with one (docs/index-stores.md).
      if (set.count > BUILD_CHUNK) await created.optimize({ cleanupOlderThan: new Date() });
      await created.createIndex('id', { config: lance.Index.btree() });
      if (set.count >= init.ann.minRows) await LanceIndexStore.#buildAnnIndex(lance, created, set.count, init.ann);
      created.close();
      const metadata: LanceIndexMetadata = { format: LANCE_INDEX_FORMAT, createdAt: new Date().toISOString(), ...init.metadata, dim: set.dim, ann: init.ann, table };
      await writeFileAtomic(path.join(tmp, METADATA_FILE), `${JSON.stringify(metadata, null, 2)}\n`);
      await syncPath(tmp);
      if (await stat(target).catch(() => undefined)) await rmdir(target);
      await rename(tmp, target);
      await syncPath(path.dirname(target));
    } catch (err) {
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      // A table this build wrote elsewhere, for an index that was never completed, goes too.
      if (createdElsewhere) await db?.dropTable(LANCE_TABLE).catch(() => undefined);
      throw ioError(`Cannot write index ${LANCE_PREFIX}${dir}`, err);
    } finally {
      db?.close();
    }
  }

  static async #buildAnnIndex(lance: LanceModule, table: LanceTable, rows: number, ann: LanceAnnParams): Promise<void> {
    const numPartitions = ann.partitions > 0 ? ann.partitions : Math.max(1, Math.round(rows / 500_000));
    await table.createIndex('vector', {
      config: lance.Index.hnswSq({ distanceType: 'cosine', numPartitions, m: ann.m, efConstruction: ann.efConstruction }),
      replace: true,
    });
  }

  /**
   * Opens the index in folder `dir`. Read-only by default, looking for newer table versions every
   * `refreshSeconds`; `writable` takes the folder's write lock and compacts after `compactEvery` commits
   * (default 20, `DEFAULT_COMPACT_EVERY`) or `compactIdleSeconds` (default 10, `COMPACT_IDLE_SECONDS`)
   * without a write (see the file comment). Errors: E_NOT_FOUND when `dir` holds no LanceDB index or
   * LanceDB is not installed; E_DATASET for a corrupt `index.json`; E_IO when it is locked by another
   * process (writable opens only).
   */
  static async open(
    dir: string,
    options: { writable?: boolean; refreshSeconds?: number; compactEvery?: number; compactIdleSeconds?: number } = {},
  ): Promise<LanceIndexStore> {
    const writable = options.writable ?? false;
    const refreshSeconds = options.refreshSeconds ?? DEFAULT_REFRESH_SECONDS;
    checkTimerSeconds('refreshSeconds', refreshSeconds);
    const compaction = {
      every: checkPositiveInteger('compactEvery', options.compactEvery ?? DEFAULT_COMPACT_EVERY),
      idleSeconds: checkTimerSeconds('compactIdleSeconds', options.compactIdleSeconds ?? COMPACT_IDLE_SECONDS),
    };
    const root = path.resolve(dir);
    const metadataPath = path.join(root, METADATA_FILE);
    let text: string;
    try {
      text = (await readRegular(metadataPath, 'index metadata')).toString('utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new DmlError('E_NOT_FOUND', `No search index at ${LANCE_PREFIX}${dir} (${METADATA_FILE} is missing)`);
      throw ioError(`Cannot read ${metadataPath}`, err);
    }
    let metadata: LanceIndexMetadata;
    try {
      metadata = JSON.parse(text) as LanceIndexMetadata;
    } catch (err) {
      throw new DmlError('E_DATASET', `${metadataPath} is not valid JSON: ${(err as Error).message}`, { cause: err });
    }
    if (metadata?.format !== LANCE_INDEX_FORMAT || !Number.isInteger(metadata.dim) || typeof metadata.ann !== 'object' || !(metadata.table === null || typeof metadata.table === 'string')) {
      throw new DmlError('E_DATASET', `${metadataPath}: expected a ${LANCE_INDEX_FORMAT} file with a dim, ANN parameters and a table location (a folder written by dml index build --out ${LANCE_PREFIX}<folder>)`);
    }
    const lance = await loadLancedb(dir);
    const modelPath = await indexModelPath(root, `${LANCE_PREFIX}${dir}`);
    const lockFile = writable ? await acquireFolderLock(root, `Index ${LANCE_PREFIX}${dir}`) : undefined;
    try {
      // A writer sees its own commits; a reader looks for other processes' commits every refreshSeconds.
      const db = await lance.connect(metadata.table ?? root, writable ? {} : { readConsistencyInterval: refreshSeconds });
      const table = await db.openTable(LANCE_TABLE).catch((err: unknown) => {
        db.close();
        throw ioError(`Cannot open the table of index ${LANCE_PREFIX}${dir}`, err);
      });
      const [count, version, indices] = await Promise.all([table.countRows(), table.version(), table.listIndices()]);
      return new LanceIndexStore({
        dir: root,
        metadata,
        lance,
        db,
        table,
        writable,
        lockFile,
        modelPath,
        count,
        version,
        annIndex: indices.some((index) => index.name === VECTOR_INDEX),
        refreshSeconds,
        compaction,
      });
    } catch (err) {
      if (lockFile !== undefined) await releaseFolderLock(lockFile);
      throw err;
    }
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
  get metadata(): LanceIndexMetadata {
    return structuredClone(this.#metadata);
  }

  /** Embedding dimension. */
  get dim(): number {
    return this.#metadata.dim;
  }

  /** Whether the index was opened for writing. */
  get writable(): boolean {
    return this.#writable;
  }

  /** Rows in the table, as of the last write or refresh. */
  get count(): number {
    return this.#count;
  }

  /** The table version this process sees. */
  get generation(): number {
    return this.#version;
  }

  /**
   * Looks for a newer table version (another process's commit) and, when there is one, reads the
   * item count and whether an ANN index exists again. A read-only store does this every
   * `refreshSeconds` by itself; concurrent calls share one check.
   */
  async refresh(): Promise<void> {
    this.#refreshing ??= (async () => {
      try {
        const version = await this.#table.version();
        if (version === this.#version) return;
        const [count, indices] = await Promise.all([this.#table.countRows(), this.#table.listIndices()]);
        this.#count = count;
        this.#annIndex = indices.some((index) => index.name === VECTOR_INDEX);
        this.#version = version;
      } finally {
        this.#refreshing = undefined;
      }
    })();
    return this.#refreshing;
  }

  /** Data files (fragments) of the table version this process sees: what a search without the ANN index reads, one by one. */
  async dataFiles(): Promise<number> {
    const version = this.#version;
    if (this.#dataFiles?.version !== version) this.#dataFiles = { version, count: (await this.#table.stats()).fragmentStats.numFragments };
    return this.#dataFiles.count;
  }

  /** Rows outside the ANN index: every row while there is none. */
  async pendingChanges(): Promise<number> {
    const index = (await this.#table.listIndices()).find((i) => i.name === VECTOR_INDEX);
    return index === undefined ? this.#count : (index.numUnindexedRows ?? 0);
  }

  /** Items per label, labels sorted (read from the table once per version). */
  async labelCounts(): Promise<LabelCount[]> {
    const version = this.#version;
    if (this.#labels?.version !== version) {
      const counts = new Map<string, number>();
      for (const row of await this.#table.query().select(['label']).toArray()) {
        const label = row['label'] as string;
        counts.set(label, (counts.get(label) ?? 0) + 1);
      }
      const sorted = [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([label, count]) => ({ label, count }));
      this.#labels = { version, counts: sorted };
    }
    return structuredClone(this.#labels.counts);
  }

  /** The item with this id, if any. */
  async get(id: string): Promise<IndexedItem | undefined> {
    const rows = await this.#table.query().where(`id = ${sqlString(id)}`).select(['id', 'label', 'source']).limit(1).toArray();
    return rows[0] === undefined ? undefined : rowItem(rows[0]);
  }

  /** Which of `ids` the table holds (queried 1000 ids at a time, through the index on `id`). */
  async existing(ids: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let start = 0; start < ids.length; start += ID_CHUNK) {
      const chunk = ids.slice(start, start + ID_CHUNK);
      const rows = await this.#table.query().where(`id IN (${chunk.map(sqlString).join(', ')})`).select(['id']).toArray();
      for (const row of rows) found.add(row['id'] as string);
    }
    return found;
  }

  /** The item's image source with relative paths resolved against the index folder. */
  resolveSource(item: IndexedItem): ImageSource {
    return item.source.kind === 'file' ? { kind: 'file', path: path.resolve(this.#dir, item.source.path) } : item.source;
  }

  /** A page of the items (storage order: insertion order until a compaction), optionally of one label, with the total. */
  async list(options: ListOptions = {}): Promise<{ total: number; items: IndexedItem[] }> {
    const { offset = 0, limit = 100, label } = options;
    checkInteger('offset', offset, 0);
    checkPositiveInteger('limit', limit);
    const filter = label === undefined ? undefined : `label = ${sqlString(label)}`;
    let query = this.#table.query().select(['id', 'label', 'source']).offset(offset).limit(limit);
    if (filter !== undefined) query = query.where(filter);
    const [total, rows] = await Promise.all([this.#table.countRows(filter), query.toArray()]);
    return { total, items: rows.map(rowItem) };
  }

  /** The stored embedding of item `id`. Errors: E_NOT_FOUND for an unknown id. */
  async vector(id: string): Promise<Float32Array> {
    const rows = await this.#table.query().where(`id = ${sqlString(id)}`).select(['vector']).limit(1).toArray();
    const vector = rows[0]?.['vector'] as { toArray(): Float32Array } | undefined;
    if (vector === undefined) throw new DmlError('E_NOT_FOUND', `No item with id ${JSON.stringify(id)} in the index`);
    return Float32Array.from(vector.toArray());
  }

  /**
   * The `k` items nearest to `query` by cosine similarity, best first: exact without an ANN index,
   * else IVF_HNSW_SQ candidates re-ranked by their full vectors (see the file comment). A label filter
   * and `excludeId` are applied before the search, so k items come back whenever k qualify. Concurrent
   * searches with the same k and filter may share one LanceDB query; each gets what it would alone.
   */
  async search(query: Float32Array, options: IndexSearchOptions): Promise<SearchHit[]> {
    checkVector('query', query, this.dim);
    const { k, label, excludeId } = options;
    checkPositiveInteger('k', k);
    const where = [
      ...(label !== undefined ? [`label = ${sqlString(label)}`] : []),
      ...(excludeId !== undefined ? [`id != ${sqlString(excludeId)}`] : []),
    ].join(' AND ');
    return this.#searches.submit(this.#annIndex ? JSON.stringify([k, where]) : undefined, { query, k, where });
  }

  /**
   * Runs searches of one k and filter as one LanceDB query (one vector each) and splits the rows by
   * their `query_index`. Should the ANN index have gone since they were grouped, each runs as a query
   * of its own (see the file comment).
   */
  async #searchBatch(searches: LanceSearch[]): Promise<SearchHit[][]> {
    if (searches.length > 1 && !this.#annIndex) return Promise.all(searches.map(async (one) => (await this.#searchBatch([one]))[0] as SearchHit[]));
    const { k, where } = searches[0] as LanceSearch;
    const { ann } = this.#metadata;
    let search = this.#table.vectorSearch((searches[0] as LanceSearch).query);
    for (const { query } of searches.slice(1)) search = search.addQueryVector(query);
    search = search.distanceType('cosine').select(['id', 'label', '_distance']).limit(k);
    if (where !== '') search = search.where(where);
    search = this.#annIndex ? search.nprobes(ann.nprobes).ef(Math.max(ann.ef, k)).refineFactor(ann.refineFactor) : search.bypassVectorIndex();
    const hits = searches.map((): SearchHit[] => []);
    for (const row of await search.toArray()) {
      const of = searches.length === 1 ? 0 : (row['query_index'] as number);
      hits[of]?.push({ id: row['id'] as string, label: row['label'] as string, score: 1 - (row['_distance'] as number) });
    }
    return hits;
  }

  /**
   * Adds items as one LanceDB commit: when the promise resolves the new table version is written and
   * searchable; if it rejects, nothing of the batch was added. Errors: E_ARG for a bad or duplicate
   * id, label or vector, or a read-only store; E_IO.
   */
  async add(items: NewItem[]): Promise<void> {
    checkNewItems(items, this.dim);
    await this.#exclusive(async () => {
      const [taken] = await this.existing(items.map((item) => item.id));
      if (taken !== undefined) throw invalidParameterError('id', 'an id not already in the index', taken);
      const rows: Array<Record<string, unknown>> = [];
      for (const item of items) {
        const source = item.image instanceof Uint8Array ? await storeUpload(this.#dir, item.image) : item.image;
        rows.push(itemRow(item.id, item.label, source, item.vector));
      }
      await this.#commit(() => this.#table.add(rows), items.length);
    });
  }

  /** Removes items as one LanceDB commit (see {@link add}). Errors: E_NOT_FOUND when an id is not in the index (nothing is removed). */
  async remove(ids: string[]): Promise<void> {
    if (!Array.isArray(ids) || ids.length === 0) throw invalidParameterError('ids', 'a non-empty array', ids);
    ids.forEach((id, i) => checkItemText(`ids[${i}]`, id));
    await this.#exclusive(async () => {
      const unique = [...new Set(ids)];
      const found = await this.existing(unique);
      const missing = unique.filter((id) => !found.has(id));
      if (missing.length > 0) {
        throw new DmlError('E_NOT_FOUND', `No item with id ${missing.map((id) => JSON.stringify(id)).join(', ')} in the index`);
      }
      await this.#commit(() => this.#table.delete(`id IN (${unique.map(sqlString).join(', ')})`), -unique.length);
    });
  }

  /**
   * Off the serving path (`dml index optimize`): compacts the table's data files, brings the ANN
   * index up to date (creates it once the table holds `minRows` rows, trains it again with
   * `rebuildAnn`, otherwise adds the new rows to it), prunes old versions as LanceDB's defaults allow
   * and removes uploaded images no item uses. Writable stores only. Errors: E_ARG for `rebuildAnn` on
   * a table of fewer than `minRows` rows.
   */
  async optimize(options: OptimizeOptions = {}): Promise<LanceOptimizeResult & Record<string, unknown>> {
    const rebuild = options.rebuildAnn === true;
    return this.#exclusive(async () => {
      const { minRows } = this.#metadata.ann;
      if (rebuild && this.#count < minRows) throw invalidParameterError('rebuildAnn', `a table of at least minRows (${minRows}) rows`, `${this.#count} rows`);
      const before = this.#version;
      const stats = await this.#table.optimize();
      this.#uncompacted = 0;
      const build = this.#count >= minRows && (rebuild || !this.#annIndex);
      if (build) {
        await LanceIndexStore.#buildAnnIndex(this.#lance, this.#table, this.#count, this.#metadata.ann);
        // Folds the new index in and drops the files it replaced.
        await this.#table.optimize();
      }
      this.#annIndex ||= build;
      this.#version = await this.#table.version();
      const sources = (await this.#table.query().select(['source']).toArray()).map((row) => JSON.parse(row['source'] as string) as ImageSource);
      await removeUnusedUploads(this.#dir, sources);
      return {
        versions: [before, this.#version],
        filesRemoved: stats.compaction.filesRemoved,
        filesAdded: stats.compaction.filesAdded,
        versionsPruned: stats.prune.oldVersionsRemoved,
        indexBuilt: build,
        unindexedRows: await this.pendingChanges(),
      };
    });
  }

  /** What `dml index info` prints: kind, folder, items, table version, ANN index state, labels and the metadata. */
  async info(): Promise<Record<string, unknown>> {
    return {
      kind: this.kind,
      dir: this.#dir,
      items: this.#count,
      version: this.#version,
      annIndex: this.#annIndex ? 'IVF_HNSW_SQ' : null,
      unindexedRows: await this.pendingChanges(),
      dataFiles: await this.dataFiles(),
      ...(this.#writable ? { uncompactedCommits: this.#uncompacted } : {}),
      ...(this.#compactionError !== undefined ? { compactionError: this.#compactionError } : {}),
      labels: await this.labelCounts(),
      ...this.metadata,
    };
  }

  /**
   * Waits for pending writes, compacts the commits not compacted yet (a writable store), closes the
   * table and releases the lock; later writes are refused. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    const pending = this.#writable ? this.#exclusive(() => this.#compact()).catch(() => undefined) : this.#writes;
    this.#closed = true;
    if (this.#refreshTimer !== undefined) clearInterval(this.#refreshTimer);
    clearTimeout(this.#idleTimer);
    try {
      await pending;
      await this.#refreshing?.catch(() => undefined);
      this.#table.close();
      this.#db.close();
    } finally {
      if (this.#lockFile !== undefined) await releaseFolderLock(this.#lockFile);
    }
  }

  /** Runs `task` after every earlier write. */
  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    if (!this.#writable) return Promise.reject(new DmlError('E_ARG', `Index ${LANCE_PREFIX}${this.#dir} was opened read-only`));
    if (this.#closed) return Promise.reject(new DmlError('E_CANCELLED', `Index ${LANCE_PREFIX}${this.#dir} is closed`));
    const run = this.#writes.then(task);
    this.#writes = run.catch(() => undefined);
    return run;
  }

  /**
   * Runs one LanceDB write (a commit), then records the new version and item count, and queues a
   * compaction after every `compactEvery` commits (the write's answer does not wait for it) or arms
   * the idle one.
   */
  async #commit(write: () => Promise<unknown>, change: number): Promise<void> {
    try {
      await write();
    } catch (err) {
      throw ioError(`Cannot write index ${LANCE_PREFIX}${this.#dir}`, err);
    }
    this.#count += change;
    this.#version = await this.#table.version();
    this.#uncompacted++;
    clearTimeout(this.#idleTimer);
    const compactLater = (): void => void this.#exclusive(() => this.#compact()).catch(() => undefined);
    if (this.#uncompacted >= this.#compaction.every) {
      compactLater();
    } else {
      this.#idleTimer = setTimeout(compactLater, this.#compaction.idleSeconds * 1000);
      this.#idleTimer.unref();
    }
  }

  /** Compacts the table (LanceDB's optimize) when commits were made since the last compaction; a failure is kept for `info()` and retried next time. */
  async #compact(): Promise<void> {
    if (this.#uncompacted === 0) return;
    try {
      await this.#table.optimize();
    } catch (err) {
      this.#compactionError = (err as Error).message;
      throw ioError(`Cannot compact index ${LANCE_PREFIX}${this.#dir}`, err);
    }
    this.#compactionError = undefined;
    this.#uncompacted = 0;
    this.#version = await this.#table.version();
  }
}
