/**
 * @file Stanford Online Products layout (`sop:<root>`): the authors' train/test split, 11,318 train
 * classes (59,551 images) and 11,316 test classes (60,502 images).
 *
 * `<root>` is the `Stanford_Online_Products/` folder of `Stanford_Online_Products.zip`, or the
 * folder that contains it:
 * ```
 * Stanford_Online_Products/
 *   Ebay_train.txt     image_id class_id super_class_id path
 *                      1 1 1 bicycle_final/111085122871_0.JPG
 *   Ebay_test.txt      (same header; image ids start again at 1)
 *   bicycle_final/111085122871_0.JPG
 * ```
 * Items: train lines then test lines, in file order; id = `path`, label = `class_id`; test items are
 * query and gallery (query set = gallery set). `Ebay_info.txt` (all images) and the super classes
 * are not used.
 */
import { dirname, join } from 'node:path';
import { DmlError } from '../../errors.js';
import { findFirst, lineError, parsePositiveInteger, readAnnotationLines, splitItem } from '../layout-support.js';
import type { Manifest, ManifestItem } from '../manifest.js';

const HEADER = 'image_id class_id super_class_id path';

async function readSplitFile(root: string, split: 'train' | 'test'): Promise<ManifestItem[]> {
  const file = join(root, split === 'train' ? 'Ebay_train.txt' : 'Ebay_test.txt');
  const [header, ...lines] = await readAnnotationLines(file, 'Stanford Online Products list');
  if (header?.fields.join(' ') !== HEADER) {
    throw lineError(file, header?.line ?? 1, `expected the header "${HEADER}" but found ${JSON.stringify(header?.fields.join(' ') ?? '')}`);
  }
  return lines.map(({ line, fields }): ManifestItem => {
    if (fields.length !== 4) throw lineError(file, line, `expected "${HEADER}" (4 fields) but found ${fields.length} fields`);
    parsePositiveInteger(fields[0] ?? '', file, line, 'image_id');
    const classId = parsePositiveInteger(fields[1] ?? '', file, line, 'class_id');
    const relativePath = fields[3] ?? '';
    return splitItem(relativePath, { kind: 'file', path: join(root, relativePath) }, String(classId), split);
  });
}

/** Reads Stanford Online Products (see the file comment). */
export async function readSop(path: string): Promise<Manifest> {
  const trainFile = await findFirst([join(path, 'Ebay_train.txt'), join(path, 'Stanford_Online_Products', 'Ebay_train.txt')], 'file');
  if (!trainFile) {
    throw new DmlError('E_NOT_FOUND', `Stanford Online Products folder ${path} has no Ebay_train.txt (also looked in ${join(path, 'Stanford_Online_Products')})`);
  }
  const root = dirname(trainFile);
  const [train, test] = await Promise.all([readSplitFile(root, 'train'), readSplitFile(root, 'test')]);
  return {
    layout: 'sop',
    root,
    protocol: 'Stanford Online Products: Ebay_train.txt train, Ebay_test.txt test; query set = gallery set = test images',
    defaultK: [1, 10, 100, 1000],
    items: [...train, ...test],
  };
}
