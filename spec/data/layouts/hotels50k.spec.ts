import { rmSync, writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { readHotels50k } from '../../../lib/data/layouts/hotels50k.js';
import { collectingOptions, fixture, itemRows, useScratchFolder } from '../fixture-support.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

const GALLERY_ROWS = [
  ['train/-1/30001/travel_website/8000001.jpg', '30001', 'train', false, true],
  ['train/-1/30001/travel_website/8000002.jpg', '30001', 'train', false, true],
  ['train/5/12345/traffickcam/7654322.jpg', '12345', 'train', false, true],
  ['train/5/12345/travel_website/7654321.jpg', '12345', 'train', false, true],
  ['train/5/12346/travel_website/7654400.jpg', '12346', 'train', false, true],
];

describe('Hotels-50K layout', () => {
  const scratch = useScratchFolder();

  it('reads images/train as the gallery and images/test/unoccluded as the queries, labelled by hotel id', async () => {
    const options = collectingOptions();
    const manifest = await readHotels50k(fixture('hotels50k'), options);
    expect(options.warnings).to.deep.equal([]);
    expect(manifest.layout).to.equal('hotels50k');
    expect(manifest.root).to.equal(fixture('hotels50k/images'));
    expect(manifest.defaultK).to.deep.equal([1, 10, 100]);
    expect(itemRows(manifest.items)).to.deep.equal([
      ...GALLERY_ROWS,
      ['test/unoccluded/-1/30001/traffickcam/9000002.jpg', '30001', 'test', true, false],
      ['test/unoccluded/5/12345/traffickcam/9000001.jpg', '12345', 'test', true, false],
    ]);
    expect(manifest.items[0]?.source).to.deep.equal({ kind: 'file', path: fixture('hotels50k/images/train/-1/30001/travel_website/8000001.jpg') });
  });

  it('reads an occluded test set, skipping its masks/ folders, and accepts the images/ folder as root', async () => {
    const options = { ...collectingOptions(), hotelsTestSet: 'low_occlusions' as const };
    const manifest = await readHotels50k(fixture('hotels50k/images'), options);
    expect(itemRows(manifest.items).slice(5)).to.deep.equal([
      ['test/low_occlusions/-1/30001/traffickcam/9000002.jpg', '30001', 'test', true, false],
      ['test/low_occlusions/5/12345/traffickcam/9000001.jpg', '12345', 'test', true, false],
    ]);
    expect(manifest.protocol).to.equal('Hotels-50K: train images are the gallery, test images (low_occlusions) the queries; labels are hotel ids');
  });

  it('rejects a missing test set, listing the sets present', async () => {
    const options = { ...collectingOptions(), hotelsTestSet: 'high_occlusions' as const };
    const images = fixture('hotels50k/images');
    await expectDmlError(
      readHotels50k(fixture('hotels50k'), options),
      'E_NOT_FOUND',
      `Hotels-50K test set folder ${images}/test/high_occlusions does not exist (test sets: unoccluded, low_occlusions, medium_occlusions, high_occlusions; ` +
        'found: low_occlusions, unoccluded); unpack test.tar.gz into images/',
    );
  });

  it('rejects a folder without images/train', async () => {
    const root = fixture('cub');
    await expectDmlError(readHotels50k(root, collectingOptions()), 'E_NOT_FOUND', `Hotels-50K folder ${root} has no images/train folder (also looked for ${root}/train)`);
  });

  it('warns about files at the wrong depth and non-images, and rejects an empty split', async () => {
    const root = scratch.copyFixture('hotels50k');
    writeFileSync(`${root}/images/train/5/stray.jpg`, 'x');
    writeFileSync(`${root}/images/train/5/12345/traffickcam/notes.txt`, 'x');
    const options = collectingOptions();
    const manifest = await readHotels50k(root, options);
    expect(manifest.items).to.have.length(7);
    expect(options.warnings).to.deep.equal([
      `Hotels-50K ${root}/images: skipped 2 entries that are not images at <split>/<chain>/<hotel>/<source>/<image> ("train/5/12345/traffickcam/notes.txt", "train/5/stray.jpg")`,
    ]);
    rmSync(`${root}/images/test/unoccluded/-1`, { recursive: true });
    rmSync(`${root}/images/test/unoccluded/5`, { recursive: true });
    await expectDmlError(
      readHotels50k(root, collectingOptions()),
      'E_EMPTY',
      `Hotels-50K folder ${root}/images/test/unoccluded holds no images at <chain>/<hotel>/<source>/<image>`,
    );
  });
});
