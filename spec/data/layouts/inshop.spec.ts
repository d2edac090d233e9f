import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { readInshop } from '../../../lib/data/layouts/inshop.js';
import { fixture, itemRows, useScratchFolder } from '../fixture-support.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

const EXPECTED_ROWS = [
  ['img/WOMEN/Dresses/id_00000002/02_1_front.jpg', 'id_00000002', 'train', false, false],
  ['img/WOMEN/Dresses/id_00000002/02_2_side.jpg', 'id_00000002', 'train', false, false],
  ['img/MEN/Denim/id_00000080/01_1_front.jpg', 'id_00000080', 'test', true, false],
  ['img/MEN/Denim/id_00000080/01_2_side.jpg', 'id_00000080', 'test', false, true],
  ['img/MEN/Denim/id_00000080/01_3_back.jpg', 'id_00000080', 'test', false, true],
  ['img/WOMEN/Blouses_Shirts/id_00000001/02_1_front.jpg', 'id_00000001', 'test', true, false],
  ['img/WOMEN/Blouses_Shirts/id_00000001/02_2_side.jpg', 'id_00000001', 'test', false, true],
];

describe('In-shop layout', () => {
  const scratch = useScratchFolder();

  it('reads Eval/list_eval_partition.txt with images in Img/img/: disjoint query and gallery', async () => {
    const manifest = await readInshop(fixture('inshop/standard'));
    expect(manifest.layout).to.equal('inshop');
    expect(manifest.defaultK).to.deep.equal([1, 10, 20, 30, 40]);
    expect(itemRows(manifest.items)).to.deep.equal(EXPECTED_ROWS);
    expect(manifest.items[2]?.source).to.deep.equal({ kind: 'file', path: fixture('inshop/standard/Img/img/MEN/Denim/id_00000080/01_1_front.jpg') });
  });

  it('reads the list and img/ placed directly in the root', async () => {
    const manifest = await readInshop(fixture('inshop/flat'));
    expect(itemRows(manifest.items)).to.deep.equal(EXPECTED_ROWS);
    expect(manifest.items[0]?.source).to.deep.equal({ kind: 'file', path: fixture('inshop/flat/img/WOMEN/Dresses/id_00000002/02_1_front.jpg') });
  });

  it('rejects a missing list or image folder, naming the places looked at', async () => {
    const root = fixture('sop');
    await expectDmlError(
      readInshop(root),
      'E_NOT_FOUND',
      `In-shop folder ${root} has no list_eval_partition.txt (looked for ${root}/Eval/list_eval_partition.txt and ${root}/list_eval_partition.txt)`,
    );
    const copy = scratch.copyFixture('inshop/standard');
    renameSync(`${copy}/Img/img`, `${copy}/Img/images`);
    await expectDmlError(readInshop(copy), 'E_NOT_FOUND', `In-shop folder ${copy} has no image folder (looked for ${copy}/img and ${copy}/Img/img; unzip Img/img.zip)`);
  });

  it('checks the count line, the header and the evaluation status', async () => {
    const root = scratch.copyFixture('inshop/flat');
    const file = `${root}/list_eval_partition.txt`;
    const original = readFileSync(file, 'utf8');
    writeFileSync(file, original.replace(/^7\n/, '8\n'));
    await expectDmlError(readInshop(root), 'E_DATASET', `In-shop partition list ${file} says 8 images on line 1 but lists 7`);
    writeFileSync(file, original.replace(' query\n', ' probe\n'));
    await expectDmlError(readInshop(root), 'E_DATASET', `${file}:5: column evaluation_status: expected train, query or gallery but found "probe"`);
    writeFileSync(file, original.replace(/^7\n/, ''));
    await expectDmlError(readInshop(root), 'E_DATASET', `${file}:1: expected the image count on the first line but found "image_name item_id evaluation_status"`);
  });
});
