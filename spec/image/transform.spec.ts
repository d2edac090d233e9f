import { expect } from 'chai';
import { drawAugmentation } from '../../lib/image/geometry.js';
import type { TrainAugmentation } from '../../lib/image/preprocessing.js';
import type { RawImage } from '../../lib/image/raw-image.js';
import { evalTransform, trainTransform } from '../../lib/image/transform.js';
import { Rng } from '../../lib/util/rng.js';
import { makePixels } from './image-fixtures.js';

function raw(width: number, height: number, channels: 1 | 3, pixel: (x: number, y: number) => number[]): RawImage {
  return { data: makePixels(width, height, pixel), width, height, channels };
}

/** Pixel (x, y) of an image as an array of its channel values. */
function at(image: RawImage, x: number, y: number): number[] {
  const i = (y * image.width + x) * image.channels;
  return [...image.data.subarray(i, i + image.channels)];
}

describe('evalTransform / trainTransform', () => {
  it('centre-crops at round((H - h) / 2) with halves to even (margins 3 and 5 -> offset 2)', async () => {
    // 9 wide x 7 high, pixel value 16y + x; the shorter side is already 7, so no resizing
    const image = raw(9, 7, 1, (x, y) => [16 * y + x]);
    const out = await evalTransform(image, { height: 4, width: 4, resizeShorter: 7 });
    expect(out).to.include({ width: 4, height: 4, channels: 1 });
    const expected: number[] = [];
    for (let y = 2; y < 6; y++) for (let x = 2; x < 6; x++) expected.push(16 * y + x);
    expect([...out.data]).to.deep.equal(expected);
  });

  it('resizes the shorter side then crops: 500x375 -> 341x256 -> 224x224, colours kept', async () => {
    const image = raw(500, 375, 3, () => [10, 120, 250]);
    const out = await evalTransform(image, { height: 224, width: 224, resizeShorter: 256 });
    expect(out).to.include({ width: 224, height: 224, channels: 3 });
    expect(at(out, 0, 0)).to.deep.equal([10, 120, 250]);
    expect(at(out, 223, 223)).to.deep.equal([10, 120, 250]);
  });

  it('keeps orientation through the resize (left dark, right bright stays so)', async () => {
    const image = raw(40, 20, 1, (x) => [x < 20 ? 0 : 255]);
    const out = await evalTransform(image, { height: 10, width: 10, resizeShorter: 10 });
    expect(at(out, 0, 5)[0]).to.equal(0);
    expect(at(out, 9, 5)[0]).to.equal(255);
  });

  it('zero-pads an axis where the resized image is narrower than the crop, as torchvision', async () => {
    // 3x8 -> shorter side 4 -> 4x10; crop 7 wide x 4 high: 1 zero column before, 2 after
    const out = await evalTransform(raw(3, 8, 1, () => [200]), { height: 4, width: 7, resizeShorter: 4 });
    expect(out).to.include({ width: 7, height: 4, channels: 1 });
    for (let y = 0; y < 4; y++) expect([...out.data.subarray(y * 7, y * 7 + 7)]).to.deep.equal([0, 200, 200, 200, 200, 0, 0]);
  });

  it('train: cuts out exactly the drawn random box (no resize when the box has the output size)', async () => {
    // 20x20 with pixel (x, y) = [x, y, 0]; scale 0.25 and ratio 1 always give a 10x10 box
    const image = raw(20, 20, 3, (x, y) => [x, y, 0]);
    const augmentation: TrainAugmentation = { scale: [0.25, 0.25], ratio: [1, 1], flipProbability: 0 };
    for (const seed of [1, 2, 3, 4]) {
      const { crop } = drawAugmentation(image, augmentation, new Rng(seed));
      expect(crop).to.include({ width: 10, height: 10 });
      const out = await trainTransform(image, { height: 10, width: 10 }, augmentation, new Rng(seed));
      expect(at(out, 0, 0)).to.deep.equal([crop.left, crop.top, 0]);
      expect(at(out, 9, 9)).to.deep.equal([crop.left + 9, crop.top + 9, 0]);
    }
  });

  it('train: same seed gives identical pixels, another seed different ones', async () => {
    const image = raw(60, 45, 3, (x, y) => [(x * 37 + y * 11) & 255, (x * y) & 255, (x * 3 + y * 7) & 255]);
    const augmentation: TrainAugmentation = { scale: [0.08, 1], ratio: [3 / 4, 4 / 3], flipProbability: 0.5 };
    const a = await trainTransform(image, { height: 16, width: 16 }, augmentation, new Rng(42));
    const b = await trainTransform(image, { height: 16, width: 16 }, augmentation, new Rng(42));
    const c = await trainTransform(image, { height: 16, width: 16 }, augmentation, new Rng(43));
    expect(a).to.include({ width: 16, height: 16, channels: 3 });
    expect(a.data.equals(b.data)).to.equal(true);
    expect(a.data.equals(c.data)).to.equal(false);
  });

  it('train: the flip is the exact mirror of the unflipped output, resize included', async () => {
    const image = raw(60, 45, 1, (x, y) => [(x * 37 + y * 11) & 255]);
    const box: Pick<TrainAugmentation, 'scale' | 'ratio'> = { scale: [0.3, 0.9], ratio: [0.5, 2] };
    const plain = await trainTransform(image, { height: 12, width: 16 }, { ...box, flipProbability: 0 }, new Rng(5));
    const flipped = await trainTransform(image, { height: 12, width: 16 }, { ...box, flipProbability: 1 }, new Rng(5));
    for (let y = 0; y < 12; y++) {
      for (let x = 0; x < 16; x++) expect(at(flipped, x, y)).to.deep.equal(at(plain, 15 - x, y));
    }
    expect(plain.data.equals(flipped.data)).to.equal(false);
  });
});
