import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { broadcastPattern, ORT_ELEMENTWISE_MIN_SIZE } from '../../../../lib/engine/tfjs/ort-cpu/elementwise-kernels.js';
import { RELU_GRAD_KERNEL } from '../../../../lib/engine/tfjs/ops/relu-gradient.js';
import { Rng } from '../../../../lib/util/rng.js';
import { compareBackends, random, useOrtCpuBackend } from '../../../helpers/compare-backends.js';

/**
 * The ort-cpu backend's JavaScript fast paths (element-wise, the fused ReLU gradient, Sum, Mean, Tile,
 * FusedBatchNorm, max pooling) must compute exactly
 * what tfjs's cpu kernels compute: every case here is compared bit for bit (difference 0), gradients
 * included, with NaN, ties and padding in the inputs.
 */
describe('ort-cpu element-wise, reduction, batch-norm and pooling fast paths (bit-identical to tfjs cpu)', function () {
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
    expect(broadcastPattern([2, 3, 4, 5], [2, 1, 1, 5])).to.deep.equal({ kind: 'middle', repeat: 12, inner: 5 });
    expect(broadcastPattern([2, 3, 4, 5], [2, 3, 1, 5])).to.deep.equal({ kind: 'middle', repeat: 4, inner: 5 });
    expect(broadcastPattern([2, 1, 4, 5], [2, 1, 1, 5])).to.deep.equal({ kind: 'middle', repeat: 4, inner: 5 });
    expect(broadcastPattern([1, 4, 5], [1, 5])).to.deep.equal({ kind: 'row', inner: 5 });
    expect(broadcastPattern([2, 3, 4, 5], [2, 1, 4, 1])).to.equal(null);
    expect(broadcastPattern([3, 4], [2, 3, 4])).to.equal(null);
  });

  const shapes: Array<[string, number[], number[]]> = [
    ['same shape', [6, 7], [6, 7]],
    ['scalar right', [6, 7], []],
    ['scalar left', [], [6, 7]],
    ['row right', [6, 7], [7]],
    ['row left', [7], [6, 7]],
    ['column right', [6, 7], [6, 1]],
    ['column left', [6, 1], [6, 7]],
    ['middle right ([n, 1, 1, c], a global-average-pooling gradient)', [3, 4, 5, 6], [3, 1, 1, 6]],
    ['middle left', [3, 1, 1, 6], [3, 4, 5, 6]],
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

  for (const [name, aShape, bShape] of [
    ['same shape', [4, 260, 260], [4, 260, 260]],
    ['row ([n, h, w, c] by [c])', [32, 32, 32, 8], [8]],
    ['middle ([n, h, w, c] by [n, 1, 1, c])', [32, 32, 32, 8], [32, 1, 1, 8]],
    ['scalar on the left', [], [4, 260, 260]],
    ['general broadcast', [16, 1, 64, 8], [1, 64, 1, 8]],
  ] as Array<[string, number[], number[]]>) {
    it(`add, sub, mul, div (and square) of ${ORT_ELEMENTWISE_MIN_SIZE}+ elements (onnxruntime): ${name}, with subnormals, infinities, NaN and zeros of both signs`, async () => {
      const rng = new Rng(13);
      const specials = [0, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e-40, -1e-42, 3e38, -3e38, 1e-20];
      const filled = (shape: number[]): tf.Tensor => {
        const size = shape.reduce((p, d) => p * d, 1);
        return tf.tensor(Float32Array.from({ length: size }, (_, i) => (i % 97 < specials.length ? (specials[i % 97] as number) : rng.nextGaussian() * 10 ** ((i % 7) - 3))), shape);
      };
      const a = filled(aShape);
      const b = filled(bShape);
      expect(tf.util.sizeFromShape(tf.backend_util.assertAndGetBroadcastShape(aShape, bShape))).to.be.at.least(ORT_ELEMENTWISE_MIN_SIZE);
      const { maxRel } = await compareBackends(() => [tf.add(a, b), tf.sub(a, b), tf.sub(b, a), tf.mul(a, b), tf.div(a, b), tf.div(b, a), tf.square(a), tf.square(b)]);
      expect(maxRel).to.equal(0);
    });
  }

  it('relu, its gradient (Step) and square, with NaN of both signs, -0, exact zeros, subnormals and infinities', async () => {
    const special = new Float32Array([Number.NaN, -0, 0, -1.5, 2.25, 1e-30, -1e-30, 1e-45, -1e-45, 3.4e38, -3.4e38, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0]);
    new Int32Array(special.buffer)[13] = 0xffc00000 | 0; // a negative NaN (sign bit set)
    const x = tf.tensor(special);
    const mixed = random(new Rng(8), [64, 97]); // 4096+ elements: outputs allocated without zero-fill
    const { maxRel } = await compareBackends(() => [
      ...[x, mixed].flatMap((t) => [tf.relu(t), tf.step(t), tf.step(t, 0.3), tf.step(t, -2), tf.square(t), tf.grad((u: tf.Tensor) => tf.sum(tf.relu(u)))(t)]),
    ]);
    expect(maxRel).to.equal(0);
    // The bit patterns too: +0 (never -0) for negative inputs and -0, as Math.max(0, x) gives.
    await tf.setBackend('ort-cpu');
    const relu = tf.relu(x).dataSync();
    expect(Array.from(relu).map((v) => (Object.is(v, -0) ? '-0' : String(v)))).to.deep.equal(['NaN', '0', '0', '0', '2.25', String(Math.fround(1e-30)), '0', String(Math.fround(1e-45)), '0', String(Math.fround(3.4e38)), '0', 'Infinity', '0', 'NaN']);
  });

  it('the fused ReLU gradient (DmlReluGrad) gives what Step then Multiply give for every pairing of special x and dy', async () => {
    const special = [Number.NaN, -0, 0, -1.5, 2.25, 1e-30, -1e-30, 1e-45, -1e-45, 3.4e38, -3.4e38, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
    const n = special.length;
    const x = tf.tensor(Float32Array.from({ length: n * n }, (_, i) => special[Math.floor(i / n)] as number));
    const dy = tf.tensor(Float32Array.from({ length: n * n }, (_, i) => special[i % n] as number));
    const mixed = random(new Rng(21), [64, 97]);
    const mixedDy = random(new Rng(22), [64, 97]);
    const reluGrad = (t: tf.Tensor, upstream: tf.Tensor): tf.Tensor => tf.grad((u: tf.Tensor) => tf.relu(u))(t, upstream);
    const { maxRel } = await compareBackends(() => [reluGrad(x, dy), reluGrad(mixed, mixedDy)]);
    expect(maxRel).to.equal(0);
    const kernelsOn = async (backend: string): Promise<string[]> => {
      await tf.setBackend(backend);
      return (await tf.profile(() => reluGrad(mixed, mixedDy))).kernels.map((k) => k.name);
    };
    expect(await kernelsOn('ort-cpu')).to.include(RELU_GRAD_KERNEL).and.not.include('Step');
    expect(await kernelsOn('cpu')).to.include.members(['Step', 'Multiply']).and.not.include(RELU_GRAD_KERNEL);
    await tf.setBackend('ort-cpu');
  });

  for (const [name, shape, axes, keepDims] of [
    ['leading axes (bias gradient)', [4, 5, 6, 3], [0, 1, 2], false],
    ['leading axis, keepDims', [7, 9], [0], true],
    ['trailing axes', [4, 5, 6], [1, 2], false],
    ['all axes', [4, 5], [0, 1], true],
    ['a middle axis', [4, 5, 6], [1], false],
    ['the middle axes of NHWC (global average pooling)', [3, 5, 6, 4], [1, 2], false],
    ['the middle axes, keepDims', [3, 5, 6, 4], [1, 2], true],
    ['negative axes', [3, 5, 6, 4], [-3, -2], false],
    ['leading axes of a map larger than one summation block (blocks of rows, a partial last block)', [37, 29, 31, 8], [0, 1, 2], false],
    ['the middle axes of a map larger than one summation block', [3, 70, 90, 5], [1, 2], true],
    ['axes out of order (cpu fallback: the cpu kernel sums in the given order)', [3, 5, 6, 4], [2, 1], false],
    ['non-contiguous axes (cpu fallback)', [3, 5, 6, 4], [0, 2], false],
  ] as Array<[string, number[], number[], boolean]>) {
    it(`sum and mean over ${name}, with gradients`, async () => {
      const x = random(new Rng(4), shape);
      const { maxRel } = await compareBackends(() => [
        tf.sum(x, axes, keepDims),
        tf.mean(x, axes, keepDims),
        tf.grad((t: tf.Tensor) => tf.sum(tf.square(tf.mean(t, axes, keepDims))))(x),
        tf.grad((t: tf.Tensor) => tf.sum(tf.square(tf.sum(t, axes, keepDims))))(x),
      ]);
      expect(maxRel).to.equal(0);
    });
  }

  it('mean of values that round differently divided first (fround(x / n) summed, as the cpu Mean does)', async () => {
    // 3 does not divide these exactly, so summing then dividing would differ in the last bit somewhere.
    const x = tf.tensor(Float32Array.from({ length: 2 * 3 * 7 }, (_, i) => 1 / (i + 1) + i * 1e3), [2, 3, 7]);
    const { maxRel } = await compareBackends(() => [tf.mean(x, [1]), tf.mean(x, [0, 1]), tf.mean(x, [2]), tf.mean(x)]);
    expect(maxRel).to.equal(0);
  });

  for (const [name, shape, reps] of [
    ['per-channel values over N, H, W (the batch-norm gradient)', [1, 1, 1, 6], [3, 4, 5, 1]],
    ['every axis, rank 3', [2, 3, 2], [2, 3, 4]],
    ['a single element block', [4, 1], [1, 7]],
    ['nothing (all reps 1)', [2, 3], [1, 1]],
    ['rank 1', [5], [3]],
  ] as Array<[string, number[], number[]]>) {
    it(`tile: ${name}, with its gradient`, async () => {
      const x = random(new Rng(9), shape);
      const { maxRel } = await compareBackends(() => [tf.tile(x, reps), tf.grad((t: tf.Tensor) => tf.sum(tf.square(tf.tile(t, reps))))(x)]);
      expect(maxRel).to.equal(0);
    });
  }

  // tfjs's FusedBatchNorm gradient handles rank-1 parameters only, and needs scale and offset given.
  for (const [name, xShape, paramShape, withScaleAndOffset, epsilon, gradients] of [
    ['NHWC with per-channel scale and offset', [3, 5, 4, 6], [6], true, 1e-3, true],
    ['2-D input (a Dense layer)', [8, 7], [7], true, 0.01, true],
    ['a map larger than one block of rows', [8, 40, 40, 12], [12], true, 1e-3, true],
    ['rank-4 parameters [1, 1, 1, c]', [2, 4, 4, 5], [1, 1, 1, 5], true, 1e-5, false],
    ['no scale, no offset', [3, 5, 4, 6], [6], false, 1e-3, false],
    ['scalar-sized parameters', [3, 4, 5], [1], true, 1e-3, false],
    ['parameters of neither size (cpu fallback)', [3, 4, 5], [4, 5], true, 1e-3, false],
  ] as Array<[string, number[], number[], boolean, number, boolean]>) {
    it(`batchNorm (FusedBatchNorm): ${name}${gradients ? ', with its gradients' : ''}`, async () => {
      const rng = new Rng(10);
      const x = random(rng, xShape);
      const mean = random(rng, paramShape);
      const variance = tf.add(tf.abs(random(rng, paramShape)), 0.1);
      const scale = random(rng, paramShape);
      const offset = random(rng, paramShape);
      const bn = (t: tf.Tensor, m: tf.Tensor, v: tf.Tensor, s: tf.Tensor, o: tf.Tensor): tf.Tensor =>
        tf.batchNorm(t, m, v, withScaleAndOffset ? o : undefined, withScaleAndOffset ? s : undefined, epsilon);
      const { maxRel } = await compareBackends(() => [
        bn(x, mean, variance, scale, offset),
        ...(gradients ? tf.grads((t: tf.Tensor, m: tf.Tensor, v: tf.Tensor, s: tf.Tensor, o: tf.Tensor) => tf.sum(tf.square(bn(t, m, v, s, o))))([x, mean, variance, scale, offset]) : []),
      ]);
      expect(maxRel).to.equal(0);
    });
  }

  it('a BatchNormalization layer in training mode (moments, FusedBatchNorm and every gradient piece)', async () => {
    const x = random(new Rng(11), [4, 6, 5, 3]);
    const layer = tf.layers.batchNormalization({ name: 'bn_parity' });
    layer.build([null, 6, 5, 3]);
    const { maxRel } = await compareBackends(() => {
      const weights = layer.trainableWeights.map((w) => w.read() as tf.Variable);
      const { value, grads } = tf.variableGrads(() => tf.sum(tf.square(tf.mul(layer.apply(x, { training: true }) as tf.Tensor, tf.range(0, 3)))) as tf.Scalar, weights);
      return [value, ...weights.map((w) => grads[w.name] as tf.Tensor)];
    });
    expect(maxRel).to.equal(0);
  });

  for (const [name, shape, size, strides, pad] of [
    ['2x2 stride 2', [2, 8, 8, 3], 2, 2, 'valid'],
    ['2x2 stride 3 (windows with gaps)', [2, 8, 8, 3], 2, 3, 'valid'],
    ['3x3 stride 2 same (overlapping windows, padding)', [2, 9, 7, 2], 3, 2, 'same'],
    ['3x3 stride 1 same', [1, 5, 5, 4], 3, 1, 'same'],
    ['2x3 stride (1, 2) valid', [2, 6, 7, 2], [2, 3], [1, 2], 'valid'],
    ['2x2 stride 2 on a larger map (4096+ outputs)', [4, 28, 28, 16], 2, 2, 'valid'],
  ] as Array<[string, number[], number | [number, number], number | [number, number], 'same' | 'valid']>) {
    it(`maxPool ${name} and its gradient, with ties and NaN`, async () => {
      const rng = new Rng(5);
      const values = Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => (i % 7 === 0 ? 1 : i % 11 === 0 ? Number.NaN : Math.round(rng.nextGaussian() * 2)));
      const x = tf.tensor4d(values, shape as [number, number, number, number]);
      const pool = (t: tf.Tensor): tf.Tensor => tf.maxPool(t as tf.Tensor4D, size, strides, pad);
      const { maxRel } = await compareBackends(() => {
        // Zeros of both signs in dy: a position's gradient is a sum starting at +0, so -0 becomes +0.
        const dy = tf.tensor(
          Float32Array.from({ length: pool(x).size }, (_, i) => (((i * 37) % 13) - 6 === 0 && i % 2 === 1 ? -0 : ((i * 37) % 13) - 6)),
          pool(x).shape,
        );
        return [pool(x), tf.grad((t: tf.Tensor) => tf.sum(tf.mul(pool(t), dy)))(x)];
      });
      expect(maxRel).to.equal(0);
    });
  }

  it('maxPoolGrad given an output MaxPool did not produce (no cached positions) searches the windows itself', async () => {
    const rng = new Rng(12);
    const x = random(rng, [2, 6, 6, 3]);
    const dy = random(rng, [2, 3, 3, 3]);
    const { maxRel } = await compareBackends(() => {
      // add(…, 0) gives the same values under a new data id, so MaxPool's cached positions do not apply.
      const output = tf.add(tf.maxPool(x as tf.Tensor4D, 2, 2, 'valid'), 0);
      const attrs = { filterSize: 2, strides: 2, pad: 'valid' } as unknown as tf.NamedAttrMap;
      return [tf.engine().runKernel('MaxPoolGrad', { dy, input: x, output }, attrs) as tf.Tensor];
    });
    expect(maxRel).to.equal(0);
  });
});
