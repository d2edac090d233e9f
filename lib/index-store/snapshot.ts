/**
 * @file Snapshot generations of a search index: `gen-G/` holds the HNSW graph and the live items of
 * generation G, and `index.json` names the current generation.
 *
 * Writing generation G+1 puts the graph and the items into a temporary folder, fsyncs it, renames it
 * into place and then atomically replaces `index.json`: until that last rename the index on disk is
 * snapshot G plus journal G, afterwards snapshot G+1 with an empty journal. Leftovers of either side
 * are removed when the index is next opened for writing ({@link removeLeftovers}).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { readRegular } from '../util/regular-file.js';
import path from 'node:path';
import { DmlError } from '../errors.js';
import { HnswIndex } from '../search/hnsw.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { GRAPH_FILE, ioError, ITEMS_FILE, METADATA_FILE, SEARCH_INDEX_FORMAT, syncPath, type ItemsFile, type MetadataFile, type SearchIndexMetadata } from './layout.js';

/** The current snapshot of an index folder, as read from disk. */
export interface Snapshot {
  metadata: SearchIndexMetadata;
  generation: number;
  items: ItemsFile;
  /** The graph, loaded so that additions reuse the nodes of removed items. */
  graph: HnswIndex;
}

/**
 * Reads the current snapshot of index folder `root` (`dir` as the user gave it, for messages).
 * Errors: E_NOT_FOUND when `index.json` or the generation it names is missing; E_DATASET when a file
 * is corrupt or they disagree; E_IO.
 */
export async function readSnapshot(root: string, dir: string): Promise<Snapshot> {
  const metadataPath = path.join(root, METADATA_FILE);
  let text: string;
  try {
    text = (await readRegular(metadataPath, 'index metadata')).toString('utf8');
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
    items = JSON.parse((await readRegular(itemsPath, 'item list')).toString('utf8')) as ItemsFile;
  } catch (err) {
    throw err instanceof SyntaxError
      ? new DmlError('E_DATASET', `${itemsPath} is not valid JSON: ${err.message}`, { cause: err })
      : ioError(`Cannot read ${itemsPath}`, err);
  }
  if (items?.format !== SEARCH_INDEX_FORMAT || !Array.isArray(items.items)) {
    throw new DmlError('E_DATASET', `${itemsPath}: expected a ${SEARCH_INDEX_FORMAT} item list`);
  }
  const graphPath = path.join(genDir, GRAPH_FILE);
  const graph = await HnswIndex.load(graphPath, {
    ef: metadata.hnsw.ef,
    ...(metadata.hnsw.seed !== null ? { seed: metadata.hnsw.seed } : {}),
    allowReplaceDeleted: true,
  });
  if (graph.dim !== metadata.dim) {
    throw new DmlError('E_DATASET', `${graphPath} holds ${graph.dim}-d vectors but ${metadataPath} says ${metadata.dim}`);
  }
  const inGraph = new Set(graph.labels());
  const stray = items.items.find(({ slot }) => !inGraph.has(slot));
  if (stray !== undefined) {
    throw new DmlError('E_DATASET', `${itemsPath} lists item ${JSON.stringify(stray.id)} at slot ${stray.slot}, which ${graphPath} does not hold`);
  }
  return { metadata, generation, items, graph };
}

/**
 * Writes generation `generation` of index folder `root` (graph and items) and then commits it by
 * replacing `index.json` (see the file comment). Errors: E_IO; nothing of the new generation is left
 * behind.
 */
export async function writeSnapshot(root: string, generation: number, graph: HnswIndex, items: ItemsFile, metadata: SearchIndexMetadata): Promise<void> {
  const genDir = path.join(root, `gen-${generation}`);
  const tmp = path.join(root, `.gen-${generation}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await rm(genDir, { recursive: true, force: true });
    await mkdir(tmp);
    await writeGeneration(tmp, graph, items);
    await rename(tmp, genDir);
    await writeMetadata(root, metadata, generation);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    throw ioError(`Cannot write a snapshot of index ${root}`, err);
  }
}

/** Writes a generation's graph and items into folder `dir` and fsyncs them and it. */
export async function writeGeneration(dir: string, graph: HnswIndex, items: ItemsFile): Promise<void> {
  await graph.save(path.join(dir, GRAPH_FILE));
  await writeFileAtomic(path.join(dir, ITEMS_FILE), JSON.stringify(items));
  await syncPath(dir);
}

/** Atomically writes `index.json` of folder `root` naming `generation`, and fsyncs the folder. */
export async function writeMetadata(root: string, metadata: SearchIndexMetadata, generation: number): Promise<void> {
  const file: MetadataFile = { ...metadata, generation, updatedAt: new Date().toISOString() };
  await writeFileAtomic(path.join(root, METADATA_FILE), `${JSON.stringify(file, null, 2)}\n`);
  await syncPath(root);
}

/** Removes generation `generation` and its journal (after a newer snapshot was committed). */
export async function removeGeneration(root: string, generation: number): Promise<void> {
  await rm(path.join(root, `gen-${generation}`), { recursive: true, force: true }).catch(() => undefined);
  await rm(path.join(root, `journal-${generation}.jsonl`), { force: true }).catch(() => undefined);
}

/** Removes generations, journals and temporary folders of index folder `root` other than those of `generation`. */
export async function removeLeftovers(root: string, generation: number): Promise<void> {
  const keep = new Set([`gen-${generation}`, `journal-${generation}.jsonl`]);
  for (const name of await readdir(root)) {
    if (keep.has(name) || !(/^gen-\d+$/.test(name) || /^journal-\d+\.jsonl$/.test(name) || /^\..*\.tmp$/.test(name))) continue;
    await rm(path.join(root, name), { recursive: true, force: true });
  }
}
