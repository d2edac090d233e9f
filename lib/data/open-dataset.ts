/**
 * @file Opening a dataset from a spec string (`cub:/data/CUB_200_2011`, `folder:./pets`, or a bare
 * folder path) and the manifest content hash used in cache keys and report provenance.
 *
 * ```ts
 * const manifest = await openDataset('fashion-mnist:/usr/share/datasets/fashion-mnist');
 * const classDisjoint = applyClassSplit(manifest, parseClassList('0-4')); // lib/data/class-split.ts
 * const hash = await manifestHash(manifest); // 64 hex digits
 * ```
 *
 * Spec forms: `<layout>:<path>` with a layout of {@link DATASET_LAYOUTS}; a bare existing folder
 * means `folder:`; a bare existing `.csv` / `.jsonl` file means `csv:` / `jsonl:`. Relative paths are
 * resolved against `options.cwd` (default the process's working folder). Each layout's accepted
 * files are described in its `lib/data/layouts/*.ts` file.
 *
 * After reading, the manifest is checked: no items is E_EMPTY, duplicate item ids are E_DATASET, and
 * labels with a single image are reported through `warn` (as queries they have nothing to find,
 * and they count as misses for Recall@K) but are not an error.
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { DmlError, invalidParameterError } from '../errors.js';
import {
  HOTELS50K_TEST_SETS,
  countOf,
  fileSystemError,
  mapWithConcurrency,
  pathKind,
  summarizeNames,
  isHotels50kTestSet,
  type LayoutReadOptions,
  type LayoutReader,
} from './layout-support.js';
import { readCars196 } from './layouts/cars196.js';
import { readCub } from './layouts/cub.js';
import { readImageFolder } from './layouts/folder.js';
import { readHotels50k } from './layouts/hotels50k.js';
import { readIdxDataset } from './layouts/idx.js';
import { readInshop } from './layouts/inshop.js';
import { readCsvManifest, readJsonlManifest } from './layouts/manifest-file.js';
import { readSop } from './layouts/sop.js';
import type { Manifest } from './manifest.js';
import { checkPositiveInteger } from '../util/check.js';

/** A layout's reader and the kind of path it takes. */
interface LayoutEntry {
  read: LayoutReader;
  accepts: 'directory' | 'file' | 'either';
}

const LAYOUTS = {
  folder: { read: readImageFolder, accepts: 'directory' },
  csv: { read: readCsvManifest, accepts: 'file' },
  jsonl: { read: readJsonlManifest, accepts: 'file' },
  cub: { read: readCub, accepts: 'directory' },
  cars196: { read: readCars196, accepts: 'either' },
  sop: { read: readSop, accepts: 'directory' },
  inshop: { read: readInshop, accepts: 'directory' },
  hotels50k: { read: readHotels50k, accepts: 'directory' },
  idx: { read: (dir) => readIdxDataset(dir, 'idx'), accepts: 'directory' },
  mnist: { read: (dir) => readIdxDataset(dir, 'mnist'), accepts: 'directory' },
  'fashion-mnist': { read: (dir) => readIdxDataset(dir, 'fashion-mnist'), accepts: 'directory' },
} satisfies Record<string, LayoutEntry>;

export type DatasetLayoutName = keyof typeof LAYOUTS;

/** The layout names a spec may start with. */
export const DATASET_LAYOUTS = Object.keys(LAYOUTS) as DatasetLayoutName[];

/** Options of {@link openDataset}. */
export interface OpenDatasetOptions {
  /** Folder that relative dataset paths are resolved against. Default: `process.cwd()`. */
  cwd?: string;
  /**
   * Hotels-50K: the test image set used as queries, one of `unoccluded` (default),
   * `low_occlusions`, `medium_occlusions`, `high_occlusions`.
   */
  hotelsTestSet?: string;
  /**
   * Receives each non-fatal finding (skipped files, empty class folders, single-image labels), one
   * line each. Default: printed to stderr as `warning: <message>`.
   */
  warn?: (message: string) => void;
}

/** Splits a spec into layout and absolute path, applying the bare-path rules. */
async function resolveSpec(spec: string, cwd: string): Promise<{ layout: DatasetLayoutName; path: string }> {
  const prefixed = /^([a-z][a-z0-9-]*):(.*)$/is.exec(spec);
  const name = prefixed?.[1]?.toLowerCase() ?? '';
  if (prefixed && Object.hasOwn(LAYOUTS, name)) {
    const path = prefixed[2] ?? '';
    if (path === '') throw invalidParameterError('dataset', `a path after "${name}:"`, spec);
    return { layout: name as DatasetLayoutName, path: resolve(cwd, path) };
  }
  const path = resolve(cwd, spec);
  const kind = await pathKind(path);
  if (kind === null && prefixed) {
    throw new DmlError('E_ARG', `Unknown dataset layout "${prefixed[1]}" in ${JSON.stringify(spec)}; known layouts: ${DATASET_LAYOUTS.join(', ')}`);
  }
  if (kind === 'directory') return { layout: 'folder', path };
  const extension = extname(path).toLowerCase();
  if (kind === 'file' && (extension === '.csv' || extension === '.jsonl')) return { layout: extension === '.csv' ? 'csv' : 'jsonl', path };
  if (kind === 'file') {
    throw new DmlError('E_ARG', `Dataset ${JSON.stringify(spec)} is a file but not a .csv or .jsonl manifest; write <layout>:<path> (layouts: ${DATASET_LAYOUTS.join(', ')})`);
  }
  throw new DmlError('E_NOT_FOUND', `Dataset path ${path} does not exist (from ${JSON.stringify(spec)}; expected <layout>:<path> or an existing folder)`);
}

