/**
 * @file CUB-200-2011 layout (`cub:<root>`), with the deep-metric-learning split: classes 1-100 train,
 * 101-200 test (5,864 / 5,924 images). The dataset's own `train_test_split.txt` (a per-image split
 * for classification) is not used.
 *
 * `<root>` is the `CUB_200_2011/` folder of `CUB_200_2011.tgz`, or the folder that contains it:
 * ```
 * CUB_200_2011/
 *   images.txt               1 001.Black_footed_Albatross/Black_Footed_Albatross_0046_18.jpg
 *   image_class_labels.txt   1 1
 *   classes.txt              1 001.Black_footed_Albatross
 *   images/001.Black_footed_Albatross/Black_Footed_Albatross_0046_18.jpg
 * ```
 * Items are in `images.txt` order; id = the path in `images.txt`, label = the class id (`"1"` to
 * `"200"`); test items are query and gallery (query set = gallery set). `image_class_labels.txt` must
 * have one line per image of `images.txt` and name only class ids listed in `classes.txt`.
 */
import { dirname, join } from 'node:path';
import { DmlError } from '../../errors.js';
import { findFirst, lineError, parsePositiveInteger, readAnnotationLines, splitItem, type AnnotationLine } from '../layout-support.js';
import type { Manifest, ManifestItem } from '../manifest.js';

/** Checks that every line has `count` fields; `format` shows the expected line in the error. */
function checkFieldCount(lines: AnnotationLine[], file: string, count: number, format: string): void {
  for (const { line, fields } of lines) {
    if (fields.length !== count) throw lineError(file, line, `expected "${format}" but found ${fields.length} fields`);
  }
}

/** Reads CUB-200-2011 (see the file comment). */
export async function readCub(path: string): Promise<Manifest> {
  const imagesFile = await findFirst([join(path, 'images.txt'), join(path, 'CUB_200_2011', 'images.txt')], 'file');
  if (!imagesFile) {
    throw new DmlError('E_NOT_FOUND', `CUB-200-2011 folder ${path} has no images.txt (also looked in ${join(path, 'CUB_200_2011')})`);
  }
  const root = dirname(imagesFile);
  const labelsFile = join(root, 'image_class_labels.txt');
  const classesFile = join(root, 'classes.txt');
  const [imageLines, labelLines, classLines] = await Promise.all([
    readAnnotationLines(imagesFile, 'CUB-200-2011 image list'),
    readAnnotationLines(labelsFile, 'CUB-200-2011 label file'),
    readAnnotationLines(classesFile, 'CUB-200-2011 class list'),
  ]);
  checkFieldCount(imageLines, imagesFile, 2, '<image_id> <path>');
  checkFieldCount(labelLines, labelsFile, 2, '<image_id> <class_id>');
  checkFieldCount(classLines, classesFile, 2, '<class_id> <class_name>');
  if (labelLines.length !== imageLines.length) {
    throw new DmlError(
      'E_DATASET',
      `CUB-200-2011 label file ${labelsFile} has ${labelLines.length} lines but ${imagesFile} has ${imageLines.length}; both list one line per image`,
    );
  }

  const classIds = new Set(classLines.map(({ line, fields }) => parsePositiveInteger(fields[0] ?? '', classesFile, line, 'class_id')));
  const classOfImage = new Map<number, number>();
  for (const { line, fields } of labelLines) {
    const imageId = parsePositiveInteger(fields[0] ?? '', labelsFile, line, 'image_id');
    const classId = parsePositiveInteger(fields[1] ?? '', labelsFile, line, 'class_id');
    if (!classIds.has(classId)) throw lineError(labelsFile, line, `unknown class id ${classId}: ${classesFile} does not list it`);
    if (classOfImage.has(imageId)) throw lineError(labelsFile, line, `image id ${imageId} is labelled twice`);
    classOfImage.set(imageId, classId);
  }

  const seenImageIds = new Set<number>();
  const items = imageLines.map(({ line, fields }): ManifestItem => {
    const imageId = parsePositiveInteger(fields[0] ?? '', imagesFile, line, 'image_id');
    const relativePath = fields[1] ?? '';
    const classId = classOfImage.get(imageId);
    if (seenImageIds.has(imageId)) throw lineError(imagesFile, line, `image id ${imageId} is listed twice`);
    if (classId === undefined) throw lineError(imagesFile, line, `image id ${imageId} has no line in ${labelsFile}`);
    seenImageIds.add(imageId);
    return splitItem(relativePath, { kind: 'file', path: join(root, 'images', relativePath) }, String(classId), classId > 100 ? 'test' : 'train');
  });
  return {
    layout: 'cub',
    root,
    protocol: 'CUB-200-2011: classes 1-100 train, 101-200 test; query set = gallery set = test images',
    defaultK: [1, 2, 4, 8],
    items,
  };
}
