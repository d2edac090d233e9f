import { appendFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { DATASET_LAYOUTS, manifestHash, openDataset } from '../../lib/data/open-dataset.js';
import { fixture, useScratchFolder } from './fixture-support.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

const SOP_HEADER = 'image_id class_id super_class_id path\n';

describe('openDataset', () => {
  const scratch = useScratchFolder();
  const quiet = { warn: () => undefined };

  it('dispatches <layout>:<path> to every layout', async () => {
    const cases: Array<[string, string, number]> = [
      [`folder:${fixture('folder/split')}`, 'folder', 7],
      [`csv:${fixture('csv/manifest.csv')}`, 'csv', 4],
      [`jsonl:${fixture('csv/manifest.jsonl')}`, 'jsonl', 4],
      [`cub:${fixture('cub')}`, 'cub', 10],
      [`cars196:${fixture('cars196/mat')}`, 'cars196', 8],
      [`cars196:${fixture('cars196/csv/cars_annos.csv')}`, 'cars196', 8],
      [`sop:${fixture('sop')}`, 'sop', 8],
      [`inshop:${fixture('inshop/standard')}`, 'inshop', 7],
      [`hotels50k:${fixture('hotels50k')}`, 'hotels50k', 7],
      [`idx:${fixture('idx')}`, 'idx', 10],
      [`mnist:${fixture('idx')}`, 'mnist', 10],
      [`fashion-mnist:${fixture('idx')}`, 'fashion-mnist', 10],
    ];
    for (const [spec, layout, count] of cases) {
      const manifest = await openDataset(spec, quiet);
      expect([manifest.layout, manifest.items.length], spec).to.deep.equal([layout, count]);
    }
    expect(DATASET_LAYOUTS).to.deep.equal(['folder', 'csv', 'jsonl', 'cub', 'cars196', 'sop', 'inshop', 'hotels50k', 'idx', 'mnist', 'fashion-mnist']);
  });

  it('reads a bare folder as ImageFolder and a bare .csv/.jsonl as a manifest, relative to cwd', async () => {
    const cwd = fixture();
    expect((await openDataset('folder/split', { ...quiet, cwd })).layout).to.equal('folder');
    expect((await openDataset('csv/minimal.csv', { ...quiet, cwd })).layout).to.equal('csv');
    expect((await openDataset('csv/manifest.jsonl', { ...quiet, cwd })).layout).to.equal('jsonl');
    const manifest = await openDataset('sop:sop', { ...quiet, cwd });
    expect(manifest.root).to.equal(fixture('sop/Stanford_Online_Products'));
  });

  it('passes hotelsTestSet to the Hotels-50K layout and validates it', async () => {
    const manifest = await openDataset(`hotels50k:${fixture('hotels50k')}`, { ...quiet, hotelsTestSet: 'low_occlusions' });
    expect(manifest.items.filter((i) => i.isQuery).map((i) => i.id)).to.deep.equal([
      'test/low_occlusions/-1/30001/traffickcam/9000002.jpg',
      'test/low_occlusions/5/12345/traffickcam/9000001.jpg',
    ]);
    await expectDmlError(
      openDataset(`hotels50k:${fixture('hotels50k')}`, { hotelsTestSet: 'occluded' }),
      'E_ARG',
      'Expected one of unoccluded, low_occlusions, medium_occlusions, high_occlusions for hotelsTestSet but received "occluded"',
    );
  });

  it('rejects a missing path (E_NOT_FOUND), an unknown layout and a path of the wrong kind (E_ARG)', async () => {
    const missing = fixture('no-such-dataset');
    await expectDmlError(openDataset(`cub:${missing}`), 'E_NOT_FOUND', `Dataset path ${missing} does not exist (from "cub:${missing}")`);
    await expectDmlError(
      openDataset(missing),
      'E_NOT_FOUND',
      `Dataset path ${missing} does not exist (from "${missing}"; expected <layout>:<path> or an existing folder)`,
    );
    await expectDmlError(
      openDataset(`coco:${fixture('cub')}`),
      'E_ARG',
      `Unknown dataset layout "coco" in "coco:${fixture('cub')}"; known layouts: folder, csv, jsonl, cub, cars196, sop, inshop, hotels50k, idx, mnist, fashion-mnist`,
    );
    await expectDmlError(openDataset('constructor:/x'), 'E_ARG', /^Unknown dataset layout "constructor" in "constructor:\/x"; known layouts: folder, /);
    const file = fixture('csv/manifest.csv');
    await expectDmlError(openDataset(`cub:${file}`), 'E_ARG', `Layout cub expects a folder but ${file} is a file`);
    await expectDmlError(openDataset(`csv:${fixture('csv')}`), 'E_ARG', `Layout csv expects a file but ${fixture('csv')} is a folder`);
    const txt = fixture('sop/Stanford_Online_Products/Ebay_info.txt');
    await expectDmlError(
      openDataset(txt),
      'E_ARG',
      `Dataset "${txt}" is a file but not a .csv or .jsonl manifest; write <layout>:<path> (layouts: ${DATASET_LAYOUTS.join(', ')})`,
    );
    await expectDmlError(openDataset('cub:'), 'E_ARG', 'Expected a path after "cub:" for dataset but received "cub:"');
    await expectDmlError(openDataset(' '), 'E_ARG', 'Expected a "<layout>:<path>" string or a folder path for dataset but received " "');
  });

  it('rejects duplicate ids and datasets without items', async () => {
    const root = scratch.copyFixture('sop/Stanford_Online_Products');
    appendFileSync(`${root}/Ebay_test.txt`, '5 11320 2 chair_final/111124842155_0.JPG\n');
    await expectDmlError(
      openDataset(`sop:${root}`, quiet),
      'E_DATASET',
      `Dataset "sop:${root}" has 1 duplicate item id: "chair_final/111124842155_0.JPG" (2 items)`,
    );
    writeFileSync(`${root}/Ebay_train.txt`, SOP_HEADER);
    writeFileSync(`${root}/Ebay_test.txt`, SOP_HEADER);
    await expectDmlError(openDataset(`sop:${root}`, quiet), 'E_EMPTY', `Dataset "sop:${root}" has no items`);
  });

  it('reports labels with a single image through warn, without failing', async () => {
    const warnings: string[] = [];
    const spec = `mnist:${fixture('idx')}`;
    const manifest = await openDataset(spec, { warn: (m) => warnings.push(m) });
    expect(manifest.items).to.have.length(10);
    expect(warnings).to.deep.equal([
      `Dataset "${spec}": 4 of 7 labels have a single image ("1", "2", "6" and 1 more); as queries they have no same-label item to find and count as misses for Recall@K`,
    ]);
  });
});

describe('manifestHash', () => {
  const scratch = useScratchFolder();
  const quiet = { warn: () => undefined };

  it('is a stable sha256 that changes with labels, roles and file size or mtime', async () => {
    const root = scratch.copyFixture('cub');
    const manifest = await openDataset(`cub:${root}`, quiet);
    const hash = await manifestHash(manifest);
    expect(hash).to.match(/^[0-9a-f]{64}$/);
    expect(await manifestHash(await openDataset(`cub:${root}`, quiet), { concurrency: 1 })).to.equal(hash);

    const relabelled = { ...manifest, items: manifest.items.map((item, i) => (i === 0 ? { ...item, label: '2' } : item)) };
    expect(await manifestHash(relabelled)).to.not.equal(hash);
    const reroled = { ...manifest, items: manifest.items.map((item, i) => (i === 0 ? { ...item, isQuery: true } : item)) };
    expect(await manifestHash(reroled)).to.not.equal(hash);

    const image = manifest.items[0]?.source.kind === 'file' ? manifest.items[0].source.path : '';
    const { atime, mtime, size } = statSync(image);
    utimesSync(image, atime, new Date(mtime.getTime() - 60_000));
    const touched = await manifestHash(manifest);
    expect(touched).to.not.equal(hash);
    // Documented limit: an in-place edit that keeps size and mtime is not detected.
    writeFileSync(image, Buffer.alloc(size, 7));
    utimesSync(image, atime, new Date(mtime.getTime() - 60_000));
    expect(await manifestHash(manifest)).to.equal(touched);
    appendFileSync(image, 'x');
    expect(await manifestHash(manifest)).to.not.equal(touched);
  });

  it('stats an IDX file once for all its items and hashes the items', async () => {
    const manifest = await openDataset(`idx:${fixture('idx')}`, quiet);
    const hash = await manifestHash(manifest);
    const shuffled = { ...manifest, items: [...manifest.items].reverse() };
    expect(await manifestHash(shuffled)).to.not.equal(hash);
  });

  it('names a missing image file and its item, validates concurrency and honours an abort signal', async () => {
    const root = scratch.copyFixture('sop');
    writeFileSync(`${root}/Stanford_Online_Products/Ebay_test.txt`, `${SOP_HEADER}1 11319 1 bicycle_final/gone.JPG\n`);
    const manifest = await openDataset(`sop:${root}`, quiet);
    const gone = `${root}/Stanford_Online_Products/bicycle_final/gone.JPG`;
    await expectDmlError(manifestHash(manifest), 'E_NOT_FOUND', `Cannot read image file ${gone} of item "bicycle_final/gone.JPG": it does not exist`);
    await expectDmlError(manifestHash(manifest, { concurrency: 0 }), 'E_ARG', 'Expected a positive integer for concurrency but received 0');
    await expectDmlError(manifestHash(manifest, { signal: AbortSignal.abort() }), 'E_CANCELLED', 'Manifest hashing was cancelled');
  });
});
