import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { applyBatchAugmentation, drawBatchAugmentation, validateBatchAugmentation } from '../../lib/train/batch-augmentation.js';
import { axisInterpolation, drawAffine, type AffineFill } from '../../lib/train/batch-affine.js';
import { parseTrainConfig } from '../../lib/train/config.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { drawAugmentation } from '../../lib/image/geometry.js';
import { Rng } from '../../lib/util/rng.js';
import { onCpuBackend } from '../helpers/tf-backend.js';

describe('batch augmentation', () => {
  onCpuBackend();
  /** A 1 x 3 x 4 x 1 image whose pixel (y, x) holds 10 y + x. */
  const ramp = (): tf.Tensor4D => tf.tensor4d([0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23], [1, 3, 4, 1]);

  it('draws the same boxes and flips as the file-based augmentation, in row order', () => {
    const augmentation = { scale: [0.3, 0.9] as [number, number], ratio: [0.75, 1.33] as [number, number], flipProbability: 0.5 };
    const draw = drawBatchAugmentation(5, 30, 40, augmentation, new Rng(7));
    const rng = new Rng(7);
    for (let r = 0; r < 5; r++) {
      const { crop, flip } = drawAugmentation({ width: 40, height: 30 }, augmentation, rng);
      const box = Array.from(draw.boxes.subarray(r * 4, r * 4 + 4));
      const expected = [crop.top / 29, crop.left / 39, (crop.top + crop.height - 1) / 29, (crop.left + crop.width - 1) / 39];
      box.forEach((v, i) => expect(v).to.be.closeTo(expected[i]!, 1e-6));
      expect(draw.flips[r]).to.equal(flip ? 1 : 0);
    }
  });

  it('is the identity for the full box without flip, and mirrors rows with a flip', () => {
    const image = ramp();
    const full = new Float32Array([0, 0, 1, 1]);
    const same = applyBatchAugmentation(image, { boxes: full, flips: new Float32Array([0]) });
    expect(Array.from(same.dataSync())).to.deep.equal([0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]);
    const mirrored = applyBatchAugmentation(image, { boxes: full, flips: new Float32Array([1]) });
    expect(Array.from(mirrored.dataSync())).to.deep.equal([3, 2, 1, 0, 13, 12, 11, 10, 23, 22, 21, 20]);
    expect(same.shape).to.deep.equal([1, 3, 4, 1]);
    tf.dispose([image, same, mirrored]);
  });

  it('resizes a crop box bilinearly back to the input size', () => {
    const image = ramp();
    // Box rows 0..1, columns 1..2 (y2 = 1/2, x from 1/3 to 2/3), resized to 3 x 4: linear in y and x.
    const out = applyBatchAugmentation(image, { boxes: new Float32Array([0, 1 / 3, 1 / 2, 2 / 3]), flips: new Float32Array([0]) });
    const values = Array.from(out.dataSync());
    const expected = [0, 5, 10].flatMap((y) => [1, 4 / 3, 5 / 3, 2].map((x) => y + x));
    values.forEach((v, i) => expect(v).to.be.closeTo(expected[i]!, 1e-5));
    tf.dispose([image, out]);
  });
});

