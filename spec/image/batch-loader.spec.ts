import { rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import type { ImageSource } from '../../lib/data/manifest.js';
import { DmlError } from '../../lib/errors.js';
import { loadImageBatch } from '../../lib/image/batch-loader.js';
import { toTensor } from '../../lib/image/to-tensor.js';
import type { Preprocessing, TrainAugmentation } from '../../lib/image/preprocessing.js';
import { Rng } from '../../lib/util/rng.js';
import { encodeIdx, encodeImage, makePixels, makeTempDir, writeFixture } from './image-fixtures.js';

const imagenet = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
const f32 = (v: number, mean: number, std: number): number => Math.fround((v / 255 - mean) / std);

describe('loadImageBatch', () => {
  let dir: string;
  let rgbPixels: Buffer;
  let rgb: ImageSource;
  let colours: ImageSource;
  let garbage: ImageSource;
  let truncated: ImageSource;
  let missing: ImageSource;
  let idx: string;
  const photos: ImageSource[] = [];

  before(async () => {
    dir = makeTempDir('dml-batch-');
    // 6 wide x 4 high, pixel (x, y) = [10y + x, 100 + 10y + x, 255 - 10y - x]
    rgbPixels = makePixels(6, 4, (x, y) => [10 * y + x, 100 + 10 * y + x, 255 - 10 * y - x]);
    rgb = { kind: 'file', path: writeFixture(dir, 'rgb.png', await encodeImage(rgbPixels, 6, 4, 3, 'png')) };
    const colourPixels = Buffer.from([[255, 0, 0], [0, 255, 0], [0, 0, 255], [128, 128, 128], [255, 255, 255], [0, 0, 0]].flat());
    colours = { kind: 'file', path: writeFixture(dir, 'colours.png', await encodeImage(colourPixels, 6, 1, 3, 'png')) };
    garbage = { kind: 'file', path: writeFixture(dir, 'garbage.jpg', Buffer.from('not an image')) };
    const noise = makePixels(64, 48, (x, y) => [(x * 37 + y * 11) & 255, (x * y) & 255, (x * 3 + y * 7) & 255]);
    const jpeg = await encodeImage(noise, 64, 48, 3, 'jpeg');
    truncated = { kind: 'file', path: writeFixture(dir, 'truncated.jpg', jpeg.subarray(0, jpeg.length >> 1)) };
    missing = { kind: 'file', path: path.join(dir, 'missing.png') };
    idx = writeFixture(dir, 'images-idx3-ubyte', encodeIdx(2, 2, 3, [0, 50, 100, 150, 200, 250, 1, 2, 3, 4, 5, 6]));
    // photos of different sizes and formats, so decodes finish in different orders
    for (let i = 0; i < 10; i++) {
      const w = 40 + 23 * i;
      const h = 30 + 17 * ((i * 7) % 10);
      const pixels = makePixels(w, h, (x, y) => [(x * (i + 3) + y) & 255, (y * (i + 5)) & 255, (x ^ y ^ i) & 255]);
      const format = i % 2 === 0 ? 'png' : 'jpeg';
      photos.push({ kind: 'file', path: writeFixture(dir, `photo${i}.${format}`, await encodeImage(pixels, w, h, 3, format)) });
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const rgbPre: Preprocessing = { height: 4, width: 6, resizeShorter: 4, channels: 3, layout: 'NCHW', ...imagenet };
  const photoPre: Preprocessing = { height: 24, width: 24, resizeShorter: 28, channels: 3, layout: 'NCHW', ...imagenet };

  it('gives the exact NCHW tensor of a hand-made 6x4 RGB image (no resize)', async () => {
    const batch = await loadImageBatch([rgb], rgbPre);
    expect(batch.shape).to.deep.equal([1, 3, 4, 6]);
    expect(batch.loaded).to.deep.equal([0]);
    expect(batch.failures).to.deep.equal([]);
    const expected: number[] = [];
    for (let c = 0; c < 3; c++) {
      for (let i = 0; i < 24; i++) expected.push(f32(rgbPixels[i * 3 + c]!, imagenet.mean[c]!, imagenet.std[c]!));
    }
    expect([...batch.data]).to.deep.equal(expected);
    expect(batch.data[3 * 24 - 1]).to.equal(f32(255 - 35, 0.406, 0.225)); // B of the last pixel
  });

  it('gives the same values in NHWC order', async () => {
    const batch = await loadImageBatch([rgb], { ...rgbPre, layout: 'NHWC' });
    expect(batch.shape).to.deep.equal([1, 4, 6, 3]);
    expect([...batch.data]).to.deep.equal([...rgbPixels].map((v, i) => f32(v, imagenet.mean[i % 3]!, imagenet.std[i % 3]!)));
  });

  it('converts to one grey channel (red 127, green 220, blue 76) before normalising', async () => {
    const pre: Preprocessing = { height: 1, width: 6, resizeShorter: 1, channels: 1, layout: 'NCHW', mean: [0.5], std: [0.5] };
    const batch = await loadImageBatch([colours], pre);
    expect(batch.shape).to.deep.equal([1, 1, 1, 6]);
    expect([...batch.data]).to.deep.equal([127, 220, 76, 128, 255, 0].map((v) => f32(v, 0.5, 0.5)));
  });

  it('loads IDX items through the same resize and crop (2x3 upscaled to 4x6)', async () => {
    const pre: Preprocessing = { height: 4, width: 6, resizeShorter: 4, channels: 1, layout: 'NCHW', mean: [0], std: [1] };
    const batch = await loadImageBatch([{ kind: 'idx', file: idx, index: 0 }, { kind: 'idx', file: idx, index: 1 }], pre);
    expect(batch.shape).to.deep.equal([2, 1, 4, 6]);
    // the dark-to-bright gradient of item 0 survives: top-left darkest, bottom-right brightest
    expect(batch.data[0]).to.equal(0);
    expect(batch.data[23]).to.equal(Math.fround(250 / 255));
  });

  it('puts image i in slot i whatever the concurrency (deterministic order)', async () => {
    const one = await loadImageBatch(photos, photoPre, { concurrency: 1 });
    const many = await loadImageBatch(photos, photoPre, { concurrency: 4 });
    const wide = await loadImageBatch(photos, photoPre, { concurrency: 16 });
    expect(one.shape).to.deep.equal([10, 3, 24, 24]);
    expect(many.data).to.deep.equal(one.data);
    expect(wide.data).to.deep.equal(one.data);
    const third = await loadImageBatch([photos[3]!], photoPre);
    expect(one.data.subarray(3 * 1728, 4 * 1728)).to.deep.equal(third.data);
  });

  it('writes into a caller-given output array, reused batch after batch, with the same values', async () => {
    const expected = await loadImageBatch(photos, photoPre);
    const output = new Float32Array(12 * 1728).fill(Number.NaN); // room for 12 images; stale values inside
    const first = await loadImageBatch(photos, photoPre, { output });
    expect(first.data.buffer).to.equal(output.buffer);
    expect(first.data.length).to.equal(10 * 1728);
    expect(first.data).to.deep.equal(expected.data);
    const second = await loadImageBatch(photos.slice(0, 3), photoPre, { output });
    expect(second.data.buffer).to.equal(output.buffer);
    expect(second.data).to.deep.equal(expected.data.subarray(0, 3 * 1728));
    // With an image skipped, the batch is packed into a new array; the caller's is left as it was.
    const skipped = await loadImageBatch([photos[0]!, garbage, photos[1]!], photoPre, { output, skipBadImages: true });
    expect(skipped.data.buffer).not.to.equal(output.buffer);
    expect(skipped.data).to.deep.equal(expected.data.subarray(0, 2 * 1728));
    await expectDmlError(
      loadImageBatch(photos, photoPre, { output: new Float32Array(9 * 1728) }),
      'E_ARG',
      /^Expected a Float32Array or Uint8Array of at least 17280 values \(the batch's images x their size\) for output but received/,
    );
  });

  it("with a Uint8Array output, holds the crops' bytes in HWC order, which toTensor turns into the float batch", async () => {
    const exact = await loadImageBatch([rgb], rgbPre, { output: new Uint8Array(6 * 4 * 3) });
    expect(exact.data).to.be.instanceOf(Uint8Array);
    expect(exact.shape).to.deep.equal([1, 4, 6, 3]); // HWC although the model's layout is NCHW
    expect(Buffer.from(exact.data).equals(rgbPixels)).to.equal(true);
    const per = 24 * 24 * 3;
    const output = new Uint8Array(11 * per);
    const crops = await loadImageBatch([photos[0]!, garbage, photos[1]!, photos[2]!], photoPre, { output, skipBadImages: true });
    expect(crops.loaded).to.deep.equal([0, 2, 3]);
    expect(crops.failures.map((f) => f.index)).to.deep.equal([1]);
    expect(crops.data).to.be.instanceOf(Uint8Array); // packed into a new uint8 array
    expect(crops.data.buffer).not.to.equal(output.buffer);
    const normalised = new Float32Array(3 * per);
    for (let i = 0; i < 3; i++) toTensor({ data: Buffer.from(crops.data.buffer, crops.data.byteOffset + i * per, per), width: 24, height: 24, channels: 3 }, photoPre, normalised, i * per);
    expect(normalised).to.deep.equal((await loadImageBatch([photos[0]!, photos[1]!, photos[2]!], photoPre)).data);
  });

  it('throws the DmlError of the lowest-index bad image by default', async () => {
    const sources = [photos[0]!, missing, photos[1]!, garbage, photos[2]!];
    for (const concurrency of [1, 4]) {
      const err = await loadImageBatch(sources, photoPre, { concurrency }).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(DmlError);
      expect(err).to.include({ code: 'E_NOT_FOUND', message: `${(missing as { path: string }).path}: no such file (expected an existing image file)` });
    }
  });

  it('with skipBadImages, leaves bad images out, keeps order and reports each failure', async () => {
    const sources = [photos[0]!, garbage, photos[1]!, missing, truncated, photos[2]!];
    const batch = await loadImageBatch(sources, photoPre, { skipBadImages: true, concurrency: 3 });
    expect(batch.loaded).to.deep.equal([0, 2, 5]);
    expect(batch.shape).to.deep.equal([3, 3, 24, 24]);
    expect(batch.failures.map((f) => [f.index, f.code])).to.deep.equal([
      [1, 'E_IMAGE'],
      [3, 'E_NOT_FOUND'],
      [4, 'E_IMAGE'],
    ]);
    expect(batch.failures[2]!.source).to.equal(truncated);
    expect(batch.failures[2]!.name).to.equal((truncated as { path: string }).path);
    // libvips keeps one error buffer per process: with several decodes in flight the detail text of a
    // truncated JPEG is sometimes lost ("Unknown error"), but the failure itself is always reported.
    expect(batch.failures[2]!.message).to.match(/truncated\.jpg: (truncated image data, VipsJpeg: premature end of JPEG image|corrupt image data, Unknown error)/);
    const good = await loadImageBatch([photos[0]!, photos[1]!, photos[2]!], photoPre);
    expect(batch.data).to.deep.equal(good.data);
  });

  describe('augmentation', () => {
    const augmentation: TrainAugmentation = { scale: [0.08, 1], ratio: [3 / 4, 4 / 3], flipProbability: 0.5 };

    it('same seed -> identical tensors whatever the concurrency; another seed -> different', async () => {
      const run = (seed: number, concurrency: number) =>
        loadImageBatch(photos, photoPre, { concurrency, augment: { augmentation, rng: new Rng(seed) } });
      const a = await run(7, 1);
      const b = await run(7, 4);
      const c = await run(8, 4);
      expect(b.data).to.deep.equal(a.data);
      expect(c.data).not.to.deep.equal(a.data);
      const evalBatch = await loadImageBatch(photos, photoPre);
      expect(a.data).not.to.deep.equal(evalBatch.data);
    });

    it('forks one generator per source, in source order, before any work (one draw each)', async () => {
      const rng = new Rng(9);
      await loadImageBatch([photos[0]!, garbage, photos[1]!], photoPre, { skipBadImages: true, augment: { augmentation, rng } });
      const reference = new Rng(9);
      for (let i = 0; i < 3; i++) reference.nextUint32();
      expect(rng.nextUint32()).to.equal(reference.nextUint32());
      // a bad image does not shift the draws of the images after it
      const skipped = await loadImageBatch([photos[0]!, garbage, photos[1]!], photoPre, {
        skipBadImages: true,
        augment: { augmentation, rng: new Rng(9) },
      });
      const direct = await loadImageBatch([photos[0]!, photos[4]!, photos[1]!], photoPre, {
        augment: { augmentation, rng: new Rng(9) },
      });
      expect(skipped.data.subarray(1728)).to.deep.equal(direct.data.subarray(2 * 1728));
    });

    it('a flip probability of 1 mirrors every image of a 0-probability run exactly', async () => {
      const keep = { scale: [0.5, 1] as [number, number], ratio: [0.75, 1.333] as [number, number] };
      const pre: Preprocessing = { ...photoPre, layout: 'NHWC' };
      const plain = await loadImageBatch(photos.slice(0, 3), pre, { augment: { augmentation: { ...keep, flipProbability: 0 }, rng: new Rng(1) } });
      const flipped = await loadImageBatch(photos.slice(0, 3), pre, { augment: { augmentation: { ...keep, flipProbability: 1 }, rng: new Rng(1) } });
      for (let n = 0; n < 3; n++) {
        for (let y = 0; y < 24; y++) {
          for (let x = 0; x < 24; x++) {
            for (let c = 0; c < 3; c++) {
              const at = (xx: number) => ((n * 24 + y) * 24 + xx) * 3 + c;
              expect(flipped.data[at(x)]).to.equal(plain.data[at(23 - x)]);
            }
          }
        }
      }
    });
  });

  it('returns an empty batch for no sources', async () => {
    const batch = await loadImageBatch([], rgbPre);
    expect(batch).to.deep.equal({ data: new Float32Array(0), shape: [0, 3, 4, 6], loaded: [], failures: [] });
  });

  it('rejects with E_CANCELLED when the signal is aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const err = await loadImageBatch(photos, photoPre, { signal: controller.signal }).catch((e: unknown) => e);
    expect(err).to.include({ code: 'E_CANCELLED', message: 'Image loading cancelled (0 of 10 images loaded)' });
  });

  it('rejects bad settings naming the parameter, expectation and value', async () => {
    const cases: [Preprocessing | undefined, object, string][] = [
      [{ ...rgbPre, height: 0 }, {}, 'Expected a positive integer for preprocessing.height but received 0'],
      [{ ...rgbPre, resizeShorter: 3 }, {}, 'Expected an integer of at least min(height, width) = 4 for preprocessing.resizeShorter but received 3'],
      [{ ...rgbPre, mean: [0.5] }, {}, 'Expected an array of 3 numbers (one per channel) for preprocessing.mean but received array of length 1'],
      [{ ...rgbPre, std: [0.2, 0, 0.2] }, {}, 'Expected a positive number of float32 range, in [1.2e-38, 3.4e38] for preprocessing.std[1] but received 0'],
      // Values a float32 tensor cannot hold, or that make every image the same input, train nothing.
      [{ ...rgbPre, std: [0.2, 1e308, 0.2] }, {}, 'Expected a positive number of float32 range, in [1.2e-38, 3.4e38] for preprocessing.std[1] but received 1e+308'],
      [{ ...rgbPre, mean: [1e308, 0, 0] }, {}, 'Expected a finite number of float32 range (at most 3.4e38 in magnitude) for preprocessing.mean[0] but received 1e+308'],
      [{ ...rgbPre, rescale: 1e-300 }, {}, 'Expected a positive number of float32 range, in [1.2e-38, 3.4e38] for preprocessing.rescale but received 1e-300'],
      [
        { ...rgbPre, rescale: 1e-12 },
        {},
        `preprocessing: rescale 1e-12, mean ${rgbPre.mean[0]} and std ${rgbPre.std[0]} (channel 0) map black and white pixels to the same float32 input, so every image looks alike; expected a rescale (1/255 by default) and std that keep them apart`,
      ],
      [{ ...rgbPre, channels: 2 as 1 }, {}, 'Expected 1 or 3 for preprocessing.channels but received 2'],
      [rgbPre, { concurrency: 0 }, 'Expected a positive integer for concurrency but received 0'],
      [
        rgbPre,
        { augment: { augmentation: { scale: [0.5, 0.2], ratio: [1, 1], flipProbability: 0 }, rng: new Rng(1) } },
        'Expected [min, max] with 0 < min <= max <= 1 for augment.augmentation.scale but received "[0.5, 0.2]"',
      ],
      [
        rgbPre,
        { augment: { augmentation: { scale: [0.5, 1], ratio: [1, 1], flipProbability: 2 }, rng: new Rng(1) } },
        'Expected a number in [0, 1] for augment.augmentation.flipProbability but received 2',
      ],
    ];
    for (const [pre, options, message] of cases) {
      const err = await loadImageBatch([rgb], pre as Preprocessing, options).catch((e: unknown) => e);
      expect(err).to.include({ code: 'E_ARG', message });
    }
  });
});
