import { writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { readCars196 } from '../../../lib/data/layouts/cars196.js';
import { fixture, itemRows, useScratchFolder } from '../fixture-support.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

const EXPECTED_ROWS = [
  ['car_ims/000001.jpg', '1', 'train', false, false],
  ['car_ims/000002.jpg', '1', 'train', false, false],
  ['car_ims/000003.jpg', '98', 'train', false, false],
  ['car_ims/000004.jpg', '98', 'train', false, false],
  ['car_ims/000005.jpg', '99', 'test', true, true],
  ['car_ims/000006.jpg', '99', 'test', true, true],
  ['car_ims/000007.jpg', '196', 'test', true, true],
  ['car_ims/000008.jpg', '196', 'test', true, true],
];

describe('Cars196 layout', () => {
  const scratch = useScratchFolder();

  it('reads cars_annos.mat (compressed, as found in a folder): classes 1-98 train, 99-196 test', async () => {
    const manifest = await readCars196(fixture('cars196/mat'));
    expect(manifest.layout).to.equal('cars196');
    expect(manifest.root).to.equal(fixture('cars196/mat'));
    expect(manifest.defaultK).to.deep.equal([1, 2, 4, 8]);
    expect(itemRows(manifest.items)).to.deep.equal(EXPECTED_ROWS);
    expect(manifest.items[0]?.source).to.deep.equal({ kind: 'file', path: fixture('cars196/mat/car_ims/000001.jpg') });
  });

  it('reads an uncompressed MAT-file given by path, with the same result', async () => {
    const manifest = await readCars196(fixture('cars196/mat/cars_annos_uncompressed.mat'));
    expect(itemRows(manifest.items)).to.deep.equal(EXPECTED_ROWS);
  });

  it('reads a converted cars_annos.csv, ignoring extra columns', async () => {
    const manifest = await readCars196(fixture('cars196/csv'));
    expect(itemRows(manifest.items)).to.deep.equal(EXPECTED_ROWS);
    expect(manifest.items[7]?.source).to.deep.equal({ kind: 'file', path: fixture('cars196/csv/car_ims/000008.jpg') });
  });

  it('rejects a folder without annotations', async () => {
    const root = fixture('cub');
    await expectDmlError(
      readCars196(root),
      'E_NOT_FOUND',
      `Cars196 folder ${root} has neither cars_annos.mat nor cars_annos.csv (expected the release car_ims.tgz + cars_annos.mat)`,
    );
  });

  it('rejects unknown class ids and bad values, naming file, line and column', async () => {
    const file = scratch.path('cars_annos.csv');
    writeFileSync(file, 'relative_im_path,class\ncar_ims/000001.jpg,1\ncar_ims/000002.jpg,197\n');
    await expectDmlError(readCars196(file), 'E_DATASET', `${file}:3: column "class": unknown class id 197; Cars196 has 196 classes`);
    writeFileSync(file, 'relative_im_path,class\ncar_ims/000001.jpg,one\n');
    await expectDmlError(readCars196(file), 'E_DATASET', `${file}:2: column "class": expected a positive integer but found "one"`);
    writeFileSync(file, 'path,class\ncar_ims/000001.jpg,1\n');
    await expectDmlError(readCars196(file), 'E_DATASET', `${file}:1: header must have the columns relative_im_path and class; found path,class`);
  });

  it('rejects a MAT-file without the annotations struct, and other file types', async () => {
    const file = fixture('mat5/types.mat');
    await expectDmlError(readCars196(file), 'E_DATASET', /^Cars196 MAT-file .*types\.mat has no struct array "annotations" \(found: d, m2, i8, /);
    const text = fixture('sop/Stanford_Online_Products/Ebay_train.txt');
    await expectDmlError(
      readCars196(text),
      'E_ARG',
      'Expected a .mat or .csv file (or the folder holding cars_annos.mat) for Cars196 annotation file but received "Ebay_train.txt"',
    );
  });
});
