/**
 * @file The normalisation graph (lib/onnx/normalization-graph.ts) run by onnxruntime's CPU provider
 * writes exactly toTensor's values, bit for bit, for every layout, channel count and rescale.
 */
import { expect } from 'chai';
import { normalizationGraph, NORMALIZATION_GRAPH_INPUT, NORMALIZATION_GRAPH_OUTPUT } from '../../lib/onnx/normalization-graph.js';
import type { Preprocessing } from '../../lib/image/preprocessing.js';
import { toTensor } from '../../lib/image/to-tensor.js';
import ort from '../../lib/onnx/ort.js';
import { Rng } from '../../lib/util/rng.js';
import { expectDmlErrorSync } from '../helpers/expect-dml-error.js';

const imagenet = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };

/** `count` random HWC images of `p`'s size, every byte value present. */
function randomPixels(p: Preprocessing, count: number): Uint8Array {
  const rng = new Rng(5);
  const pixels = Uint8Array.from({ length: count * p.height * p.width * p.channels }, () => Math.floor(rng.next() * 256));
  for (let v = 0; v < 256 && v < pixels.length; v++) pixels[v] = v;
  return pixels;
}

describe('onnx/normalization-graph', () => {
  const cases: Array<[string, Preprocessing]> = [
    ['NCHW RGB, ImageNet', { height: 7, width: 5, resizeShorter: 7, channels: 3, layout: 'NCHW', ...imagenet }],
    ['NHWC RGB, ImageNet', { height: 4, width: 6, resizeShorter: 6, channels: 3, layout: 'NHWC', ...imagenet }],
    ['NCHW grey, rescale 1 (pixel values as they are)', { height: 6, width: 6, resizeShorter: 6, channels: 1, layout: 'NCHW', mean: [0.5], std: [0.25], rescale: 1 }],
    ['NHWC RGB, mean 0.5 std 0.5', { height: 3, width: 9, resizeShorter: 3, channels: 3, layout: 'NHWC', mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] }],
  ];
  for (const [name, p] of cases) {
    it(`${name}: toTensor's values bit for bit, in the model's layout`, async () => {
      const count = 3;
      const per = p.height * p.width * p.channels;
      const pixels = randomPixels(p, count);
      const expected = new Float32Array(count * per);
      for (let i = 0; i < count; i++) {
        toTensor({ data: Buffer.from(pixels.buffer, i * per, per), width: p.width, height: p.height, channels: p.channels }, p, expected, i * per);
      }
      const session = await ort.InferenceSession.create(normalizationGraph(p));
      try {
        const out = (await session.run({ [NORMALIZATION_GRAPH_INPUT]: new ort.Tensor('uint8', pixels, [count, p.height, p.width, p.channels]) }))[NORMALIZATION_GRAPH_OUTPUT] as ort.Tensor;
        expect(out.type).to.equal('float32');
        expect(out.dims).to.deep.equal(p.layout === 'NCHW' ? [count, p.channels, p.height, p.width] : [count, p.height, p.width, p.channels]);
        expect(Buffer.from((out.data as Float32Array).buffer).equals(Buffer.from(expected.buffer))).to.equal(true);
      } finally {
        await session.release();
      }
    });
  }

  it('checks the preprocessing it is built for', () => {
    const p: Preprocessing = { height: 4, width: 4, resizeShorter: 4, channels: 3, layout: 'NCHW', mean: [0.5, 0.5], std: [0.5, 0.5, 0.5] };
    expectDmlErrorSync(() => normalizationGraph(p), 'E_ARG', /mean/);
  });
});
