/**
 * @file DeepFashion In-shop Clothes Retrieval layout (`inshop:<root>`): 3,997 train items
 * (25,882 images); the 3,985 test items split into 14,218 queries and 12,612 gallery images by the
 * given list. Query and gallery are disjoint (no self-exclusion in evaluation).
 *
 * `<root>` is the `In-shop Clothes Retrieval Benchmark/` folder:
 * ```
 * In-shop Clothes Retrieval Benchmark/
 *   Eval/list_eval_partition.txt    52712
 *                                   image_name item_id evaluation_status
 *                                   img/WOMEN/Dresses/id_00000002/02_1_front.jpg id_00000002 train
 *   Img/img.zip -> unzipped in place: Img/img/WOMEN/Dresses/id_00000002/02_1_front.jpg
 * ```
 * Accepted placements: the list at `Eval/list_eval_partition.txt` or directly in `<root>`; the
 * `img/` folder the list's paths start with, inside `<root>` (img.zip unzipped at the root) or inside
 * `<root>/Img/` (unzipped in place), tried in that order.
 *
 * Line 1 holds the image count and must match the number of entries; line 2 is the header. Items are
 * in file order; id = `image_name`, label = `item_id`; `train` items: split train, no evaluation
 * role; `query` items: split test, query only; `gallery` items: split test, gallery only.
 */
import { dirname, join } from 'node:path';
import { DmlError } from '../../errors.js';
import { findFirst, lineError, readAnnotationLines } from '../layout-support.js';
import type { Manifest, ManifestItem } from '../manifest.js';

const HEADER = 'image_name item_id evaluation_status';

/** Reads DeepFashion In-shop (see the file comment). */
export async function readInshop(root: string): Promise<Manifest> {
  const listCandidates = [join(root, 'Eval', 'list_eval_partition.txt'), join(root, 'list_eval_partition.txt')];
  const listFile = await findFirst(listCandidates, 'file');
  if (!listFile) throw new DmlError('E_NOT_FOUND', `In-shop folder ${root} has no list_eval_partition.txt (looked for ${listCandidates.join(' and ')})`);
  const imageBaseCandidates = [root, join(root, 'Img')];
  const imageBase = await findFirst(imageBaseCandidates.map((base) => join(base, 'img')), 'directory').then((dir) => dir && dirname(dir));
  if (!imageBase) {
    throw new DmlError(
      'E_NOT_FOUND',
      `In-shop folder ${root} has no image folder (looked for ${imageBaseCandidates.map((b) => join(b, 'img')).join(' and ')}; unzip Img/img.zip)`,
    );
  }

  const [countLine, header, ...lines] = await readAnnotationLines(listFile, 'In-shop partition list');
  const declared = countLine && countLine.fields.length === 1 && /^\d+$/.test(countLine.fields[0] ?? '') ? Number(countLine.fields[0]) : NaN;
  if (!Number.isInteger(declared)) {
    throw lineError(listFile, countLine?.line ?? 1, `expected the image count on the first line but found ${JSON.stringify(countLine?.fields.join(' ') ?? '')}`);
  }
  if (header?.fields.join(' ') !== HEADER) {
    throw lineError(listFile, header?.line ?? 2, `expected the header "${HEADER}" but found ${JSON.stringify(header?.fields.join(' ') ?? '')}`);
  }
  if (lines.length !== declared) {
    throw new DmlError('E_DATASET', `In-shop partition list ${listFile} says ${declared} images on line 1 but lists ${lines.length}`);
  }
  const items = lines.map(({ line, fields }): ManifestItem => {
    if (fields.length !== 3) throw lineError(listFile, line, `expected "${HEADER}" (3 fields) but found ${fields.length} fields`);
    const [imageName = '', itemId = '', status = ''] = fields;
    if (status !== 'train' && status !== 'query' && status !== 'gallery') {
      throw lineError(listFile, line, `column evaluation_status: expected train, query or gallery but found ${JSON.stringify(status)}`);
    }
    return {
      id: imageName,
      source: { kind: 'file', path: join(imageBase, imageName) },
      label: itemId,
      split: status === 'train' ? 'train' : 'test',
      isQuery: status === 'query',
      isGallery: status === 'gallery',
    };
  });
  return {
    layout: 'inshop',
    root,
    protocol: 'In-shop Clothes Retrieval: list_eval_partition.txt train / query / gallery; query and gallery are disjoint',
    defaultK: [1, 10, 20, 30, 40],
    items,
  };
}
