import { expect } from 'chai';
import { DmlError } from '../../lib/errors.js';
import { toTensor } from '../../lib/image/to-tensor.js';
import type { RawImage } from '../../lib/image/raw-image.js';

// 2 rows x 3 columns of RGB: pixel (x, y) = [10y + x, 100 + 10y + x, 255 - (10y + x)]
const rgb: RawImage = {
  data: Buffer.from([0, 100, 255, 1, 101, 254, 2, 102, 253, 10, 110, 245, 11, 111, 244, 12, 112, 243]),
  width: 3,
  height: 2,
  channels: 3,
};
const mean = [0.485, 0.456, 0.406];
const std = [0.229, 0.224, 0.225];
const norm = (v: number, c: number): number => Math.fround((v / 255 - mean[c]!) / std[c]!);

describe('toTensor', () => {
  it('writes NCHW planes with (x/255 - mean[c]) / std[c], exactly as float32', () => {
    const out = new Float32Array(18);
    toTensor(rgb, { mean, std, layout: 'NCHW' }, out);
    const expected: number[] = [];
    for (let c = 0; c < 3; c++) for (let y = 0; y < 2; y++) for (let x = 0; x < 3; x++) expected.push(norm(rgb.data[(y * 3 + x) * 3 + c]!, c));
    expect([...out]).to.deep.equal(expected);
    expect(out[0]).to.equal(Math.fround((0 - 0.485) / 0.229)); // R of (0, 0)
    expect(out[6 + 4]).to.equal(Math.fround((111 / 255 - 0.456) / 0.224)); // G of (1, 1)
  });

  it('writes NHWC in pixel order at an offset, leaving the rest of the array alone', () => {
    const out = new Float32Array(20).fill(-7);
    toTensor(rgb, { mean, std, layout: 'NHWC' }, out, 1);
    expect(out[0]).to.equal(-7);
    expect(out[19]).to.equal(-7);
    expect([...out.subarray(1, 19)]).to.deep.equal([...rgb.data].map((v, i) => norm(v, i % 3)));
  });

  it('handles one grey channel with mean 0 and std 1 as x / 255', () => {
    const grey: RawImage = { data: Buffer.from([0, 51, 255, 128]), width: 2, height: 2, channels: 1 };
    const out = new Float32Array(4);
    toTensor(grey, { mean: [0], std: [1], layout: 'NCHW' }, out);
    expect([...out]).to.deep.equal([0, 0.2, 1, 128 / 255].map(Math.fround));
  });

  it('rejects a short output array, bad mean/std and a mismatched buffer, naming the parameter', () => {
    const call = (fn: () => void): string => {
      try {
        fn();
      } catch (err) {
        expect(err).to.be.instanceOf(DmlError);
        expect((err as DmlError).code).to.equal('E_ARG');
        return (err as DmlError).message;
      }
      throw new Error('expected a throw');
    };
    expect(call(() => toTensor(rgb, { mean, std, layout: 'NCHW' }, new Float32Array(18), 1))).to.equal(
      'Expected a non-negative integer with offset + 18 <= out.length = 18 for offset but received 1',
    );
    expect(call(() => toTensor(rgb, { mean: [0], std, layout: 'NCHW' }, new Float32Array(18)))).to.equal(
      'Expected an array of 3 numbers (one per channel) for normalisation.mean but received array of length 1',
    );
    expect(call(() => toTensor(rgb, { mean, std: [1, 0, 1], layout: 'NCHW' }, new Float32Array(18)))).to.equal(
      'Expected a positive number of float32 range, in [1.2e-38, 3.4e38] for normalisation.std[1] but received 0',
    );
    expect(call(() => toTensor({ ...rgb, width: 4 }, { mean, std, layout: 'NCHW' }, new Float32Array(24)))).to.match(
      /^Expected 24 bytes \(4x2x3\) for image.data but received Buffer of length 18$/,
    );
  });
});
