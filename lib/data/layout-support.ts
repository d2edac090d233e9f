/**
 * @file What the dataset layout readers (`lib/data/layouts/*.ts`) share: the options every reader
 * takes, the image file extensions dmlkit accepts, locale-independent name ordering, directory
 * listing that follows symbolic links, reading annotation text files with errors that name the
 * file and line, and the item of a "test split = queries = gallery" protocol.
 *
 * Image extensions are exactly the file suffixes for which sharp 0.35 (its prebuilt libvips) reports
 * file input support in `sharp.format`, minus the vector and libvips-native formats that are no photo
 * datasets' format (`.svg`, `.svgz`, `.svg.gz`, `.v`, `.vips`):
 * `.jpg .jpeg .jpe .jfif` (JPEG), `.png`, `.webp`, `.gif`, `.tif .tiff` (TIFF), `.avif` (HEIF/AV1).
 * Not accepted because the prebuilt sharp cannot decode them: `.bmp`, `.heic` (HEVC-coded HEIF),
 * `.jp2`, `.jxl`, `.ppm`. Matching is case-insensitive (`IMG_1.JPG` is an image).
 */
import { readdir, stat } from 'node:fs/promises';
import { readRegular } from '../util/regular-file.js';
import { join } from 'node:path';
import { DmlError } from '../errors.js';
import type { ImageSource, Manifest, ManifestItem } from './manifest.js';

/** The Hotels-50K test image sets (one folder each under `images/test/`). */
export const HOTELS50K_TEST_SETS = ['unoccluded', 'low_occlusions', 'medium_occlusions', 'high_occlusions'] as const;
export type Hotels50kTestSet = (typeof HOTELS50K_TEST_SETS)[number];

export function isHotels50kTestSet(name: string): name is Hotels50kTestSet {
  return (HOTELS50K_TEST_SETS as readonly string[]).includes(name);
}

/** Options every layout reader receives from `openDataset`. */
export interface LayoutReadOptions {
  /** Receives each non-fatal finding (skipped files, empty class folders), one line each. */
  warn: (message: string) => void;
  /** Hotels-50K only: which test image set holds the queries. */
  hotelsTestSet: Hotels50kTestSet;
}

/** A layout reader: dataset path (absolute, known to exist) to a Manifest. */
export type LayoutReader = (path: string, options: LayoutReadOptions) => Promise<Manifest>;

/** Lower-case image file extensions (with the dot) that sharp decodes; see the file comment. */
export const IMAGE_EXTENSIONS: readonly string[] = ['.jpg', '.jpeg', '.jpe', '.jfif', '.png', '.webp', '.gif', '.tif', '.tiff', '.avif'];

/** True if the file name ends with one of {@link IMAGE_EXTENSIONS}, ignoring case. */
export function isImageFileName(name: string): boolean {
  const dot = name.lastIndexOf('.');
  return dot > 0 && IMAGE_EXTENSIONS.includes(name.slice(dot).toLowerCase());
}

/** True for dot-files and dot-folders (`.DS_Store`, `.git`, `._IMG_1.jpg`), which layouts ignore. */
export function isHiddenName(name: string): boolean {
  return name.startsWith('.');
}

/** Orders strings by UTF-16 code units: the same order on every machine, whatever the locale. */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** One directory entry, with symbolic links resolved to what they point at. */
export interface DirectoryEntry {
  name: string;
  isDirectory: boolean;
  isFile: boolean;
}

/**
 * Lists a directory sorted by {@link compareCodeUnits}. Symbolic links are followed (datasets are
 * often assembled from links); a dangling link is listed as neither file nor directory.
 */
export async function listDirectory(dir: string): Promise<DirectoryEntry[]> {
  let dirents;
  try {
    dirents = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    throw fileSystemError(err, `folder ${dir}`);
  }
  const entries = await Promise.all(
    dirents.map(async (d): Promise<DirectoryEntry> => {
      if (!d.isSymbolicLink()) return { name: d.name, isDirectory: d.isDirectory(), isFile: d.isFile() };
      const target = await stat(join(dir, d.name)).catch(() => null);
      return { name: d.name, isDirectory: target?.isDirectory() ?? false, isFile: target?.isFile() ?? false };
    }),
  );
  return entries.sort((a, b) => compareCodeUnits(a.name, b.name));
}