/**
 * Reads a dataset into a {@link Manifest}: resolves the spec, checks that the path exists and is of
 * the kind the layout takes, reads the layout and checks the result (see the file comment). For a
 * class-disjoint split, pass the result to `applyClassSplit` (`lib/data/class-split.ts`).
 */
export async function openDataset(spec: string, options: OpenDatasetOptions = {}): Promise<Manifest> {
  if (typeof spec !== 'string' || spec.trim() === '') throw invalidParameterError('dataset', 'a "<layout>:<path>" string or a folder path', spec);
  const hotelsTestSet = options.hotelsTestSet ?? 'unoccluded';
  if (!isHotels50kTestSet(hotelsTestSet)) throw invalidParameterError('hotelsTestSet', `one of ${HOTELS50K_TEST_SETS.join(', ')}`, hotelsTestSet);
  const warn = options.warn ?? ((message: string) => void process.stderr.write(`warning: ${message}\n`));

  const { layout, path } = await resolveSpec(spec, options.cwd ?? process.cwd());
  const entry: LayoutEntry = LAYOUTS[layout];
  const kind = await pathKind(path);
  if (kind === null) throw new DmlError('E_NOT_FOUND', `Dataset path ${path} does not exist (from ${JSON.stringify(spec)})`);
  if (entry.accepts !== 'either' && entry.accepts !== kind) {
    throw new DmlError('E_ARG', `Layout ${layout} expects a ${entry.accepts === 'file' ? 'file' : 'folder'} but ${path} is a ${kind === 'file' ? 'file' : 'folder'}`);
  }
  const readOptions: LayoutReadOptions = { warn, hotelsTestSet };
  const manifest = await entry.read(path, readOptions);
  checkManifest(manifest, spec, warn);
  return manifest;
}

/** The checks every opened manifest passes: items present, ids unique; reports single-image labels. */
function checkManifest(manifest: Manifest, spec: string, warn: (message: string) => void): void {
  if (manifest.items.length === 0) throw new DmlError('E_EMPTY', `Dataset ${JSON.stringify(spec)} has no items`);
  const idCounts = new Map<string, number>();
  const labelCounts = new Map<string, number>();
  for (const { id, label } of manifest.items) {
    idCounts.set(id, (idCounts.get(id) ?? 0) + 1);
    labelCounts.set(label, (labelCounts.get(label) ?? 0) + 1);
  }
  const duplicates = [...idCounts].filter(([, n]) => n > 1);
  if (duplicates.length > 0) {
    const listed = duplicates.slice(0, 3).map(([id, n]) => `${JSON.stringify(id)} (${n} items)`).join(', ');
    throw new DmlError('E_DATASET', `Dataset ${JSON.stringify(spec)} has ${countOf(duplicates.length, 'duplicate item id')}: ${listed}${duplicates.length > 3 ? ', ...' : ''}`);
  }
  const singletons = [...labelCounts].filter(([, n]) => n === 1).map(([label]) => label);
  if (singletons.length > 0) {
    warn(
      `Dataset ${JSON.stringify(spec)}: ${singletons.length} of ${countOf(labelCounts.size, 'label')} ${singletons.length === 1 ? 'has' : 'have'} a single image (${summarizeNames(singletons)}); ` +
        'as queries they have no same-label item to find and count as misses for Recall@K',
    );
  }
}

/** Options of {@link manifestHash}. */
export interface ManifestHashOptions {
  /** Most `stat` calls in flight at once. Default 64. */
  concurrency?: number;
  /** Aborts the hashing with an E_CANCELLED error. */
  signal?: AbortSignal;
}

/**
 * SHA-256 (hex) identifying a manifest's content: every item's id, source, label, split and roles,
 * in order, then the size and modification time (nanoseconds) of each distinct image file. Any
 * added, removed, relabelled or rewritten image changes it, except an in-place edit that keeps both
 * the file's size and its mtime, which is not detected (the pixels are never read, so hashing
 * stays fast on a million images). Moving or copying the dataset changes it (absolute paths, new
 * mtimes). A missing image file is an E_NOT_FOUND error naming the file and its item.
 */
export async function manifestHash(manifest: Manifest, options: ManifestHashOptions = {}): Promise<string> {
  const concurrency = options.concurrency ?? 64;
  checkPositiveInteger('concurrency', concurrency);
  const { signal } = options;
  const firstItemOfFile = new Map<string, string>();
  for (const { id, source } of manifest.items) {
    const file = source.kind === 'file' ? source.path : source.file;
    if (!firstItemOfFile.has(file)) firstItemOfFile.set(file, id);
  }
  const files = [...firstItemOfFile.keys()];
  const stamps = await mapWithConcurrency(files, concurrency, async (file) => {
    if (signal?.aborted) throw new DmlError('E_CANCELLED', 'Manifest hashing was cancelled');
    try {
      const info = await stat(file, { bigint: true });
      return `${info.size}:${info.mtimeNs}`;
    } catch (err) {
      throw fileSystemError(err, `image file ${file} of item ${JSON.stringify(firstItemOfFile.get(file))}`);
    }
  });
  const hash = createHash('sha256').update('dmlkit-manifest-v1\n');
  for (const { id, source, label, split, isQuery, isGallery } of manifest.items) {
    const where = source.kind === 'file' ? [source.kind, source.path] : [source.kind, source.file, source.index];
    hash.update(`${JSON.stringify([id, ...where, label, split, isQuery, isGallery])}\n`);
  }
  files.forEach((file, i) => hash.update(`${JSON.stringify([file, stamps[i]])}\n`));
  return hash.digest('hex');
}
