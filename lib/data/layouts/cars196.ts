/**
 * @file Cars196 (Stanford Cars) layout (`cars196:<path>`), with the deep-metric-learning split:
 * classes 1-98 train, 99-196 test (8,054 / 8,131 images). The per-image `test` flag of the
 * annotations (the classification split) is not used.
 *
 * Accepted forms (`<path>` is the folder, or the annotation file itself):
 * 1. The official release `car_ims.tgz` + `cars_annos.mat` (a MAT v5 file read by `lib/data/mat5.ts`):
 *    ```
 *    cars196/
 *      cars_annos.mat   annotations: 1x16185 struct with fields relative_im_path
 *                       ('car_ims/000001.jpg'), bbox_x1, bbox_y1, bbox_x2, bbox_y2, class (1-196), test;
 *                       class_names: 1x196 cell ('AM General Hummer SUV 2000', ...)
 *      car_ims/000001.jpg
 *    ```
 * 2. A converted annotation table `cars_annos.csv` (CSV with a header holding at least the columns
 *    `relative_im_path` and `class`; other columns such as `bbox_x1` or `test` are ignored):
 *    ```csv
 *    relative_im_path,class
 *    car_ims/000001.jpg,1
 *    ```
 * In a folder, `cars_annos.mat` is used when present, else `cars_annos.csv`. A file path may have any
 * name ending in `.mat` or `.csv`. The devkit files of the classification release
 * (`cars_train_annos.mat`, `cars_test_annos.mat`) are not this layout.
 *
 * Image paths are relative to the annotation file's folder. Items are in annotation order; id =
 * `relative_im_path`, label = the class id (`"1"` to `"196"`); test items are query and gallery.
 * Class ids must lie in 1..N, N = the length of `class_names` when the MAT-file has it, else 196.
 */
import { basename, dirname, extname, join } from 'node:path';
import { DmlError, invalidParameterError } from '../../errors.js';
import { parseCsv } from '../csv.js';
import { findFirst, lineError, parsePositiveInteger, pathKind, readTextFile, splitItem } from '../layout-support.js';
import type { Manifest, ManifestItem } from '../manifest.js';
import { readMat5File, type MatValue } from '../mat5.js';

/** Number of Cars196 classes, used when the annotation file has no class list. */
const CLASS_COUNT = 196;

/** One annotated image, with a description of where it came from for error messages. */
interface CarAnnotation {
  relativePath: string;
  classId: number;
  where: string;
}

interface CarAnnotations {
  annotations: CarAnnotation[];
  classCount: number;
  /** What bounds the class ids, for the unknown-class error. */
  classCountSource: string;
  /** The MAT-file's `class_names` by class id, when it has them. */
  classNames?: Record<string, string>;
}

async function readMatAnnotations(file: string): Promise<CarAnnotations> {
  const { variables } = await readMat5File(file);
  const struct = variables.get('annotations');
  if (struct?.kind !== 'struct') {
    const found = [...variables.keys()].join(', ') || 'no variables';
    throw new DmlError('E_DATASET', `Cars196 MAT-file ${file} has no struct array "annotations" (found: ${found})`);
  }
  for (const field of ['relative_im_path', 'class']) {
    if (!struct.fieldNames.includes(field)) {
      throw new DmlError('E_DATASET', `Cars196 MAT-file ${file}: annotations has no field "${field}" (fields: ${struct.fieldNames.join(', ')})`);
    }
  }
  const fieldError = (i: number, field: string, expected: string, found: MatValue | undefined): DmlError =>
    new DmlError('E_DATASET', `Cars196 MAT-file ${file}: annotations(${i + 1}).${field}: expected ${expected} but found ${describeMatValue(found)}`);
  const annotations = struct.elements.map((element, i): CarAnnotation => {
    const path = element.get('relative_im_path');
    const classValue = element.get('class');
    if (path?.kind !== 'char' || path.rows.length !== 1 || path.rows[0] === '') throw fieldError(i, 'relative_im_path', 'a one-line char array', path);
    const classId = classValue?.kind === 'numeric' && classValue.data.length === 1 ? (classValue.data[0] ?? NaN) : NaN;
    if (!Number.isInteger(classId) || classId < 1) throw fieldError(i, 'class', 'one positive integer', classValue);
    return { relativePath: path.rows[0] ?? '', classId, where: `${file}: annotations(${i + 1}).class` };
  });
  const classNames = variables.get('class_names');
  if (classNames?.kind === 'cell') {
    // Class id i (1-based) is the i-th cell; a cell that is not one line of text names nothing.
    const names = Object.fromEntries(classNames.cells.flatMap((cell, i) => (cell.kind === 'char' && cell.rows.length === 1 ? [[String(i + 1), cell.rows[0] as string]] : [])));
    return { annotations, classCount: classNames.cells.length, classCountSource: `class_names lists ${classNames.cells.length}`, classNames: names };
  }
  return { annotations, classCount: CLASS_COUNT, classCountSource: `Cars196 has ${CLASS_COUNT}` };
}

