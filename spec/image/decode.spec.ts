import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import sharp from 'sharp';
import { decodeImageBuffer, decodeImageSource } from '../../lib/image/decode.js';
import { encodeBombPng, encodeIdx, encodeImage, expectDmlErrorWithPrefix, makePixels, makeTempDir, writeFixture } from './image-fixtures.js';

describe('decodeImageSource / decodeImageBuffer', () => {
  let dir: string;
  before(() => {
    dir = makeTempDir('dml-decode-');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const file = (p: string) => ({ kind: 'file' as const, path: p });

  it('decodes a PNG to the exact RGB pixels, width x height as stored', async () => {
    const pixels = makePixels(6, 4, (x, y) => [10 * y + x, 100 + 10 * y + x, 255 - 10 * y - x]);
    const png = writeFixture(dir, 'rgb.png', await encodeImage(pixels, 6, 4, 3, 'png'));
    const image = await decodeImageSource(file(png), { channels: 3 });
    expect(image).to.include({ width: 6, height: 4, channels: 3 });
    expect(image.data.equals(pixels)).to.equal(true);
  });

  it("converts to grey with libvips' b-w formula (linear-light Rec.709 luminance, sRGB-encoded)", async () => {
    const colours = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [128, 128, 128], [255, 255, 255]];
    const png = await encodeImage(Buffer.from(colours.flat()), 5, 1, 3, 'png');
    const grey = await decodeImageBuffer(png, 'colours.png', { channels: 1 });
    expect(grey).to.include({ width: 5, height: 1, channels: 1 });
    expect([...grey.data]).to.deep.equal([127, 220, 76, 128, 255]);
  });

  it('replicates a grey image to R = G = B', async () => {
    const png = await encodeImage(Buffer.from([0, 77, 255]), 3, 1, 1, 'png');
    const image = await decodeImageBuffer(png, 'grey.png', { channels: 3 });
    expect([...image.data]).to.deep.equal([0, 0, 0, 77, 77, 77, 255, 255, 255]);
  });

  it('drops alpha and keeps the colour stored under transparent pixels (as PIL convert("RGB"))', async () => {
    const png = await encodeImage(Buffer.from([200, 100, 50, 0, 10, 20, 30, 255]), 2, 1, 4, 'png');
    const image = await decodeImageBuffer(png, 'alpha.png', { channels: 3 });
    expect([...image.data]).to.deep.equal([200, 100, 50, 10, 20, 30]);
  });

  it('reduces a 16-bit PNG to 8 bits', async () => {
    const png = await sharp(new Uint16Array([65535, 0, 32768]), { raw: { width: 1, height: 1, channels: 3 } })
      .toColourspace('rgb16')
      .png()
      .toBuffer();
    const image = await decodeImageBuffer(png, 'deep.png', { channels: 3 });
    expect([...image.data]).to.deep.equal([255, 0, 128]);
  });

  it('honours the EXIF orientation (6 = rotate 90 degrees clockwise)', async () => {
    // 16 wide x 8 high: left half black, right half white; rotated, the left half becomes the top
    const pixels = makePixels(16, 8, (x) => (x < 8 ? [0, 0, 0] : [255, 255, 255]));
    const jpeg = await sharp(pixels, { raw: { width: 16, height: 8, channels: 3 } })
      .jpeg({ quality: 95 })
      .withMetadata({ orientation: 6 })
      .toBuffer();
    expect((await sharp(jpeg).metadata()).orientation).to.equal(6);
    const image = await decodeImageBuffer(jpeg, 'rotated.jpg', { channels: 1 });
    expect(image).to.include({ width: 8, height: 16 });
    const rowMean = (y: number) => image.data.subarray(y * 8, y * 8 + 8).reduce((a, b) => a + b, 0) / 8;
    expect(rowMean(2)).to.be.below(20);
    expect(rowMean(13)).to.be.above(235);
  });

  it('still decodes JPEGs with recoverable corruption (extraneous bytes before a marker)', async () => {
    const pixels = makePixels(64, 48, (x, y) => [(x * 7) & 255, (y * 5) & 255, (x * y) & 255]);
    const jpeg = await encodeImage(pixels, 64, 48, 3, 'jpeg');
    const sos = jpeg.indexOf(Buffer.from([0xff, 0xda]));
    const damaged = Buffer.concat([jpeg.subarray(0, sos), Buffer.from([0, 1, 2]), jpeg.subarray(sos)]);
    await sharp(damaged, { failOn: 'warning' }).raw().toBuffer().then(
      () => expect.fail("sharp's default failOn should reject it"),
      (err: Error) => expect(err.message).to.match(/extraneous bytes before marker/),
    );
    const image = await decodeImageBuffer(damaged, 'extraneous.jpg', { channels: 3 });
    expect(image).to.include({ width: 64, height: 48 });
  });

  describe('IDX items', () => {
    let idx: string;
    before(() => {
      // 3 images of 2 rows x 3 columns; pixel k of image i holds 10i + k
      const data = [0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25];
      idx = writeFixture(dir, 'images-idx3-ubyte', encodeIdx(3, 2, 3, data));
      writeFixture(dir, 'labels-idx1-ubyte', Buffer.from([0, 0, 0x08, 1, 0, 0, 0, 2, 7, 3]));
    });

    it('decodes item i as a 1-channel cols x rows image, or replicated to RGB', async () => {
      const grey = await decodeImageSource({ kind: 'idx', file: idx, index: 1 }, { channels: 1 });
      expect(grey).to.include({ width: 3, height: 2, channels: 1 });
      expect([...grey.data]).to.deep.equal([10, 11, 12, 13, 14, 15]);
      const rgb = await decodeImageSource({ kind: 'idx', file: idx, index: 2 }, { channels: 3 });
      expect([...rgb.data.subarray(0, 6)]).to.deep.equal([20, 20, 20, 21, 21, 21]);
    });

    it('rejects an index out of range, a label file and a missing file', async () => {
      await expectDmlErrorWithPrefix(
        decodeImageSource({ kind: 'idx', file: idx, index: 3 }, { channels: 1 }),
        'E_IMAGE',
        idx,
        /IDX image index 3 out of range \(expected an integer in \[0, 3\)\)$/,
      );
      const labels = path.join(dir, 'labels-idx1-ubyte');
      await expectDmlErrorWithPrefix(
        decodeImageSource({ kind: 'idx', file: labels, index: 0 }, { channels: 1 }),
        'E_DATASET',
        labels,
        /dims 2 \(expected 3 dims/,
      );
      const missing = path.join(dir, 'no-such-idx3-ubyte');
      const err = await decodeImageSource({ kind: 'idx', file: missing, index: 0 }, { channels: 1 }).catch((e: unknown) => e);
      expect(err).to.include({ code: 'E_NOT_FOUND' });
    });
  });

  describe('bad inputs: one-line DmlError naming the file', () => {
    it('garbage bytes', async () => {
      const p = writeFixture(dir, 'garbage.jpg', Buffer.from('this is not an image, just some text'));
      await expectDmlErrorWithPrefix(
        decodeImageSource(file(p), { channels: 3 }),
        'E_IMAGE',
        p,
        /: not an image in a supported format \(expected JPEG, PNG, WEBP, .* data\)$/,
      );
    });

    it('an empty file', async () => {
      const p = writeFixture(dir, 'empty.png', Buffer.alloc(0));
      await expectDmlErrorWithPrefix(decodeImageSource(file(p), { channels: 3 }), 'E_IMAGE', p, /: empty file \(expected encoded image data\)$/);
    });

    it('a JPEG cut in half', async () => {
      const pixels = makePixels(64, 48, (x, y) => [(x * 7) & 255, (y * 5) & 255, (x * y) & 255]);
      const jpeg = await encodeImage(pixels, 64, 48, 3, 'jpeg');
      const p = writeFixture(dir, 'half.jpg', jpeg.subarray(0, jpeg.length >> 1));
      await expectDmlErrorWithPrefix(
        decodeImageSource(file(p), { channels: 3 }),
        'E_IMAGE',
        p,
        /: truncated image data, VipsJpeg: premature end of JPEG image \(expected a complete image file\)$/,
      );
    });

    it('a PNG cut in half', async () => {
      const pixels = makePixels(64, 48, (x, y) => [(x * 7) & 255, (y * 5) & 255, (x * y) & 255]);
      const png = await encodeImage(pixels, 64, 48, 3, 'png');
      const p = writeFixture(dir, 'half.png', png.subarray(0, png.length >> 1));
      await expectDmlErrorWithPrefix(decodeImageSource(file(p), { channels: 3 }), 'E_IMAGE', p, /: corrupt image data, .*png/);
    });

    it('a decompression bomb: a 12000x12000 PNG of a few KB', async () => {
      const bomb = encodeBombPng(12000, 12000);
      expect(bomb.length).to.be.below(100_000);
      const meta = await sharp(bomb, { limitInputPixels: false }).metadata();
      expect(meta).to.include({ format: 'png', width: 12000, height: 12000 });
      const p = writeFixture(dir, 'bomb.png', bomb);
      await expectDmlErrorWithPrefix(
        decodeImageSource(file(p), { channels: 3 }),
        'E_IMAGE',
        p,
        /: too many pixels, 12000x12000 = 144000000 \(expected at most limitInputPixels = 40000000 pixels\)$/,
      );
    });

    it('an image over a configured limitInputPixels', async () => {
      const png = await encodeImage(Buffer.alloc(100 * 60), 100, 60, 1, 'png');
      await decodeImageBuffer(png, 'ok.png', { channels: 1, limitInputPixels: 6000 });
      await expectDmlErrorWithPrefix(
        decodeImageBuffer(png, 'upload', { channels: 1, limitInputPixels: 5999 }),
        'E_IMAGE',
        'upload',
        /: too many pixels, 100x60 = 6000 \(expected at most limitInputPixels = 5999 pixels\)$/,
      );
    });

    it('a missing file (E_NOT_FOUND) and a directory (E_IO)', async () => {
      const missing = path.join(dir, 'missing.jpg');
      await expectDmlErrorWithPrefix(
        decodeImageSource(file(missing), { channels: 3 }),
        'E_NOT_FOUND',
        missing,
        /: no such file \(expected an existing image file\)$/,
      );
      const folder = path.join(dir, 'folder.jpg');
      mkdirSync(folder);
      await expectDmlErrorWithPrefix(decodeImageSource(file(folder), { channels: 3 }), 'E_IO', folder, /: a folder, not a regular file \(expected an image file\)$/);
      // A FIFO used to block the read for good (issue 38): one line at once, and skippable like any bad image.
      const fifo = path.join(dir, 'fifo.png');
      expect(spawnSync('mkfifo', [fifo]).status).to.equal(0);
      await expectDmlErrorWithPrefix(decodeImageSource(file(fifo), { channels: 3 }), 'E_IO', fifo, /: a FIFO \(named pipe\), not a regular file \(expected an image file\)$/);
    });

    it('bad options name the parameter', async () => {
      const err = await decodeImageBuffer(Buffer.alloc(1), 'x', { channels: 3, limitInputPixels: 0 }).catch((e: unknown) => e);
      expect(err).to.include({ code: 'E_ARG', message: 'Expected a positive integer for limitInputPixels but received 0' });
    });
  });
});
