import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { ORT_ELEMENTWISE_MIN_SIZE } from '../../../../lib/engine/tfjs/ort-cpu/elementwise-kernels.js';
import { Rng } from '../../../../lib/util/rng.js';
import { compareBackends, random, useOrtCpuBackend } from '../../../helpers/compare-backends.js';

/**
 * tfjs's cpu `Cast` from bool or int32 to float32 keeps the input's Uint8Array / Int32Array under the
 * float32 dtype. The gradient of a global max is such a tensor times dy; from 2^18 elements on the
 * multiplication runs in onnxruntime, which refused the Uint8Array ("A float32 tensor's data must be
 * type of function Float32Array()") and stopped training with a global max pool at batch 128 over
 * 8x8x128. Every ort-cpu kernel must read such tensors as float32 values, bit-identical to tfjs cpu.
 */
describe('ort-cpu kernels on float32 tensors cast from bool or int32 (global max gradient)', function () {
  this.timeout(120_000);
  useOrtCpuBackend();

  it(`the threshold of onnxruntime's element-wise kernels is 2^18 elements (the sizes below straddle it)`, () => {
    expect(ORT_ELEMENTWISE_MIN_SIZE).to.equal(2 ** 18);
  });

  for (const shape of [
    [2 ** 18 - 1],
    [2 ** 18],
    [2 ** 18 + 1],
    [64, 8, 8, 64],
    [128, 8, 8, 128],
  ]) {
    const size = shape.reduce((p, d) => p * d, 1);
    it(`the gradient of a global max and min over ${size} elements [${shape.join(', ')}] equals tfjs cpu's`, async () => {
      const rng = new Rng(7);
      const x = random(rng, shape);
      // tfjs-backbone's pooling "max" (GlobalMaxPooling2D) reduces over height and width; a plain global max over all.
      const axes = shape.length === 4 ? [1, 2] : undefined;
      const weights = (t: tf.Tensor): tf.Tensor => tf.mul(t, tf.reshape(tf.add(tf.mod(tf.range(0, t.size), 7), 1), t.shape));
      const { maxRel } = await compareBackends(() => [
        tf.grad((t: tf.Tensor) => tf.sum(weights(tf.max(t, axes))))(x),
        tf.grad((t: tf.Tensor) => tf.sum(weights(tf.min(t, axes))))(x),
      ]);
      expect(maxRel).to.equal(0);
    });
  }

  it('element-wise, unary, reduction, matrix product and pooling kernels read a cast bool or int32 tensor as its float32 values', async () => {
    const rng = new Rng(11);
    const big = [4, 256, 256, 2]; // 2^19 elements: onnxruntime's element-wise path
    const x = random(rng, big);
    const a = random(rng, [64, 48]);
    const { maxRel } = await compareBackends(() => {
      const mask = tf.cast(tf.greater(x, 0), 'float32');
      const ints = tf.cast(tf.cast(tf.mul(x, 3), 'int32'), 'float32');
      const smallMask = tf.cast(tf.greater(a, 0.2), 'float32');
      return [
        tf.mul(mask, x),
        tf.add(ints, x),
        tf.sub(x, mask),
        tf.div(x, tf.add(mask, 1)),
        tf.square(ints),
        tf.relu(ints),
        tf.leakyRelu(ints, 0.3),
        tf.step(ints),
        tf.relu(smallMask),
        tf.sum(mask, [1, 2]),
        tf.mean(ints, [0]),
        tf.maxPool(ints as tf.Tensor4D, 2, 2, 'valid'),
        tf.grad((t: tf.Tensor) => tf.sum(tf.mul(tf.relu(t), x)))(ints),
        tf.matMul(smallMask, a, true, false),
        tf.matMul(a, smallMask, false, true),
        tf.conv2d(mask as tf.Tensor4D, tf.ones([3, 3, 2, 4]) as tf.Tensor4D, 1, 'same'),
      ];
    });
    expect(maxRel).to.be.below(1e-6);
  });
});
