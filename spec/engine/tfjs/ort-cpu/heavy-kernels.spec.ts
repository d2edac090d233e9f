import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { ORT_CPU_BLOCKED_ENV, type OrtKernelBackend } from '../../../../lib/engine/tfjs/ort-cpu/heavy-kernels.js';
import { Rng } from '../../../../lib/util/rng.js';
import { compareBackends, random, useOrtCpuBackend } from '../../../helpers/compare-backends.js';

/**
 * Every onnxruntime kernel of the ort-cpu backend against tfjs's cpu kernel of the same op on the same
 * random inputs, including the gradients (which exercise the backprop kernels), over strides,
 * dilations, paddings, transposes, broadcasting and fused activations.
 */
describe('ort-cpu heavy kernels (onnxruntime vs tfjs cpu)', function () {
  this.timeout(60_000);
  useOrtCpuBackend();

  const matMulCases: Array<[string, number[], number[], boolean, boolean]> = [
    ['2-D', [5, 7], [7, 3], false, false],
    ['2-D transposeA', [7, 5], [7, 3], true, false],
    ['2-D transposeB', [5, 7], [3, 7], false, true],
    ['2-D both', [7, 5], [3, 7], true, true],
    ['batched', [4, 5, 7], [4, 7, 3], false, false],
  ];
  for (const [name, aShape, bShape, ta, tb] of matMulCases) {
    it(`matMul ${name} and its gradients`, async () => {
      const rng = new Rng(1);
      const a = random(rng, aShape);
      const b = random(rng, bShape);
      const { maxRel } = await compareBackends(() => {
        const g = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.square(tf.matMul(x, y, ta, tb))));
        return [tf.matMul(a, b, ta, tb), ...g([a, b])];
      });
      expect(maxRel).to.be.below(1e-5);
    });
  }

  for (const activation of ['linear', 'relu', 'relu6', 'elu', 'sigmoid', 'leakyrelu', 'prelu'] as const) {
    it(`fused matMul with bias and ${activation}, and its gradients`, async () => {
      const rng = new Rng(2);
      const a = random(rng, [6, 8]);
      const b = random(rng, [8, 4]);
      const bias = random(rng, [4]);
      const prelu = random(rng, [4]);
      const { maxRel } = await compareBackends(() => {
        const f = (x: tf.Tensor, y: tf.Tensor, z: tf.Tensor): tf.Tensor =>
          tf.fused.matMul({ a: x as tf.Tensor2D, b: y as tf.Tensor2D, bias: z, activation, ...(activation === 'prelu' ? { preluActivationWeights: prelu } : {}), leakyreluAlpha: 0.3 });
        return [f(a, b, bias), ...tf.grads((x: tf.Tensor, y: tf.Tensor, z: tf.Tensor) => tf.sum(tf.square(f(x, y, z))))([a, b, bias])];
      });
      expect(maxRel).to.be.below(1e-5);
    });
  }

  const convCases: Array<[string, number[], number[], [number, number], 'same' | 'valid' | number, [number, number]]> = [
    ['3x3 same', [2, 9, 9, 3], [3, 3, 3, 4], [1, 1], 'same', [1, 1]],
    ['3x3 valid stride 2', [2, 9, 8, 3], [3, 3, 3, 4], [2, 2], 'valid', [1, 1]],
    ['5x3 same stride 2 (asymmetric padding)', [2, 10, 7, 2], [5, 3, 2, 3], [2, 2], 'same', [1, 1]],
    ['1x1 stride (1, 2)', [3, 6, 6, 5], [1, 1, 5, 2], [1, 2], 'valid', [1, 1]],
    ['explicit pad 1', [2, 7, 7, 2], [3, 3, 2, 3], [1, 1], 1, [1, 1]],
    ['3x3 valid stride 1', [3, 8, 7, 4], [3, 3, 4, 5], [1, 1], 'valid', [1, 1]],
    ['3x3 same stride 2, even size (padding only below and right)', [3, 16, 16, 3], [3, 3, 3, 8], [2, 2], 'same', [1, 1]],
    ['3x3 same stride 2, odd size', [2, 15, 13, 4], [3, 3, 4, 6], [2, 2], 'same', [1, 1]],
    ['2x2 valid stride 2 (non-overlapping taps)', [4, 8, 10, 3], [2, 2, 3, 4], [2, 2], 'valid', [1, 1]],
    ['1x1 same stride 1, one input channel', [5, 6, 6, 1], [1, 1, 1, 7], [1, 1], 'same', [1, 1]],
    ['3x3 same stride 1, one input channel', [3, 9, 9, 1], [3, 3, 1, 12], [1, 1], 'same', [1, 1]],
    ['3x3 same stride 2 on RGB, even size', [3, 16, 16, 3], [3, 3, 3, 32], [2, 2], 'same', [1, 1]],
    ['3x3 valid stride 2, odd size', [2, 11, 9, 2], [3, 3, 2, 18], [2, 2], 'valid', [1, 1]],
  ];
  for (const [name, xShape, wShape, strides, pad] of convCases) {
    it(`conv2d ${name} and its gradients (backprop input and filter)`, async () => {
      const rng = new Rng(3);
      const x = random(rng, xShape);
      const w = random(rng, wShape);
      const conv = (a: tf.Tensor, b: tf.Tensor): tf.Tensor => tf.conv2d(a as tf.Tensor4D, b as tf.Tensor4D, strides, pad);
      const { maxRel } = await compareBackends(() => [conv(x, w), ...tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.square(conv(a, b))))([x, w])]);
      expect(maxRel).to.be.below(1e-5);
    });
  }

  it('conv2d gradients on the blocked kernels: the input gradient in phases, a filter gradient whose im2col patches exceed 4M elements', async () => {
    const rng = new Rng(8);
    const x = random(rng, [16, 32, 32, 32]);
    const w = random(rng, [3, 3, 32, 2]);
    const conv = (a: tf.Tensor, b: tf.Tensor): tf.Tensor => tf.conv2d(a as tf.Tensor4D, b as tf.Tensor4D, 1, 'same');
    const { maxRel } = await compareBackends(() => [conv(x, w), ...tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.square(conv(a, b))))([x, w])]);
    expect(maxRel).to.be.below(1e-5);
    const signatures = (tf.backend() as unknown as OrtKernelBackend).runtime.cachedSignatures;
    if (process.arch === 'x64') {
      for (const op of ['Conv2D', 'Conv2DBackpropInput', 'Conv2DBackpropFilter']) {
        expect(signatures.some((s) => s.startsWith(`${op}|blocked`) && s.includes('16x32x32'))).to.equal(true, `${op} on the blocked kernels`);
      }
    }
  });

  it(`conv2d and its gradients on the NCHW graphs with ${ORT_CPU_BLOCKED_ENV}=0 (the path of processors without blocked kernels)`, async () => {
    const rng = new Rng(12);
    const x = random(rng, [16, 32, 32, 32]);
    const w = random(rng, [3, 3, 32, 2]);
    const conv = (a: tf.Tensor, b: tf.Tensor): tf.Tensor => tf.conv2d(a as tf.Tensor4D, b as tf.Tensor4D, 2, 'same');
    const before = process.env[ORT_CPU_BLOCKED_ENV];
    process.env[ORT_CPU_BLOCKED_ENV] = '0';
    try {
      const { maxRel } = await compareBackends(() => [conv(x, w), ...tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.square(conv(a, b))))([x, w])]);
      expect(maxRel).to.be.below(1e-5);
    } finally {
      if (before === undefined) delete process.env[ORT_CPU_BLOCKED_ENV];
      else process.env[ORT_CPU_BLOCKED_ENV] = before;
    }
    const signatures = (tf.backend() as unknown as OrtKernelBackend).runtime.cachedSignatures.filter((s) => s.includes('16x32x32x32') || s.includes('16x16x16x2'));
    for (const op of ['Conv2D', 'Conv2DBackpropInput', 'Conv2DBackpropFilter']) {
      expect(signatures.some((s) => s.startsWith(`${op}|nchw|`)), `${op} on the NCHW graph`).to.equal(true);
    }
  });

  it('batched matMul with a broadcast batch dimension and transposeB (forward; tfjs has no gradient for it)', async () => {
    const rng = new Rng(7);
    const a = random(rng, [4, 5, 7]);
    const b = random(rng, [1, 3, 7]);
    const { maxRel } = await compareBackends(() => [tf.matMul(a, b, false, true)]);
    expect(maxRel).to.be.below(1e-5);
  });

  it('conv2d with dilation 2 (forward)', async () => {
    const rng = new Rng(4);
    const x = random(rng, [2, 11, 11, 3]);
    const w = random(rng, [3, 3, 3, 2]);
    const { maxRel } = await compareBackends(() => [tf.conv2d(x as tf.Tensor4D, w as tf.Tensor4D, 1, 'same', 'NHWC', 2)]);
    expect(maxRel).to.be.below(1e-5);
  });

  for (const [activation, channels] of [['relu', 4], ['elu', 4], ['prelu', 4], ['relu', 27], ['prelu', 27]] as const) {
    it(`fused conv2d with bias and ${activation}, ${channels} filters, and its gradients`, async () => {
      const rng = new Rng(5);
      const x = random(rng, [2, 8, 8, 3]);
      const w = random(rng, [3, 3, 3, channels]);
      const bias = random(rng, [channels]);
      const prelu = random(rng, [channels]);
      const f = (a: tf.Tensor, b: tf.Tensor, c: tf.Tensor): tf.Tensor =>
        tf.fused.conv2d({ x: a as tf.Tensor4D, filter: b as tf.Tensor4D, strides: 1, pad: 'same', bias: c, activation, ...(activation === 'prelu' ? { preluActivationWeights: prelu } : {}) });
      const { maxRel } = await compareBackends(() => [f(x, w, bias), ...tf.grads((a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) => tf.sum(tf.square(f(a, b, c))))([x, w, bias])]);
      expect(maxRel).to.be.below(1e-5);
    });
  }

  const depthwiseCases: Array<[string, number[], number[], [number, number], 'same' | 'valid', [number, number]]> = [
    ['3x3 same, multiplier 1', [2, 8, 8, 3], [3, 3, 3, 1], [1, 1], 'same', [1, 1]],
    ['3x3 valid stride 2, multiplier 2', [2, 9, 9, 3], [3, 3, 3, 2], [2, 2], 'valid', [1, 1]],
    ['5x5 same stride 2', [1, 10, 10, 4], [5, 5, 4, 1], [2, 2], 'same', [1, 1]],
  ];
  for (const [name, xShape, wShape, strides, pad] of depthwiseCases) {
    it(`depthwise conv2d ${name} and its gradients`, async () => {
      const rng = new Rng(6);
      const x = random(rng, xShape);
      const w = random(rng, wShape);
      const conv = (a: tf.Tensor, b: tf.Tensor): tf.Tensor => tf.depthwiseConv2d(a as tf.Tensor4D, b as tf.Tensor4D, strides, pad);
      const { maxRel } = await compareBackends(() => [conv(x, w), ...tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.square(conv(a, b))))([x, w])]);
      expect(maxRel).to.be.below(1e-5);
    });
  }

  it('a strided conv + batch norm + ReLU + global average pooling model (as in the convnet model): loss and every weight gradient', async () => {
    const rng = new Rng(14);
    const input = tf.input({ shape: [16, 16, 3] });
    let y: tf.SymbolicTensor = input;
    for (const [i, filters] of [8, 16].entries()) {
      y = tf.layers.conv2d({ name: `strided_${i}`, filters, kernelSize: 3, strides: 2, padding: 'same', useBias: false, kernelInitializer: tf.initializers.glorotUniform({ seed: i + 1 }) }).apply(y) as tf.SymbolicTensor;
      y = tf.layers.batchNormalization({ name: `strided_bn_${i}` }).apply(y) as tf.SymbolicTensor;
      y = tf.layers.activation({ activation: 'relu' }).apply(y) as tf.SymbolicTensor;
    }
    y = tf.layers.globalAveragePooling2d({}).apply(y) as tf.SymbolicTensor;
    y = tf.layers.dense({ units: 5, kernelInitializer: tf.initializers.glorotUniform({ seed: 9 }) }).apply(y) as tf.SymbolicTensor;
    const model = tf.model({ inputs: input, outputs: y });
    const x = random(rng, [6, 16, 16, 3]);
    const target = random(rng, [6, 5]);
    const { maxRel } = await compareBackends(() => {
      const weights = model.trainableWeights.map((w) => w.read() as tf.Variable);
      const { value, grads } = tf.variableGrads(() => tf.mean(tf.square(tf.sub(model.apply(x, { training: true }) as tf.Tensor, target))) as tf.Scalar, weights);
      return [value, ...weights.map((w) => grads[w.name] as tf.Tensor)];
    });
    expect(maxRel).to.be.below(1e-4);
    model.dispose();
  });
});
