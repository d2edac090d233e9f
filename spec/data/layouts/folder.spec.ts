import { mkdirSync, writeFileSync } from 'node:fs';
import { expect } from 'chai';
import sharp from 'sharp';
import { IMAGE_EXTENSIONS, isImageFileName } from '../../../lib/data/layout-support.js';
import { readImageFolder } from '../../../lib/data/layouts/folder.js';
import { collectingOptions, fixture, itemRows, useScratchFolder } from '../fixture-support.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

describe('ImageFolder layout', () => {
  const scratch = useScratchFolder();

  it('reads one folder per class: sorted by class then path, nested files, every item query and gallery', async () => {
    const options = collectingOptions();
    const manifest = await readImageFolder(fixture('folder/flat'), options);
    expect(manifest.layout).to.equal('folder');
    expect(manifest.root).to.equal(fixture('folder/flat'));
    expect(manifest.defaultK).to.deep.equal([1, 2, 4, 8]);
    expect(itemRows(manifest.items)).to.deep.equal([
      ['bird/only.png', 'bird', 'test', true, true],
      ['cat/B.JPG', 'cat', 'test', true, true],
      ['cat/a.png', 'cat', 'test', true, true],
      ['cat/c.jpeg', 'cat', 'test', true, true],
      ['cat/kittens/d.png', 'cat', 'test', true, true],
      ['dog/x.webp', 'dog', 'test', true, true],
      ['dog/y.gif', 'dog', 'test', true, true],
      ['dog/z.tif', 'dog', 'test', true, true],
    ]);
    expect(manifest.items[4]?.source).to.deep.equal({ kind: 'file', path: fixture('folder/flat/cat/kittens/d.png') });
  });

  it('skips hidden entries silently and warns once each about stray files, non-images and empty class folders', async () => {
    const options = collectingOptions();
    await readImageFolder(fixture('folder/flat'), options);
    const root = fixture('folder/flat');
    expect(options.warnings).to.deep.equal([
      `ImageFolder ${root}: ignored 1 entry ("README.md"): only class folders are read`,
      `ImageFolder ${root}: skipped 1 non-image file ("cat/notes.txt"); image extensions: .jpg .jpeg .jpe .jfif .png .webp .gif .tif .tiff .avif`,
      `ImageFolder ${root}: skipped 1 class folder without images ("empty_class")`,
    ]);
  });

  it('reads the train/test form: split from the folder, test items query and gallery, train items neither', async () => {
    const options = collectingOptions();
    const manifest = await readImageFolder(fixture('folder/split'), options);
    expect(options.warnings).to.deep.equal([]);
    expect(itemRows(manifest.items)).to.deep.equal([
      ['train/cat/a.png', 'cat', 'train', false, false],
      ['train/cat/b.png', 'cat', 'train', false, false],
      ['train/dog/c.png', 'dog', 'train', false, false],
      ['test/bird/d.png', 'bird', 'test', true, true],
      ['test/bird/e.png', 'bird', 'test', true, true],
      ['test/fish/f.png', 'fish', 'test', true, true],
      ['test/fish/g.png', 'fish', 'test', true, true],
    ]);
    expect(manifest.protocol).to.match(/^ImageFolder train\/test:/);
  });

  it('warns about entries beside train/ and test/', async () => {
    const root = scratch.copyFixture('folder/split');
    mkdirSync(scratch.path('folder/split/val/cat'), { recursive: true });
    const options = collectingOptions();
    const manifest = await readImageFolder(root, options);
    expect(manifest.items).to.have.length(7);
    expect(options.warnings).to.deep.equal([`ImageFolder ${root}: ignored 1 entry ("val"): only train/ and test/ (each with one folder per class) are read`]);
  });

  it('rejects a folder without images (E_EMPTY)', async () => {
    const root = scratch.path('empty');
    mkdirSync(scratch.path('empty/cat'), { recursive: true });
    writeFileSync(scratch.path('empty/cat/notes.txt'), 'x');
    await expectDmlError(
      readImageFolder(root, collectingOptions()),
      'E_EMPTY',
      `ImageFolder ${root} holds no images: expected <class>/<image> with extensions .jpg .jpeg .jpe .jfif .png .webp .gif .tif .tiff .avif`,
    );
  });

  it('accepts exactly the file suffixes sharp reads from files, case-insensitively', () => {
    const sharpSuffixes = Object.values(sharp.format).flatMap((f) => (f.input.file ? f.input.fileSuffix ?? [] : []));
    for (const extension of IMAGE_EXTENSIONS) expect(sharpSuffixes, extension).to.include(extension);
    expect(isImageFileName('IMG_1.JPG')).to.equal(true);
    expect(isImageFileName('photo.Avif')).to.equal(true);
    for (const name of ['a.bmp', 'a.heic', 'a.svg', 'a.txt', '.png', 'png']) expect(isImageFileName(name), name).to.equal(false);
  });
});
