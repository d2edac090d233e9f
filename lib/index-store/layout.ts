/**
 * @file The on-disk format of a search index folder: file names, what each file holds, the item and
 * vector checks every writer applies, and the small file helpers (fsync, error mapping) the store's
 * parts share. See hnsw-store.ts for the layout, durability and concurrency guarantees.
 */
import { mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ImageSource } from '../data/manifest.js';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import { DmlError, invalidParameterError } from '../errors.js';
import type { IndexStoreMetadata } from './index-store.js';
import type { HnswParams } from '../search/hnsw.js';
import { readExternalDataLocations } from '../onnx/metadata.js';
import { copyModelFiles, readModelBytes, readModelFiles } from '../onnx/model-files.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { LOCK_FILE } from '../util/folder-lock.js';
import { sha256 } from '../util/hash.js';

/** Format tag of `index.json`. */
export const SEARCH_INDEX_FORMAT = 'dmlkit.search-index/1';

/**
 * Folder of the model copy inside an index folder: the model file and its external data files, under
 * whatever names the model gives them, kept apart from the index's own files (a data file named `lock`
 * or `index.json` must never meet the index's).
 */
export const MODEL_FOLDER = 'model';

/** The model copy, relative to the index folder. */
export const MODEL_FILE = `${MODEL_FOLDER}/model.onnx`;

/** Where indexes written before {@link MODEL_FOLDER} keep their model copy: at the top of the folder, beside the index's own files. */
export const LEGACY_MODEL_FILE = 'model.onnx';

/** The metadata file: its replacement is the commit point of a snapshot. */
export const METADATA_FILE = 'index.json';
/** The item list of a snapshot generation. */
export const ITEMS_FILE = 'items.json';
/** The hnswlib graph of a snapshot generation. */
export const GRAPH_FILE = 'hnsw.bin';
/** Folder of images added over HTTP. */
export const UPLOADS = 'uploads';

/**
 * The names at the top of an index folder that belong to the index (either store's): the metadata,
 * the lock, uploads, snapshot generations and journals, the LanceDB table and temporary files.
 */
const INDEX_OWN_NAMES = [/^index\.json$/, new RegExp(`^${LOCK_FILE}$`), new RegExp(`^${UPLOADS}$`), /^gen-\d+$/, /^journal-\d+\.jsonl$/, /^items\.lance$/, /^\..*\.tmp$/];

/** Journal lines after which a writable index takes a snapshot by itself. */
export const DEFAULT_SNAPSHOT_EVERY = 1000;

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

/** What `index.json` records besides the generation: what every store records, the format and the HNSW parameters. */
export interface SearchIndexMetadata extends IndexStoreMetadata {
  format: typeof SEARCH_INDEX_FORMAT;
  /** HNSW parameters (ef is the search-time default; a search for k neighbours uses at least k). */
  hnsw: HnswParams;
}

/** The contents of `index.json`. */
export interface MetadataFile extends SearchIndexMetadata {
  generation: number;
  updatedAt: string;
}

/** The contents of a generation's `items.json`. */
export interface ItemsFile {
  format: typeof SEARCH_INDEX_FORMAT;
  /** Slot to give the next added item (never reused: hnswlib labels must be fresh). */
  nextSlot: number;
  items: Array<IndexedItem & { slot: number }>;
}

/** One change in a journal line. */
export type JournalOp =
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
  /** Called as the items are added to the new index, with the count added and the total. */
  onProgress?: (done: number, total: number) => void;
}