describe('batch augmentation: random rescale (zoom out and in), translation and fill', () => {
  onCpuBackend();
  /** A 1 x 5 x 5 x 1 image whose pixel (y, x) holds 10 y + x. */
  const grid = (): tf.Tensor4D => tf.tensor4d(Array.from({ length: 25 }, (_, i) => 10 * Math.floor(i / 5) + (i % 5)), [1, 5, 5, 1]);
  const identityBoxes = { boxes: new Float32Array([0, 0, 1, 1]), flips: new Float32Array([0]) };
  const run = (image: tf.Tensor4D, scale: number, dy: number, dx: number, fill: AffineFill, mean = [0], std = [1]): number[][] => {
    const out = applyBatchAugmentation(image, { ...identityBoxes, affine: { scales: Float32Array.of(scale), shifts: Int32Array.of(dy, dx) } }, { fill, mean, std });
    const values = Array.from(out.dataSync());
    out.dispose();
    const [, h, w] = image.shape;
    return Array.from({ length: h }, (_, y) => values.slice(y * w, (y + 1) * w));
  };

  it('interpolation rows: identity at scale 1 without shift; a shift moves by whole pixels and marks the border', () => {
    const id = axisInterpolation(4, 1, 0, false);
    expect(Array.from(id.matrix)).to.deep.equal([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
    expect(Array.from(id.inside)).to.deep.equal([1, 1, 1, 1]);
    const shifted = axisInterpolation(4, 1, 1, false);
    expect(Array.from(shifted.inside)).to.deep.equal([0, 1, 1, 1]);
    expect(Array.from(shifted.matrix)).to.deep.equal([0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0]);
    const clamped = axisInterpolation(4, 1, 1, true);
    expect(Array.from(clamped.inside)).to.deep.equal([1, 1, 1, 1]);
    expect(Array.from(clamped.matrix.subarray(0, 4))).to.deep.equal([1, 0, 0, 0]);
  });

  it('zooms out (scale 0.5): the image shrinks about the centre, the border is white in normalised values', () => {
    // n = 5, c = 2: output i samples u = 2 + 2 (i - 2): -2 (border), 0, 2, 4, 6 (border).
    // White with mean 0.5 and std 0.25 is (1 - 0.5) / 0.25 = 2.
    const W = 2;
    expect(run(grid(), 0.5, 0, 0, 'white', [0.5], [0.25])).to.deep.equal([
      [W, W, W, W, W],
      [W, 0, 2, 4, W],
      [W, 20, 22, 24, W],
      [W, 40, 42, 44, W],
      [W, W, W, W, W],
    ]);
  });

  it('zooms in (scale 2) bilinearly about the centre', () => {
    // u = 2 + (i - 2) / 2: 1, 1.5, 2, 2.5, 3 on each axis.
    const axis = [1, 1.5, 2, 2.5, 3];
    expect(run(grid(), 2, 0, 0, 'black')).to.deep.equal(axis.map((y) => axis.map((x) => 10 * y + x)));
  });

  it('translates by whole pixels with black, edge and mean fills', () => {
    // Down 1, left 2: output (y, x) = input (y - 1, x + 2).
    const black = 0;
    expect(run(grid(), 1, 1, -2, 'black')).to.deep.equal([
      [black, black, black, black, black],
      [2, 3, 4, black, black],
      [12, 13, 14, black, black],
      [22, 23, 24, black, black],
      [32, 33, 34, black, black],
    ]);
    expect(run(grid(), 1, 1, -2, 'edge')).to.deep.equal([
      [2, 3, 4, 4, 4],
      [2, 3, 4, 4, 4],
      [12, 13, 14, 14, 14],
      [22, 23, 24, 24, 24],
      [32, 33, 34, 34, 34],
    ]);
    const mean = 22; // the image's mean: 10 x 2 + 2
    expect(run(grid(), 1, 0, 4, 'mean').map((row) => row.slice(0, 4))).to.deep.equal([0, 10, 20, 30, 40].map(() => [mean, mean, mean, mean]));
  });

  it('draws per row the crop, the flip, then the scale and the two shifts, from one seeded generator; shifts are integers in [-N, N]', () => {
    const augmentation = { scale: [0.5, 1] as [number, number], ratio: [0.75, 1.33] as [number, number], flipProbability: 0.5, rescale: [0.85, 1] as [number, number], translate: 4 };
    const draw = drawBatchAugmentation(200, 30, 40, augmentation, new Rng(3));
    const rng = new Rng(3);
    for (let r = 0; r < 200; r++) {
      const { flip } = drawAugmentation({ width: 40, height: 30 }, augmentation, rng);
      const expected = drawAffine([0.85, 1], 4, rng);
      expect(draw.flips[r]).to.equal(flip ? 1 : 0);
      expect(draw.affine!.scales[r]).to.equal(Math.fround(expected.scale));
      expect([draw.affine!.shifts[2 * r], draw.affine!.shifts[2 * r + 1]]).to.deep.equal([expected.dy, expected.dx]);
    }
    const shifts = Array.from(draw.affine!.shifts);
    expect(Math.min(...shifts)).to.equal(-4);
    expect(Math.max(...shifts)).to.equal(4);
    expect(shifts.every((s) => Number.isInteger(s))).to.equal(true);
    const scales = Array.from(draw.affine!.scales);
    expect(Math.min(...scales)).to.be.at.least(0.85);
    expect(Math.max(...scales)).to.be.at.most(1);
    // Without rescale and translate nothing more is drawn: the boxes are those of the plain augmentation.
    const plain = drawBatchAugmentation(5, 30, 40, { scale: [0.5, 1], ratio: [0.75, 1.33], flipProbability: 0.5 }, new Rng(3));
    expect(plain.affine).to.equal(undefined);
  });

  it('config: defaults (translate 0, fill black) and one clear error per invalid field', async () => {
    const base = { data: { dataset: 'folder:data/default' }, model: { kind: 'mlp', inputDim: 784, embeddingDim: 4 }, loss: { name: 'ephn' }, sampler: { groupSize: 4, batchSize: 16 }, optimizer: { learningRate: 0.01 }, epochs: 1, out: 'x' };
    const withAugmentation = (augmentation: Record<string, unknown>): unknown => ({ ...base, data: { ...base.data, augmentation } });
    expect(parseTrainConfig(withAugmentation({ rescale: [0.85, 1] }), 'a.json').data.augmentation).to.deep.include({ rescale: [0.85, 1], translate: 0, fill: 'black' });
    await expectDmlError(() => parseTrainConfig(withAugmentation({ translate: 1.5 }), 'a.json'), 'E_ARG', /^a\.json: data\.augmentation\.translate: /);
    await expectDmlError(() => parseTrainConfig(withAugmentation({ fill: 'grey' }), 'a.json'), 'E_ARG', /^a\.json: data\.augmentation\.fill: /);
    await expectDmlError(() => parseTrainConfig(withAugmentation({ rescale: [0, 1] }), 'a.json'), 'E_ARG', /^a\.json: data\.augmentation\.rescale\.0: /);
    await expectDmlError(() => parseTrainConfig(withAugmentation({ shear: 3 }), 'a.json'), 'E_ARG', /^a\.json: data\.augmentation: .*shear/);
    await expectDmlError(
      () => validateBatchAugmentation({ scale: [1, 1], ratio: [1, 1], flipProbability: 0, rescale: [1, 0.5] }, 'data.augmentation'),
      'E_ARG',
      /^Expected \[min, max\] with 0 < min <= max \(finite\) for data\.augmentation\.rescale but received .*1, 0\.5/,
    );
    await expectDmlError(() => validateBatchAugmentation({ scale: [1, 1], ratio: [1, 1], flipProbability: 0, translate: -1 }, 'data.augmentation'), 'E_ARG', /^Expected a non-negative integer \(pixels\) for data\.augmentation\.translate but received -1$/);
  });
});
