import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { readCub } from '../../../lib/data/layouts/cub.js';
import { fixture, itemRows, useScratchFolder } from '../fixture-support.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

describe('CUB-200-2011 layout', () => {
  const scratch = useScratchFolder();

  it('splits by class id: 1-100 train, 101-200 test (query and gallery), ignoring train_test_split.txt', async () => {
    const manifest = await readCub(fixture('cub/CUB_200_2011'));
    expect(manifest.layout).to.equal('cub');
    expect(manifest.defaultK).to.deep.equal([1, 2, 4, 8]);
    expect(itemRows(manifest.items)).to.deep.equal([
      ['001.Black_footed_Albatross/Black_footed_Albatross_001_1.jpg', '1', 'train', false, false],
      ['001.Black_footed_Albatross/Black_footed_Albatross_002_1.jpg', '1', 'train', false, false],
      ['002.Laysan_Albatross/Laysan_Albatross_001_2.jpg', '2', 'train', false, false],
      ['002.Laysan_Albatross/Laysan_Albatross_002_2.jpg', '2', 'train', false, false],
      ['100.Brown_Pelican/Brown_Pelican_001_100.jpg', '100', 'train', false, false],
      ['100.Brown_Pelican/Brown_Pelican_002_100.jpg', '100', 'train', false, false],
      ['101.White_Pelican/White_Pelican_001_101.jpg', '101', 'test', true, true],
      ['101.White_Pelican/White_Pelican_002_101.jpg', '101', 'test', true, true],
      ['200.Common_Yellowthroat/Common_Yellowthroat_001_200.jpg', '200', 'test', true, true],
      ['200.Common_Yellowthroat/Common_Yellowthroat_002_200.jpg', '200', 'test', true, true],
    ]);
    expect(manifest.items[0]?.source).to.deep.equal({
      kind: 'file',
      path: fixture('cub/CUB_200_2011/images/001.Black_footed_Albatross/Black_footed_Albatross_001_1.jpg'),
    });
  });

  it('accepts the folder that contains CUB_200_2011/', async () => {
    const manifest = await readCub(fixture('cub'));
    expect(manifest.root).to.equal(fixture('cub/CUB_200_2011'));
    expect(manifest.items).to.have.length(10);
  });

  it('rejects a folder without images.txt', async () => {
    const root = fixture('folder');
    await expectDmlError(readCub(root), 'E_NOT_FOUND', `CUB-200-2011 folder ${root} has no images.txt (also looked in ${root}/CUB_200_2011)`);
  });

  it('rejects a missing annotation file, naming it', async () => {
    const root = scratch.copyFixture('cub/CUB_200_2011');
    rmSync(`${root}/image_class_labels.txt`);
    await expectDmlError(readCub(root), 'E_NOT_FOUND', `Cannot read CUB-200-2011 label file ${root}/image_class_labels.txt: it does not exist`);
  });

  it('rejects a label file whose line count differs from images.txt', async () => {
    const root = scratch.copyFixture('cub/CUB_200_2011');
    const labels = readFileSync(`${root}/image_class_labels.txt`, 'utf8').trimEnd().split('\n');
    writeFileSync(`${root}/image_class_labels.txt`, `${labels.slice(0, -1).join('\n')}\n`);
    await expectDmlError(
      readCub(root),
      'E_DATASET',
      `CUB-200-2011 label file ${root}/image_class_labels.txt has 9 lines but ${root}/images.txt has 10; both list one line per image`,
    );
  });

  it('rejects a class id that classes.txt does not list, with file and line', async () => {
    const root = scratch.copyFixture('cub/CUB_200_2011');
    const file = `${root}/image_class_labels.txt`;
    writeFileSync(file, readFileSync(file, 'utf8').replace('\n3 2\n', '\n3 150\n'));
    await expectDmlError(readCub(root), 'E_DATASET', `${file}:3: unknown class id 150: ${root}/classes.txt does not list it`);
  });

  it('rejects malformed lines and image ids without a label', async () => {
    const root = scratch.copyFixture('cub/CUB_200_2011');
    appendFileSync(`${root}/images.txt`, '11 a.jpg extra\n');
    appendFileSync(`${root}/image_class_labels.txt`, '11 1\n');
    await expectDmlError(readCub(root), 'E_DATASET', `${root}/images.txt:11: expected "<image_id> <path>" but found 3 fields`);
    writeFileSync(`${root}/images.txt`, readFileSync(`${root}/images.txt`, 'utf8').replace('11 a.jpg extra', '12 a.jpg'));
    await expectDmlError(readCub(root), 'E_DATASET', `${root}/images.txt:11: image id 12 has no line in ${root}/image_class_labels.txt`);
  });
});
