import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { readSop } from '../../../lib/data/layouts/sop.js';
import { fixture, itemRows, useScratchFolder } from '../fixture-support.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

describe('Stanford Online Products layout', () => {
  const scratch = useScratchFolder();

  it('reads Ebay_train.txt then Ebay_test.txt; test items are query and gallery', async () => {
    const manifest = await readSop(fixture('sop'));
    expect(manifest.layout).to.equal('sop');
    expect(manifest.root).to.equal(fixture('sop/Stanford_Online_Products'));
    expect(manifest.defaultK).to.deep.equal([1, 10, 100, 1000]);
    expect(itemRows(manifest.items)).to.deep.equal([
      ['bicycle_final/111085122871_0.JPG', '1', 'train', false, false],
      ['bicycle_final/111085122871_1.JPG', '1', 'train', false, false],
      ['chair_final/111124842155_0.JPG', '2', 'train', false, false],
      ['chair_final/111124842155_1.JPG', '2', 'train', false, false],
      ['bicycle_final/251952414262_0.JPG', '11319', 'test', true, true],
      ['bicycle_final/251952414262_1.JPG', '11319', 'test', true, true],
      ['chair_final/261077203937_0.JPG', '11320', 'test', true, true],
      ['chair_final/261077203937_1.JPG', '11320', 'test', true, true],
    ]);
    expect(manifest.items[4]?.source).to.deep.equal({ kind: 'file', path: fixture('sop/Stanford_Online_Products/bicycle_final/251952414262_0.JPG') });
  });

  it('rejects a missing Ebay_test.txt and a folder without Ebay_train.txt', async () => {
    const root = scratch.copyFixture('sop/Stanford_Online_Products');
    rmSync(`${root}/Ebay_test.txt`);
    await expectDmlError(readSop(root), 'E_NOT_FOUND', `Cannot read Stanford Online Products list ${root}/Ebay_test.txt: it does not exist`);
    const other = fixture('cub');
    await expectDmlError(
      readSop(other),
      'E_NOT_FOUND',
      `Stanford Online Products folder ${other} has no Ebay_train.txt (also looked in ${other}/Stanford_Online_Products)`,
    );
  });

  it('checks the header and every line', async () => {
    const root = scratch.copyFixture('sop/Stanford_Online_Products');
    const file = `${root}/Ebay_test.txt`;
    const original = readFileSync(file, 'utf8');
    writeFileSync(file, original.replace('image_id class_id super_class_id path', 'id class path'));
    await expectDmlError(readSop(root), 'E_DATASET', `${file}:1: expected the header "image_id class_id super_class_id path" but found "id class path"`);
    writeFileSync(file, original.replace('2 11319 1 ', '2 x 1 '));
    await expectDmlError(readSop(root), 'E_DATASET', `${file}:3: column class_id: expected a positive integer but found "x"`);
    writeFileSync(file, original.replace('2 11319 1 ', '2 11319 '));
    await expectDmlError(readSop(root), 'E_DATASET', `${file}:3: expected "image_id class_id super_class_id path" (4 fields) but found 3 fields`);
  });
});