function describeMatValue(value: MatValue | undefined): string {
  if (!value) return 'nothing';
  const size = value.dims.join('x');
  if (value.kind === 'numeric') return `a ${size} ${value.class} array${value.data.length === 1 ? ` (${value.data[0]})` : ''}`;
  return `a ${size} ${value.kind} array`;
}

async function readCsvAnnotations(file: string): Promise<CarAnnotations> {
  const [header, ...records] = parseCsv(await readTextFile(file, 'Cars196 annotation table'), file);
  if (!header) throw new DmlError('E_DATASET', `Cars196 annotation table ${file} is empty; expected a header "relative_im_path,class"`);
  const names = header.fields.map((f) => f.trim().toLowerCase());
  const pathColumn = names.indexOf('relative_im_path');
  const classColumn = names.indexOf('class');
  if (pathColumn < 0 || classColumn < 0) {
    throw lineError(file, header.line, `header must have the columns relative_im_path and class; found ${names.join(',')}`);
  }
  const annotations = records.map(({ line, fields }): CarAnnotation => {
    if (fields.length !== names.length) throw lineError(file, line, `has ${fields.length} fields; the header has ${names.length}`);
    const relativePath = fields[pathColumn] ?? '';
    if (relativePath === '') throw lineError(file, line, 'column "relative_im_path" is empty');
    const classId = parsePositiveInteger(fields[classColumn] ?? '', file, line, '"class"');
    return { relativePath, classId, where: `${file}:${line}: column "class"` };
  });
  return { annotations, classCount: CLASS_COUNT, classCountSource: `Cars196 has ${CLASS_COUNT}` };
}

/** Reads Cars196 (see the file comment). */
export async function readCars196(path: string): Promise<Manifest> {
  let file: string | null = path;
  if ((await pathKind(path)) === 'directory') {
    file = await findFirst([join(path, 'cars_annos.mat'), join(path, 'cars_annos.csv')], 'file');
    if (!file) {
      throw new DmlError(
        'E_NOT_FOUND',
        `Cars196 folder ${path} has neither cars_annos.mat nor cars_annos.csv (expected the release car_ims.tgz + cars_annos.mat)`,
      );
    }
  }
  const extension = extname(file).toLowerCase();
  if (extension !== '.mat' && extension !== '.csv') {
    throw invalidParameterError('Cars196 annotation file', 'a .mat or .csv file (or the folder holding cars_annos.mat)', basename(file));
  }
  const { annotations, classCount, classCountSource, classNames } = extension === '.mat' ? await readMatAnnotations(file) : await readCsvAnnotations(file);
  const root = dirname(file);
  const items = annotations.map(({ relativePath, classId, where }): ManifestItem => {
    if (classId > classCount) throw new DmlError('E_DATASET', `${where}: unknown class id ${classId}; ${classCountSource} classes`);
    return splitItem(relativePath, { kind: 'file', path: join(root, relativePath) }, String(classId), classId > 98 ? 'test' : 'train');
  });
  return {
    layout: 'cars196',
    root,
    protocol: 'Cars196: classes 1-98 train, 99-196 test; query set = gallery set = test images',
    defaultK: [1, 2, 4, 8],
    items,
    ...(classNames !== undefined ? { classNames } : {}),
  };
}
