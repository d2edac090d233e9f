import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { broadcastPattern } from '../../../lib/train/ort-backend/elementwise-kernels.js';
import { Rng } from '../../../lib/util/rng.js';
import { compareBackends, random, useOrtCpuBackend } from '../../helpers/compare-backends.js';

/**
 * The ort-cpu backend's JavaScript fast paths (element-wise, Sum, max pooling) must compute exactly
 * what tfjs's cpu kernels compute: every case here is compared bit for bit (difference 0), gradients
 * included, with NaN, ties and padding in the inputs.
 */
describe('ort-cpu element-wise, reduction and pooling fast paths (bit-identical to tfjs cpu)', function () {
  this.timeout(60_000);
  useOrtCpuBackend();

  it('classifies broadcast patterns', () => {
    expect(broadcastPattern([4, 5], [4, 5])).to.deep.equal({ kind: 'same' });
    expect(broadcastPattern([4, 5], [1])).to.deep.equal({ kind: 'scalar' });
    expect(broadcastPattern([4, 5], [])).to.deep.equal({ kind: 'scalar' });
    expect(broadcastPattern([4, 5], [5])).to.deep.equal({ kind: 'row', inner: 5 });
    expect(broadcastPattern([3, 4, 5], [1, 4, 5])).to.deep.equal({ kind: 'row', inner: 20 });
    expect(broadcastPattern([4, 5], [4, 1])).to.deep.equal({ kind: 'column', inner: 5 });
    expect(broadcastPattern([3, 4, 5], [3, 1, 1])).to.deep.equal({ kind: 'column', inner: 20 });
    expect(broadcastPattern([3, 4, 5], [1, 4, 1])).to.equal(null);
  });

  const shapes: Array<[string, number[], number[]]> = [
    ['same shape', [6, 7], [6, 7]],
    ['scalar right', [6, 7], []],
    ['scalar left', [], [6, 7]],
    ['row right', [6, 7], [7]],
    ['row left', [7], [6, 7]],
    ['column right', [6, 7], [6, 1]],
    ['column left', [6, 1], [6, 7]],
    ['general broadcast (cpu fallback)', [3, 1, 5], [1, 4, 1]],
  ];
  for (const [name, aShape, bShape] of shapes) {
    it(`add, sub, mul, div, squaredDifference: ${name}, with gradients`, async () => {
      const rng = new Rng(3);
      const a = random(rng, aShape);
      const b = tf.add(random(rng, bShape), 0.5);
      // tfjs has no broadcasting gradient for squaredDifference: its gradient is checked on equal shapes only.
      const ops = [tf.add, tf.sub, tf.mul, tf.div, ...(name === 'same shape' ? [tf.squaredDifference] : [])];
      const weighted = (t: tf.Tensor): tf.Tensor => tf.mul(t, tf.reshape(tf.mod(tf.range(0, t.size), 5), t.shape));
      const { maxRel } = await compareBackends(() => [
        tf.squaredDifference(a, b),
        ...ops.flatMap((op) => [op(a, b), ...tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(weighted(op(x, y))))([a, b])]),
      ]);
      expect(maxRel).to.equal(0);
    });
  }

  it('relu and its gradient (Step), with NaN, -0 and exact zeros', async () => {
    const x = tf.tensor([Number.NaN, -0, 0, -1.5, 2.25, 1e-30, -1e-30, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]);
    const { maxRel } = await compareBackends(() => [tf.relu(x), tf.step(x, 0.3), tf.grad((t: tf.Tensor) => tf.sum(tf.relu(t)))(x)]);
    expect(maxRel).to.equal(0);
  });

  for (const [name, shape, axes, keepDims] of [
    ['leading axes (bias gradient)', [4, 5, 6, 3], [0, 1, 2], false],
    ['leading axis, keepDims', [7, 9], [0], true],
    ['trailing axes', [4, 5, 6], [1, 2], false],
    ['all axes', [4, 5], [0, 1], true],
    ['a middle axis (cpu fallback)', [4, 5, 6], [1], false],
  ] as Array<[string, number[], number[], boolean]>) {
    it(`sum over ${name}`, async () => {
      const x = random(new Rng(4), shape);
      const { maxRel } = await compareBackends(() => [tf.sum(x, axes, keepDims)]);
      expect(maxRel).to.equal(0);
    });
  }

  for (const [name, shape, size, strides, pad] of [
    ['2x2 stride 2', [2, 8, 8, 3], 2, 2, 'valid'],
    ['3x3 stride 2 same (overlapping windows, padding)', [2, 9, 7, 2], 3, 2, 'same'],
    ['3x3 stride 1 same', [1, 5, 5, 4], 3, 1, 'same'],
    ['2x3 stride (1, 2) valid', [2, 6, 7, 2], [2, 3], [1, 2], 'valid'],
  ] as Array<[string, number[], number | [number, number], number | [number, number], 'same' | 'valid']>) {
    it(`maxPool ${name} and its gradient, with ties and NaN`, async () => {
      const rng = new Rng(5);
      const values = Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => (i % 7 === 0 ? 1 : i % 11 === 0 ? Number.NaN : Math.round(rng.nextGaussian() * 2)));
      const x = tf.tensor4d(values, shape as [number, number, number, number]);
      const pool = (t: tf.Tensor): tf.Tensor => tf.maxPool(t as tf.Tensor4D, size, strides, pad);
      const { maxRel } = await compareBackends(() => {
        const dy = tf.tensor(Float32Array.from({ length: pool(x).size }, (_, i) => ((i * 37) % 13) - 6), pool(x).shape);
        return [pool(x), tf.grad((t: tf.Tensor) => tf.sum(tf.mul(pool(t), dy)))(x)];
      });
      expect(maxRel).to.equal(0);
    });
  }
});
