/**
 * @file Hotels-50K layout (`hotels50k:<root>`): the training images (1,027,871 images of 50,000
 * hotels) are the gallery and the test images (17,954 TraffickCam images of 5,000 of those hotels)
 * are the queries; Recall@1/10/100 by hotel.
 *
 * The image folders as the dataset's `download_train.py` writes them and `test.tar.gz` unpacks
 * (into `images/`), `<root>` being the repository folder or its `images/` folder:
 * ```
 * Hotels-50K/
 *   input/dataset/train_set.csv     image_id,hotel_id,image_url,image_source,upload_timestamp (not read)
 *   images/train/<chain_id>/<hotel_id>/<image_source>/<image_id>.jpg
 *          train/5/12345/travel_website/7654321.jpg
 *   images/test/unoccluded/<chain_id>/<hotel_id>/<image_source>/<image_id>.jpg
 *   images/test/{low,medium,high}_occlusions/...same.../<image_id>.jpg   (+ masks/<image_id>.png)
 * ```
 * The labels come from the folders (the hotel id), so images that failed to download are simply
 * absent, and the CSV files are not needed. The test set is chosen with the `hotelsTestSet` option
 * (`unoccluded` by default); the `masks/` folders of the occluded sets are not images of the dataset
 * and are skipped silently.
 *
 * Items: train then test, each ordered by chain, hotel, source, file name (code units); id = the path
 * below `images/` (`train/5/12345/travel_website/7654321.jpg`), label = `hotel_id`. Train items:
 * split train, gallery; test items: split test, query. Hidden entries are ignored; files that are not
 * images, files at another depth and other folders are skipped with one warning.
 */
import { dirname, join } from 'node:path';
import { DmlError } from '../../errors.js';
import {
  HOTELS50K_TEST_SETS,
  countOf,
  findFirst,
  isHiddenName,
  isImageFileName,
  listDirectory,
  mapWithConcurrency,
  pathKind,
  summarizeNames,
  type LayoutReadOptions,
} from '../layout-support.js';
import type { Manifest, ManifestItem } from '../manifest.js';

/** Directory listings in flight at once. */
const LISTING_CONCURRENCY = 32;

/**
 * Lists the non-hidden subfolders of `images/<relative>`; other entries are added to `skipped` (paths
 * below `images/`, reported in one warning).
 */
async function subfolders(imagesDir: string, relative: string, skipped: string[]): Promise<string[]> {
  const names: string[] = [];
  for (const entry of await listDirectory(join(imagesDir, relative))) {
    if (isHiddenName(entry.name)) continue;
    if (entry.isDirectory) names.push(entry.name);
    else skipped.push(`${relative}/${entry.name}`);
  }
  return names;
}

/** Items below `images/<prefix>`: `<chain>/<hotel>/<source>/<image>`. */
async function readImageTree(imagesDir: string, prefix: string, role: 'gallery' | 'query', skipped: string[]): Promise<ManifestItem[]> {
  const hotelDirs: Array<{ relative: string; hotel: string }> = [];
  for (const chain of await subfolders(imagesDir, prefix, skipped)) {
    for (const hotel of await subfolders(imagesDir, `${prefix}/${chain}`, skipped)) hotelDirs.push({ relative: `${prefix}/${chain}/${hotel}`, hotel });
  }
  const perHotel = await mapWithConcurrency(hotelDirs, LISTING_CONCURRENCY, async ({ relative, hotel }) => {
    const items: ManifestItem[] = [];
    for (const source of await subfolders(imagesDir, relative, skipped)) {
      for (const entry of await listDirectory(join(imagesDir, relative, source))) {
        if (isHiddenName(entry.name) || (entry.isDirectory && entry.name === 'masks')) continue;
        const id = `${relative}/${source}/${entry.name}`;
        if (!entry.isFile || !isImageFileName(entry.name)) {
          skipped.push(id);
          continue;
        }
        items.push({
          id,
          source: { kind: 'file', path: join(imagesDir, id) },
          label: hotel,
          split: role === 'gallery' ? 'train' : 'test',
          isQuery: role === 'query',
          isGallery: role === 'gallery',
        });
      }
    }
    return items;
  });
  return perHotel.flat();
}

/** Reads Hotels-50K (see the file comment). */
export async function readHotels50k(root: string, options: LayoutReadOptions): Promise<Manifest> {
  const trainDir = await findFirst([join(root, 'images', 'train'), join(root, 'train')], 'directory');
  if (!trainDir) throw new DmlError('E_NOT_FOUND', `Hotels-50K folder ${root} has no images/train folder (also looked for ${join(root, 'train')})`);
  const imagesDir = dirname(trainDir);
  const testSet = options.hotelsTestSet;
  const testDir = join(imagesDir, 'test', testSet);
  if ((await pathKind(testDir)) !== 'directory') {
    const present =
      (await pathKind(join(imagesDir, 'test'))) === 'directory'
        ? (await listDirectory(join(imagesDir, 'test'))).filter((e) => e.isDirectory && !isHiddenName(e.name)).map((e) => e.name)
        : [];
    throw new DmlError(
      'E_NOT_FOUND',
      `Hotels-50K test set folder ${testDir} does not exist (test sets: ${HOTELS50K_TEST_SETS.join(', ')}; found: ${present.join(', ') || 'none'}); ` +
        'unpack test.tar.gz into images/',
    );
  }
  const skipped: string[] = [];
  const gallery = await readImageTree(imagesDir, 'train', 'gallery', skipped);
  const queries = await readImageTree(imagesDir, `test/${testSet}`, 'query', skipped);
  if (skipped.length > 0) {
    options.warn(
      `Hotels-50K ${imagesDir}: skipped ${countOf(skipped.length, 'entry', 'entries')} that are not images at <split>/<chain>/<hotel>/<source>/<image> (${summarizeNames(skipped.sort())})`,
    );
  }
  for (const [name, items] of [['train', gallery], [`test/${testSet}`, queries]] as const) {
    if (items.length === 0) throw new DmlError('E_EMPTY', `Hotels-50K folder ${join(imagesDir, name)} holds no images at <chain>/<hotel>/<source>/<image>`);
  }
  return {
    layout: 'hotels50k',
    root: imagesDir,
    protocol: `Hotels-50K: train images are the gallery, test images (${testSet}) the queries; labels are hotel ids`,
    defaultK: [1, 10, 100],
    items: [...gallery, ...queries],
  };
}