/** fsyncs a file or folder (a folder: so that the names created or renamed in it are durable). */
export async function syncPath(p: string): Promise<void> {
  const handle = await open(p, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** `err` as a DmlError: kept when it is one, else E_NOT_FOUND (ENOENT) or E_IO prefixed with `what`. */
export function ioError(what: string, err: unknown): DmlError {
  if (err instanceof DmlError) return err;
  const code = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'E_NOT_FOUND' : 'E_IO';
  return new DmlError(code, `${what}: ${(err as Error).message}`, { cause: err });
}

/** A vector as base64 of its float32 bytes (how journal lines hold vectors). */
export function encodeVector(vector: Float32Array): string {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
}

/** The inverse of {@link encodeVector}; E_DATASET naming `where` when the length is not `dim` floats. */
export function decodeVector(text: string, dim: number, where: string): Float32Array {
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

/**
 * Checks an item id: {@link checkItemText}, and not `.` or `..`, the two ids whose image URL
 * (`/items/<id>/image`, the id percent-encoded) a browser or client normalises into another path.
 */
export function checkItemId(name: string, value: unknown): string {
  const id = checkItemText(name, value);
  if (id === '.' || id === '..') throw invalidParameterError(name, 'an id other than "." and ".." (a URL path cannot carry them unchanged)', id);
  return id;
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


/**
 * Checks items to add to an index of dimension `dim`: a non-empty array of items with valid ids,
 * labels and vectors and no id given twice. Errors: E_ARG naming the item and field.
 */
export function checkNewItems(items: NewItem[], dim: number): void {
  if (!Array.isArray(items) || items.length === 0) throw invalidParameterError('items', 'a non-empty array', items);
  const ids = new Set<string>();
  items.forEach((item, i) => {
    checkItemId(`items[${i}].id`, item.id);
    checkItemText(`items[${i}].label`, item.label);
    checkVector(`items[${i}].vector`, item.vector, dim);
    if (ids.has(item.id)) throw invalidParameterError(`items[${i}].id`, 'an id not given twice', item.id);
    ids.add(item.id);
  });
}

/**
 * Copies the model `modelPath` (with its external data files, if any, so that the folder serves alone)
 * to {@link MODEL_FILE} in `folder` (its data files beside it in {@link MODEL_FOLDER}, apart from the
 * index's own files), fsynced, and checks that the copy has the identity `expectedSha256`.
 * Errors: E_MODEL when the model changed while the index was built; E_IO.
 */
export async function copyIndexModel(folder: string, modelPath: string, expectedSha256: string): Promise<void> {
  await mkdir(path.join(folder, MODEL_FOLDER));
  for (const file of await copyModelFiles(modelPath, path.join(folder, MODEL_FILE))) await syncPath(file);
  await syncPath(path.join(folder, MODEL_FOLDER));
  const copied = (await readModelFiles(path.join(folder, MODEL_FILE))).sha256;
  if (copied !== expectedSha256) {
    throw new DmlError('E_MODEL', `Model ${modelPath} changed while the index was built (sha256 ${copied}, expected ${expectedSha256})`);
  }
}

/**
 * The model copy of index folder `root` (`location` names the index in messages): {@link MODEL_FILE},
 * or {@link LEGACY_MODEL_FILE} in a folder written before the model folder existed. A legacy model whose
 * external data file has the name of one of the index's own files (`lock`, `index.json`, `gen-1/...`)
 * shared its place with that file (its weights overwritten, or taken for a stale lock and deleted):
 * E_DATASET naming the file and asking for a rebuild. Errors: E_NOT_FOUND when neither model exists.
 */
export async function indexModelPath(root: string, location: string): Promise<string> {
  const current = path.join(root, MODEL_FILE);
  if (await stat(current).catch(() => undefined)) return current;
  const legacy = path.join(root, LEGACY_MODEL_FILE);
  if (!(await stat(legacy).catch(() => undefined))) throw new DmlError('E_NOT_FOUND', `Index ${location} holds no model copy (${MODEL_FILE} is missing)`);
  const locations = readExternalDataLocations(await readModelBytes(legacy), legacy);
  const clash = locations.find((name) => {
    const top = path.posix.normalize(name.replaceAll('\\', '/')).split('/')[0] as string;
    return INDEX_OWN_NAMES.some((own) => own.test(top));
  });
  if (clash !== undefined) {
    throw new DmlError(
      'E_DATASET',
      `Index ${location} was written by an older dmlkit that kept the model's external data file ${JSON.stringify(clash)} beside the index's own files, where it met one of them; build the index again (dml index build now keeps the model in ${MODEL_FOLDER}/)`,
    );
  }
  return legacy;
}

/** Stores uploaded image bytes under `uploads/<sha256>` of index folder `dir` (atomically) and returns their source (relative path). */
export async function storeUpload(dir: string, bytes: Uint8Array): Promise<ImageSource> {
  const relative = `${UPLOADS}/${sha256(bytes)}`;
  const file = path.join(dir, relative);
  if (!(await stat(file).catch(() => undefined))) await writeFileAtomic(file, bytes);
  return { kind: 'file', path: relative };
}

/** Removes the files under `uploads/` of index folder `dir` that none of `sources` (the live items' sources) points to. */
export async function removeUnusedUploads(dir: string, sources: Iterable<ImageSource>): Promise<void> {
  const used = new Set<string>();
  for (const source of sources) if (source.kind === 'file' && source.path.startsWith(`${UPLOADS}/`)) used.add(source.path);
  const names = await readdir(path.join(dir, UPLOADS)).catch(() => [] as string[]);
  for (const name of names) {
    if (!used.has(`${UPLOADS}/${name}`)) await rm(path.join(dir, UPLOADS, name), { force: true }).catch(() => undefined);
  }
}
