/**
 * @file IDX layout for MNIST-family datasets (`idx:<dir>`, aliases `mnist:<dir>` and
 * `fashion-mnist:<dir>`): the four standard files, raw or gzip-compressed.
 *
 * ```
 * fashion-mnist/                       (e.g. /usr/share/datasets/fashion-mnist from the Debian
 *   train-images-idx3-ubyte.gz          package dataset-fashion-mnist)
 *   train-labels-idx1-ubyte.gz
 *   t10k-images-idx3-ubyte.gz
 *   t10k-labels-idx1-ubyte.gz
 * ```
 * Each name is looked up as written, then with `.gz`, then in the dotted spelling of some mirrors
 * (`train-images.idx3-ubyte[.gz]`). Image files must be uint8 N x rows x cols, label files uint8 N,
 * with equal N per pair. Items: train then test (`t10k`), in file order; id = `train/<index>` or
 * `test/<index>`; source = `{ kind: 'idx', file, index }`; label = the digit or class number
 * (`"0"` to `"9"`); test items are query and gallery (query set = gallery set). For a class-disjoint
 * protocol (e.g. classes 0-4 train, 5-9 test) use `applyClassSplit(manifest, parseClassList('0-4'))`
 * from `lib/data/class-split.ts`.
 */
import { join } from 'node:path';
import { DmlError } from '../../errors.js';
import { readIdxFile } from '../idx-reader.js';
import { findFirst, splitItem } from '../layout-support.js';
import type { Manifest, ManifestItem } from '../manifest.js';

/** Layout names this reader answers to, with the dataset name used in the protocol note. */
export const IDX_LAYOUT_NAMES = { idx: 'IDX', mnist: 'MNIST', 'fashion-mnist': 'Fashion-MNIST' } as const;
export type IdxLayoutName = keyof typeof IDX_LAYOUT_NAMES;

/** Finds one of the standard files, e.g. `train-images-idx3-ubyte`, in its accepted spellings. */
async function findIdxFile(dir: string, prefix: 'train' | 't10k', kind: 'images' | 'labels'): Promise<string> {
  const rank = kind === 'images' ? 'idx3' : 'idx1';
  const names = [`${prefix}-${kind}-${rank}-ubyte`, `${prefix}-${kind}.${rank}-ubyte`].flatMap((name) => [name, `${name}.gz`]);
  const file = await findFirst(names.map((name) => join(dir, name)), 'file');
  if (!file) throw new DmlError('E_NOT_FOUND', `IDX folder ${dir} has no ${names[0]} (looked for ${names.join(', ')})`);
  return file;
}

async function readPair(dir: string, prefix: 'train' | 't10k'): Promise<ManifestItem[]> {
  const [imagesFile, labelsFile] = await Promise.all([findIdxFile(dir, prefix, 'images'), findIdxFile(dir, prefix, 'labels')]);
  const [images, labels] = await Promise.all([readIdxFile(imagesFile), readIdxFile(labelsFile)]);
  if (images.dims.length !== 3) {
    throw new DmlError('E_DATASET', `IDX image file ${imagesFile} has dimensions ${images.dims.join('x')}; expected count x rows x cols`);
  }
  if (labels.dims.length !== 1) {
    throw new DmlError('E_DATASET', `IDX label file ${labelsFile} has dimensions ${labels.dims.join('x')}; expected one label per image`);
  }
  const count = images.dims[0] ?? 0;
  if (labels.dims[0] !== count) {
    throw new DmlError('E_DATASET', `IDX image file ${imagesFile} holds ${count} images but label file ${labelsFile} holds ${labels.dims[0]} labels`);
  }
  const split = prefix === 'train' ? 'train' : 'test';
  return Array.from({ length: count }, (_, index) => splitItem(`${split}/${index}`, { kind: 'idx', file: imagesFile, index }, String(labels.data[index]), split));
}

/** Fashion-MNIST's class names, label 0 first (Xiao et al. 2017, the dataset's README). */
export const FASHION_MNIST_CLASSES = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'] as const;

/** Reads an MNIST-family IDX folder (see the file comment); `layout` is the name it was opened with. */
export async function readIdxDataset(dir: string, layout: IdxLayoutName): Promise<Manifest> {
  const [train, test] = await Promise.all([readPair(dir, 'train'), readPair(dir, 't10k')]);
  return {
    layout,
    root: dir,
    protocol: `${IDX_LAYOUT_NAMES[layout]}: train files train, t10k files test; query set = gallery set = test images`,
    defaultK: [1, 2, 4, 8],
    items: [...train, ...test],
    ...(layout === 'fashion-mnist' ? { classNames: Object.fromEntries(FASHION_MNIST_CLASSES.map((name, i) => [String(i), name])) } : {}),
  };
}