/** `'file'`, `'directory'` or `null` (missing, or something else such as a socket). Follows links. */
export async function pathKind(path: string): Promise<'file' | 'directory' | null> {
  const info = await stat(path).catch(() => null);
  if (!info) return null;
  return info.isDirectory() ? 'directory' : info.isFile() ? 'file' : null;
}

/**
 * The first candidate path that exists with the wanted kind, or `null`. Candidates are tried in
 * order, so put the dataset's documented placement first.
 */
export async function findFirst(candidates: string[], kind: 'file' | 'directory'): Promise<string | null> {
  for (const candidate of candidates) {
    if ((await pathKind(candidate)) === kind) return candidate;
  }
  return null;
}

/** Reads a UTF-8 text file, dropping a leading byte order mark. `what` describes the file in errors. */
export async function readTextFile(file: string, what: string): Promise<string> {
  let text: string;
  try {
    text = (await readRegular(file, what)).toString('utf8');
  } catch (err) {
    throw fileSystemError(err, `${what} ${file}`);
  }
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** One non-blank line of an annotation file, split on runs of whitespace. */
export interface AnnotationLine {
  /** 1-based line number in the file. */
  line: number;
  fields: string[];
}

/**
 * Reads an annotation file into its non-blank lines (LF or CRLF), each split on runs of whitespace.
 * `what` describes the file in errors.
 */
export async function readAnnotationLines(file: string, what: string): Promise<AnnotationLine[]> {
  const lines: AnnotationLine[] = [];
  (await readTextFile(file, what)).split(/\r?\n/).forEach((raw, i) => {
    const trimmed = raw.trim();
    if (trimmed !== '') lines.push({ line: i + 1, fields: trimmed.split(/\s+/) });
  });
  return lines;
}

/** The E_DATASET error for a bad line: `<file>:<line>: <message>`. */
export function lineError(file: string, line: number, message: string): DmlError {
  return new DmlError('E_DATASET', `${file}:${line}: ${message}`);
}

/**
 * Parses a positive decimal integer field (class ids, image ids) or throws a {@link lineError}
 * naming the column.
 */
export function parsePositiveInteger(value: string, file: string, line: number, column: string): number {
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) {
    throw lineError(file, line, `column ${column}: expected a positive integer but found ${JSON.stringify(value)}`);
  }
  return n;
}

/**
 * Maps `items` through `fn` with at most `limit` calls in flight, keeping the input order. Used to
 * bound open directory handles and `stat` calls on datasets of a million files.
 */
export async function mapWithConcurrency<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        results[index] = await fn(items[index] as T, index);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** `1 file`, `3 files`: a count with its noun in the right number. */
export function countOf(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}

/** `"a", "b", "c" and 4 more`: a short list of names for warnings and errors. */
export function summarizeNames(names: readonly string[], shown = 3): string {
  const listed = names.slice(0, shown).map((n) => JSON.stringify(n)).join(', ');
  return names.length > shown ? `${listed} and ${names.length - shown} more` : listed;
}

/** Maps a file system error to E_NOT_FOUND (missing) or E_IO (anything else), naming `what`. */
export function fileSystemError(err: unknown, what: string): DmlError {
  if (err instanceof DmlError) return err;
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOENT') return new DmlError('E_NOT_FOUND', `Cannot read ${what}: it does not exist`, { cause: err });
  if (e.code === 'ENOTDIR') return new DmlError('E_NOT_FOUND', `Cannot read ${what}: a parent is not a folder`, { cause: err });
  return new DmlError('E_IO', `Cannot read ${what}: ${e.message}`, { cause: err });
}

/**
 * An item of a protocol whose test split is both the query set and the gallery set (CUB-200-2011,
 * Cars196, Stanford Online Products, the MNIST family): test items are queries and gallery items,
 * training items neither.
 */
export function splitItem(id: string, source: ImageSource, label: string, split: 'train' | 'test'): ManifestItem {
  const isTest = split === 'test';
  return { id, source, label, split, isQuery: isTest, isGallery: isTest };
}
