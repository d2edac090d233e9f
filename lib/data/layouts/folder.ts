/**
 * @file ImageFolder layout (`folder:<dir>`, or a bare folder path): one subfolder per class, as in
 * torchvision's `ImageFolder`.
 *
 * ```
 * pets/                          pets/
 *   cat/001.jpg                    train/cat/001.jpg
 *   cat/kittens/002.png            train/dog/003.jpg
 *   dog/003.jpg                    test/bird/004.jpg
 * ```
 *
 * Left: every image is a test item, query and gallery (query set = gallery set), labelled with its
 * class folder's name. Right: when the folder holds both `train/` and `test/`, each holds class
 * folders; train items have no evaluation role, test items are query and gallery.
 *
 * - Images are files with the extensions in `IMAGE_EXTENSIONS` (sharp-decodable; case-insensitive),
 *   found at any depth below a class folder (`cat/kittens/002.png` is a `cat`).
 * - Ids are paths relative to the folder with `/` separators (`cat/001.jpg`, `train/cat/001.jpg`).
 * - Order: train before test, then class name, then relative path, all by code units (locale-free).
 * - Hidden files and folders (name starting with `.`) are ignored silently.
 * - Skipped with one warning each (never an error, so a stray `notes.txt` or `Thumbs.db` does not
 *   stop a run): files that are not images, class folders without images, files lying next to the
 *   class folders, and, in the train/test form, entries beside `train/` and `test/` (e.g. `val/`).
 * - A folder with no images at all is an E_EMPTY error.
 */
import { join } from 'node:path';
import { DmlError } from '../../errors.js';
import {
  IMAGE_EXTENSIONS,
  compareCodeUnits,
  countOf,
  isHiddenName,
  isImageFileName,
  listDirectory,
  mapWithConcurrency,
  summarizeNames,
  type LayoutReadOptions,
} from '../layout-support.js';
import type { Manifest, ManifestItem } from '../manifest.js';

/** Class folders scanned at once (bounds open directory handles on datasets with 10,000s of classes). */
const LISTING_CONCURRENCY = 32;

/** What scanning class folders found besides images, for the warnings. */
interface SkippedEntries {
  nonImageFiles: string[];
  emptyClassFolders: string[];
  strayEntries: string[];
}

/** Relative paths (`/`-separated, sorted) of the image files at any depth below `dir`. */
async function collectImages(dir: string, relative: string, skipped: SkippedEntries): Promise<string[]> {
  const images: string[] = [];
  for (const entry of await listDirectory(dir)) {
    if (isHiddenName(entry.name)) continue;
    const rel = `${relative}/${entry.name}`;
    if (entry.isDirectory) images.push(...(await collectImages(join(dir, entry.name), rel, skipped)));
    else if (entry.isFile && isImageFileName(entry.name)) images.push(rel);
    else skipped.nonImageFiles.push(rel);
  }
  return images.sort(compareCodeUnits);
}

/** Items of one folder of class folders; `prefix` is `''` or `'train/'` / `'test/'`. */
async function readClassFolders(
  root: string,
  prefix: string,
  split: 'train' | 'test',
  skipped: SkippedEntries,
): Promise<ManifestItem[]> {
  const entries = (await listDirectory(join(root, prefix))).filter((e) => !isHiddenName(e.name));
  for (const entry of entries) if (!entry.isDirectory) skipped.strayEntries.push(`${prefix}${entry.name}`);
  const classes = entries.filter((e) => e.isDirectory).map((e) => e.name);
  const imagesPerClass = await mapWithConcurrency(classes, LISTING_CONCURRENCY, (name) => collectImages(join(root, prefix, name), `${prefix}${name}`, skipped));
  const evaluated = split === 'test';
  const items: ManifestItem[] = [];
  classes.forEach((label, c) => {
    const images = imagesPerClass[c] ?? [];
    if (images.length === 0) skipped.emptyClassFolders.push(`${prefix}${label}`);
    for (const id of images) {
      items.push({ id, source: { kind: 'file', path: join(root, id) }, label, split, isQuery: evaluated, isGallery: evaluated });
    }
  });
  return items;
}

/** Reads an ImageFolder dataset (see the file comment). */
export async function readImageFolder(root: string, options: LayoutReadOptions): Promise<Manifest> {
  const top = (await listDirectory(root)).filter((e) => !isHiddenName(e.name));
  const hasSplitFolders = ['train', 'test'].every((name) => top.some((e) => e.isDirectory && e.name === name));
  const skipped: SkippedEntries = { nonImageFiles: [], emptyClassFolders: [], strayEntries: [] };
  let items: ManifestItem[];
  if (hasSplitFolders) {
    for (const entry of top) if (entry.name !== 'train' && entry.name !== 'test') skipped.strayEntries.push(entry.name);
    items = [...(await readClassFolders(root, 'train/', 'train', skipped)), ...(await readClassFolders(root, 'test/', 'test', skipped))];
  } else {
    items = await readClassFolders(root, '', 'test', skipped);
  }

  const { nonImageFiles, emptyClassFolders, strayEntries } = skipped;
  if (strayEntries.length > 0) {
    const expected = hasSplitFolders ? 'only train/ and test/ (each with one folder per class) are read' : 'only class folders are read';
    options.warn(`ImageFolder ${root}: ignored ${countOf(strayEntries.length, 'entry', 'entries')} (${summarizeNames(strayEntries)}): ${expected}`);
  }
  if (nonImageFiles.length > 0) {
    options.warn(
      `ImageFolder ${root}: skipped ${countOf(nonImageFiles.length, 'non-image file')} (${summarizeNames(nonImageFiles.sort(compareCodeUnits))}); ` +
        `image extensions: ${IMAGE_EXTENSIONS.join(' ')}`,
    );
  }
  if (emptyClassFolders.length > 0) {
    options.warn(`ImageFolder ${root}: skipped ${countOf(emptyClassFolders.length, 'class folder')} without images (${summarizeNames(emptyClassFolders)})`);
  }
  if (items.length === 0) {
    const form = hasSplitFolders ? 'train/<class>/<image> and test/<class>/<image>' : '<class>/<image>';
    throw new DmlError('E_EMPTY', `ImageFolder ${root} holds no images: expected ${form} with extensions ${IMAGE_EXTENSIONS.join(' ')}`);
  }
  return {
    layout: 'folder',
    root,
    protocol: hasSplitFolders
      ? 'ImageFolder train/test: test items are query and gallery (query set = gallery set); train items have no evaluation role'
      : 'ImageFolder: every item is query and gallery (query set = gallery set)',
    defaultK: [1, 2, 4, 8],
    items,
  };
}
