import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { applyBatchAugmentation, drawBatchAugmentation } from '../../lib/train/batch-augmentation.js';
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
