import { rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import sharp from 'sharp';
import type { ImageSource } from '../../lib/data/manifest.js';
import { decodeImageSource } from '../../lib/image/decode.js';
import { loadEvalImage, onePipelineFits } from '../../lib/image/eval-image.js';
import { readJpegHeader } from '../../lib/image/jpeg-header.js';
import type { Preprocessing } from '../../lib/image/preprocessing.js';
import { evalTransform, type EvalGeometry } from '../../lib/image/transform.js';
import { encodeBombPng, makePixels, makeTempDir, writeFixture } from './image-fixtures.js';

type Geometry = EvalGeometry & Pick<Preprocessing, 'channels'>;

/** Textured pixels (edges and gradients, so that any change of resampling shows). */
function texture(width: number, height: number): Buffer {
  return makePixels(width, height, (x, y) => [(x * 7 + y * 3) & 255, ((x ^ y) * 5) & 255, (x * y) & 255]);
}

/** A `width x height` JPEG of {@link texture}: sRGB, grey or CMYK, with EXIF orientation `orientation` if given. */
async function jpeg(width: number, height: number, kind: 'srgb' | 'b-w' | 'cmyk', orientation?: number): Promise<Buffer> {
  let image = sharp(texture(width, height), { raw: { width, height, channels: 3 } });
  if (kind !== 'srgb') image = image.toColourspace(kind);
  if (orientation !== undefined) image = image.withMetadata({ orientation });
  return image.jpeg({ quality: 85 }).toBuffer();
}

describe('loadEvalImage', () => {
  let dir: string;
  before(() => {
    dir = makeTempDir('dml-eval-image-');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const file = (p: string): ImageSource => ({ kind: 'file', path: p });

  /** The two-step reference: decode, then the eval transform (what every caller did before). */
  async function twoSteps(source: ImageSource, size: Geometry, limitInputPixels?: number) {
    return evalTransform(await decodeImageSource(source, { channels: size.channels, limitInputPixels }), size);
  }

  /** Expects loadEvalImage (both read modes) to give the two steps' bytes for `bytes` under every `sizes`. */
  async function expectSameBytes(name: string, bytes: Buffer, sizes: Geometry[]): Promise<void> {
    const source = file(writeFixture(dir, name, bytes));
    for (const size of sizes) {
      const expected = await twoSteps(source, size);
      for (const syncRead of [false, true]) {
        const actual = await loadEvalImage(source, size, { syncRead });
        const label = `${name} ${JSON.stringify(size)} syncRead ${syncRead}`;
        expect({ width: actual.width, height: actual.height, channels: actual.channels }, label).to.deep.equal({
          width: expected.width,
          height: expected.height,
          channels: expected.channels,
        });
        expect(Buffer.compare(actual.data, expected.data), label).to.equal(0);
      }
    }
  }

  const crop: Geometry = { height: 24, width: 24, resizeShorter: 28, channels: 3 };

  it('one pipeline gives the two steps bytes for colour JPEGs under every resize mode, crop rounding and padding', async () => {
    const sizes: Geometry[] = [
      crop,
      { ...crop, cropRounding: 'floor', height: 21, width: 17 },
      { height: 40, width: 90, resizeShorter: 40, channels: 3 }, // wider than the resized image: padded
      { height: 30, width: 30, resizeShorter: 0, resizeMode: 'longer', resizeLonger: 36, channels: 3 },
      { height: 20, width: 20, resizeShorter: 0, resizeMode: 'exact', resizeWidth: 33, resizeHeight: 25, channels: 3 },
      { height: 32, width: 32, resizeShorter: 0, resizeMode: 'none', channels: 3 },
      { height: 150, width: 150, resizeShorter: 160, channels: 3 }, // upscaled
    ];
    const small = await jpeg(97, 61, 'srgb');
    expect(onePipelineFits(readJpegHeader(small)!, 3)).to.equal(true);
    await expectSameBytes('small.jpg', small, sizes);
    // Shrunk more than 8 times: libvips would shrink on load (other pixels) without the pre-resize extract.
    await expectSameBytes('large.jpg', await jpeg(800, 600, 'srgb'), [crop]);
  });

  it('the same bytes on both sides of the shrink-on-load bound (the whole-image extract from a 2x shrink on)', async () => {
    // 240x160 with the shorter side to 84 (1.9x: no extract), 80 (2x) and 53 (3x: libvips would shrink on load).
    const sizes: Geometry[] = [84, 80, 53].map((shorter) => ({ height: 48, width: 48, resizeShorter: shorter, channels: 3 }));
    await expectSameBytes('medium.jpg', await jpeg(240, 160, 'srgb'), sizes);
  });

  it('grey into 1 and 3 channels, CMYK into 3, colour into 1 (the two-step path): the same bytes', async () => {
    const grey = await jpeg(90, 70, 'b-w');
    expect(onePipelineFits(readJpegHeader(grey)!, 1)).to.equal(true);
    await expectSameBytes('grey.jpg', grey, [crop, { ...crop, channels: 1 }]);
    const cmyk = await jpeg(90, 70, 'cmyk');
    expect(readJpegHeader(cmyk)?.components).to.equal(4);
    await expectSameBytes('cmyk.jpg', cmyk, [crop]);
    const colour = await jpeg(90, 70, 'srgb');
    expect(onePipelineFits(readJpegHeader(colour)!, 1)).to.equal(false);
    await expectSameBytes('colour-to-grey.jpg', colour, [{ ...crop, channels: 1 }]);
  });

  it('EXIF orientations 1-8: the same bytes (5-8 take the two steps)', async () => {
    for (const orientation of [1, 2, 3, 4, 5, 6, 7, 8]) {
      const bytes = await jpeg(71, 43, 'srgb', orientation);
      expect(onePipelineFits(readJpegHeader(bytes)!, 3), `orientation ${orientation}`).to.equal(orientation <= 4);
      await expectSameBytes(`orientation-${orientation}.jpg`, bytes, [{ height: 30, width: 20, resizeShorter: 33, channels: 3 }]);
    }
  });

  it("PNG, and the Pillow-exact resample path (two steps, exact), give the two steps' bytes", async () => {
    const png = await sharp(texture(80, 50), { raw: { width: 80, height: 50, channels: 3 } }).png().toBuffer();
    await expectSameBytes('image.png', png, [crop]);
    await expectSameBytes('resample.jpg', await jpeg(80, 50, 'srgb'), [
      { ...crop, resample: 'bilinear' },
      { ...crop, resample: 'bicubic' },
    ]);
  });

  it('bad files give the errors decodeImageSource gives (truncated, garbage, bomb, limit, missing)', async () => {
    const whole = await jpeg(64, 48, 'srgb');
    const cases: Array<[string, Buffer, number | undefined]> = [
      ['half.jpg', whole.subarray(0, whole.length >> 1), undefined],
      ['garbage.jpg', Buffer.from('this is not an image'), undefined],
      ['bomb.png', encodeBombPng(12000, 12000), undefined],
      ['limit.jpg', whole, 64 * 48 - 1],
    ];
    const sources: Array<[ImageSource, number | undefined]> = cases.map(([name, bytes, limit]) => [file(writeFixture(dir, name, bytes)), limit]);
    sources.push([file(path.join(dir, 'missing.jpg')), undefined]);
    for (const [source, limit] of sources) {
      const expected = await twoSteps(source, crop, limit).then(
        () => expect.fail('expected an error'),
        (e: unknown) => e as Error & { code: string },
      );
      for (const syncRead of [false, true]) {
        const actual = await loadEvalImage(source, crop, { limitInputPixels: limit, syncRead }).then(
          () => expect.fail(`expected an error for ${JSON.stringify(source)}`),
          (e: unknown) => e as Error & { code: string },
        );
        expect({ code: actual.code, message: actual.message }).to.deep.equal({ code: expected.code, message: expected.message });
      }
    }
  });
});
