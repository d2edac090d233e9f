/**
 * @file Round trips per layer type: a small tf.layers model with seeded random weights is converted,
 * run in onnxruntime and compared with tfjs on the same inputs (max abs difference below 1e-5 for these
 * O(1) outputs). Also: graph-walk cases (branches, shared layers, nested models), layout handling, and
 * the errors for unsupported layers and configurations.
 */
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { permuteArray } from '../../../lib/util/permute-array.js';
import { convertLayersModel } from '../../../lib/engine/tfjs/tfjs-to-onnx.js';
import { buildModel } from '../../../lib/train/models/build-model.js';
import { L2Normalize } from '../../../lib/train/models/l2-normalize.js';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';
import { onCpuBackend } from '../../helpers/tf-backend.js';
import { randomizeWeights, roundTrip, type RoundTripOptions } from '../../export/export-support.js';

type Sym = tf.SymbolicTensor;
const apply = (layer: tf.layers.Layer, x: Sym | Sym[]): Sym => layer.apply(x) as Sym;

/** A functional model from `input` through `body`, with seeded weights. */
function modelOf(inputShape: number[], body: (x: Sym) => Sym, seed = 7): tf.LayersModel {
  const input = tf.input({ shape: inputShape, name: 'x' });
  const model = tf.model({ inputs: input, outputs: body(input) });
  randomizeWeights(model, seed);
  return model;
}

async function expectParity(model: tf.LayersModel, options: RoundTripOptions = {}): Promise<void> {
  const report = await roundTrip(model, options);
  expect(report.maxAbsDiff, `max abs difference of ${model.name}`).to.be.below(1e-5);
  expect(report.minCosine).to.be.above(1 - 1e-6);
}

describe('engine/tfjs/layer-converters: per-layer round trips through onnxruntime', function () {
  this.timeout(30000);
  onCpuBackend();

  it('permuteArray transposes like numpy', () => {
    // [2, 3] -> [3, 2]
    expect(Array.from(permuteArray(Float32Array.from([1, 2, 3, 4, 5, 6]), [2, 3], [1, 0]))).to.deep.equal([1, 4, 2, 5, 3, 6]);
    const data = Float32Array.from({ length: 24 }, (_, i) => i);
    const back = permuteArray(permuteArray(data, [2, 3, 2, 2], [0, 3, 1, 2]), [2, 2, 3, 2], [0, 2, 3, 1]);
    expect(Array.from(back)).to.deep.equal(Array.from(data));
  });

  describe('Dense', () => {
    it('with bias and an activation, without bias, and on a rank-3 input', async () => {
      await expectParity(modelOf([6], (x) => apply(tf.layers.dense({ units: 4, activation: 'tanh' }), apply(tf.layers.dense({ units: 5, useBias: false }), x))));
      await expectParity(modelOf([3, 6], (x) => apply(tf.layers.dense({ units: 4, activation: 'relu' }), x)));
    });
  });

  describe('Conv2D', () => {
    it("'same' padding with stride 2 on odd and even sizes (asymmetric pads), 'valid' with dilation, no bias", async () => {
      await expectParity(modelOf([9, 8, 3], (x) => apply(tf.layers.conv2d({ filters: 4, kernelSize: [3, 2], strides: 2, padding: 'same', activation: 'relu' }), x)));
      await expectParity(modelOf([9, 9, 2], (x) => apply(tf.layers.conv2d({ filters: 3, kernelSize: 3, dilationRate: 2, useBias: false }), x)));
      await expectParity(modelOf([7, 7, 2], (x) => apply(tf.layers.conv2d({ filters: 3, kernelSize: 4, dilationRate: 2, padding: 'same', activation: 'elu' }), x)));
    });
    it('channels-first layers (Conv2D, MaxPooling2D, ZeroPadding2D, Flatten)', async () => {
      const model = modelOf([2, 7, 6], (x) => {
        let y = apply(tf.layers.conv2d({ filters: 3, kernelSize: 3, strides: 2, padding: 'same', dataFormat: 'channelsFirst' }), x);
        y = apply(tf.layers.maxPooling2d({ poolSize: 2, padding: 'same', dataFormat: 'channelsFirst' }), y);
        y = apply(tf.layers.zeroPadding2d({ padding: [[1, 0], [0, 1]], dataFormat: 'channelsFirst' }), y);
        return apply(tf.layers.flatten({ dataFormat: 'channelsFirst' } as Parameters<typeof tf.layers.flatten>[0]), y);
      });
      // The ONNX input is the tfjs input as it is (NHWC here means "no transpose").
      await expectParity(model, { layout: 'NHWC' });
    });
    it('keeps the layout right for an NHWC model input', async () => {
      await expectParity(modelOf([8, 8, 3], (x) => apply(tf.layers.flatten(), apply(tf.layers.conv2d({ filters: 2, kernelSize: 3, strides: 2, padding: 'same' }), x))), {
        layout: 'NHWC',
      });
    });
  });

  describe('DepthwiseConv2D and SeparableConv2D', () => {
    it('depth multiplier 2, strides, bias, relu6', async () => {
      await expectParity(modelOf([9, 9, 3], (x) => apply(tf.layers.depthwiseConv2d({ kernelSize: 3, depthMultiplier: 2, strides: 2, padding: 'same', activation: 'relu6' }), x)));
      await expectParity(modelOf([8, 8, 3], (x) => apply(tf.layers.depthwiseConv2d({ kernelSize: 3, useBias: false }), x)));
    });
    it('separable convolution', async () => {
      await expectParity(modelOf([8, 8, 3], (x) => apply(tf.layers.separableConv2d({ filters: 5, kernelSize: 3, depthMultiplier: 2, padding: 'same', activation: 'relu' }), x)));
    });
  });

  describe('BatchNormalization', () => {
    it('on feature maps and vectors, with its epsilon, with and without scale/center', async () => {
      await expectParity(modelOf([4, 4, 3], (x) => apply(tf.layers.batchNormalization({ epsilon: 0.5 }), x)));
      await expectParity(modelOf([5], (x) => apply(tf.layers.batchNormalization({ center: false, scale: false, epsilon: 1e-5 }), x)));
    });
  });

  describe('merge layers', () => {
    const branches = (x: Sym): [Sym, Sym] => [
      apply(tf.layers.conv2d({ filters: 4, kernelSize: 3, padding: 'same' }), x),
      apply(tf.layers.conv2d({ filters: 4, kernelSize: 1 }), x),
    ];
    for (const [name, make] of [
      ['Add', () => tf.layers.add({})],
      ['Multiply', () => tf.layers.multiply({})],
      ['Average', () => tf.layers.average({})],
      ['Maximum', () => tf.layers.maximum({})],
      ['Minimum', () => tf.layers.minimum({})],
    ] as const) {
      it(`${name} of two conv branches`, async () => {
        await expectParity(modelOf([6, 6, 2], (x) => apply(make(), branches(x))));
      });
    }
    it('Add of three vectors', async () => {
      await expectParity(modelOf([4], (x) => apply(tf.layers.add({}), [x, apply(tf.layers.dense({ units: 4 }), x), apply(tf.layers.dense({ units: 4 }), x)])));
    });
    it('Concatenate on the channel axis, the height axis, and across layouts', async () => {
      await expectParity(modelOf([6, 6, 2], (x) => apply(tf.layers.concatenate({}), branches(x))));
      await expectParity(modelOf([6, 6, 2], (x) => apply(tf.layers.concatenate({ axis: 1 }), branches(x))));
      // One input comes out of a Reshape (logical layout), the other out of a convolution (NCHW).
      await expectParity(
        modelOf([6, 6, 2], (x) =>
          apply(tf.layers.concatenate({ axis: 2 }), [apply(tf.layers.reshape({ targetShape: [6, 6, 2] }), apply(tf.layers.flatten(), x)), apply(tf.layers.conv2d({ filters: 2, kernelSize: 1 }), x)]),
        ),
      );
    });
  });

  describe('padding, cropping and pooling', () => {
    it('ZeroPadding2D (asymmetric) and Cropping2D', async () => {
      await expectParity(modelOf([5, 4, 2], (x) => apply(tf.layers.zeroPadding2d({ padding: [[1, 2], [0, 3]] }), x)));
      await expectParity(modelOf([6, 6, 2], (x) => apply(tf.layers.cropping2D({ cropping: [[1, 0], [2, 1]] }), x)));
    });
    it("MaxPooling2D and AveragePooling2D with 'same' (asymmetric pads) and 'valid'", async () => {
      for (const pool of [tf.layers.maxPooling2d, tf.layers.averagePooling2d]) {
        await expectParity(modelOf([7, 8, 2], (x) => apply(pool({ poolSize: 3, strides: 2, padding: 'same' }), x)));
        await expectParity(modelOf([7, 8, 2], (x) => apply(pool({ poolSize: [2, 3], strides: [1, 2], padding: 'valid' }), x)));
      }
    });
    it('global pooling, 2-D and 1-D', async () => {
      await expectParity(modelOf([5, 4, 3], (x) => apply(tf.layers.globalAveragePooling2d({}), x)));
      await expectParity(modelOf([5, 4, 3], (x) => apply(tf.layers.globalMaxPooling2d({}), x)));
      await expectParity(modelOf([6, 4], (x) => apply(tf.layers.globalAveragePooling1d({}), x)));
      await expectParity(modelOf([6, 4], (x) => apply(tf.layers.globalMaxPooling1d({}), x)));
    });
  });

  describe('activations', () => {
    const names = ['linear', 'relu', 'relu6', 'elu', 'selu', 'sigmoid', 'hardSigmoid', 'softplus', 'softsign', 'tanh', 'softmax', 'logSoftmax', 'swish', 'mish', 'gelu', 'gelu_new'] as const;
    it(`Activation(${names.join(', ')}) on feature maps`, async () => {
      for (const activation of names) {
        await expectParity(modelOf([3, 3, 4], (x) => apply(tf.layers.activation({ activation } as Parameters<typeof tf.layers.activation>[0]), apply(tf.layers.conv2d({ filters: 4, kernelSize: 1 }), x))));
      }
    });
    it('ReLU (with and without maxValue), LeakyReLU, ELU, ThresholdedReLU, Softmax', async () => {
      const layers = [
        tf.layers.reLU({ maxValue: 0.5 }),
        tf.layers.reLU({}),
        tf.layers.leakyReLU({ alpha: 0.2 }),
        tf.layers.elu({}),
        tf.layers.thresholdedReLU({ theta: 0.3 }),
        tf.layers.softmax({ axis: -1 }),
      ];
      for (const layer of layers) await expectParity(modelOf([3, 3, 2], (x) => apply(layer, apply(tf.layers.conv2d({ filters: 2, kernelSize: 1 }), x))));
      // tfjs's Softmax layer defaults to axis 1 (and computes softmax on the last axis only).
      await expectParity(modelOf([5], (x) => apply(tf.layers.softmax({}), apply(tf.layers.dense({ units: 4 }), x))));
    });
  });

  describe('shape layers', () => {
    it('Flatten after convolutions flattens in NHWC order', async () => {
      await expectParity(modelOf([5, 4, 3], (x) => apply(tf.layers.dense({ units: 6 }), apply(tf.layers.flatten(), apply(tf.layers.conv2d({ filters: 3, kernelSize: 3, padding: 'same' }), x)))));
    });
    it('Reshape after a convolution and back to a feature map before one; Permute', async () => {
      await expectParity(modelOf([4, 4, 2], (x) => apply(tf.layers.reshape({ targetShape: [8, -1] }), apply(tf.layers.conv2d({ filters: 3, kernelSize: 3, padding: 'same' }), x))));
      await expectParity(modelOf([32], (x) => apply(tf.layers.conv2d({ filters: 3, kernelSize: 3 }), apply(tf.layers.reshape({ targetShape: [4, 4, 2] }), x))));
      await expectParity(modelOf([4, 3, 2], (x) => apply(tf.layers.permute({ dims: [3, 1, 2] }), apply(tf.layers.conv2d({ filters: 2, kernelSize: 1 }), x))));
    });
    it('Dropout is the identity; Rescaling scales and shifts', async () => {
      await expectParity(modelOf([4], (x) => apply(tf.layers.rescaling({ scale: 1 / 127.5, offset: -1 }), apply(tf.layers.dropout({ rate: 0.9 }), x))));
    });
  });

  describe('graph walk', () => {
    it('a flattened-image model gets an NCHW image input flattened in NHWC order', async () => {
      const model = modelOf([4 * 3 * 2], (x) => apply(tf.layers.dense({ units: 5 }), x));
      const converted = convertLayersModel(model, { flatImage: { height: 4, width: 3, channels: 2 } });
      expect(converted.inputDims).to.deep.equal(['batch', 2, 4, 3]);
      expect(converted.inputName).to.equal('image');
      await expectParity(model, { flatImage: { height: 4, width: 3, channels: 2 } });
      await expectParity(model, { flatImage: { height: 4, width: 3, channels: 2 }, layout: 'NHWC' });
    });

    it('shares a layer called twice and inlines a nested Sequential model', async () => {
      const shared = tf.layers.dense({ units: 4, activation: 'relu', name: 'shared' });
      const inner = tf.sequential({ name: 'inner', layers: [tf.layers.dense({ inputShape: [4], units: 3, name: 'inner_dense' }), tf.layers.activation({ activation: 'tanh', name: 'inner_tanh' })] });
      const model = modelOf([4], (x) => {
        const once = apply(shared, x);
        const twice = apply(shared, once);
        return apply(new L2Normalize({ name: 'l2' }), apply(inner, apply(tf.layers.add({}), [once, twice])));
      });
      const converted = convertLayersModel(model);
      expect(converted.nodes.filter((n) => n.opType === 'Gemm')).to.have.length(3);
      expect(converted.nodes.some((n) => n.output?.some((o) => o.startsWith('inner/inner_dense')))).to.equal(true);
      expect(converted.outputName).to.equal('embedding');
      await expectParity(model);
    });

    it('runs a whole NCHW image model without a single Transpose', () => {
      const model = modelOf([8, 8, 3], (x) => {
        const y = apply(tf.layers.batchNormalization({}), apply(tf.layers.conv2d({ filters: 4, kernelSize: 3, padding: 'same' }), x));
        return apply(tf.layers.globalAveragePooling2d({}), apply(tf.layers.add({}), [y, apply(tf.layers.conv2d({ filters: 4, kernelSize: 1 }), x)]));
      });
      expect(convertLayersModel(model).nodes.map((n) => n.opType)).not.to.include('Transpose');
    });
  });

  describe('the models the trainer builds', () => {
    it('mlp (batch norm, elu), cnn (batch norm), convnet (strided convs, batch norm, GAP, batch norm of the pooled features; max-pool downsampling with [GAP, GMP]) and tfjs-backbone (a Keras model.json + pooling + head)', async () => {
      const mlp = await buildModel({ kind: 'mlp', inputDim: 12, hidden: [8, 6], embeddingDim: 4, activation: 'elu', batchNorm: true }, 1);
      const cnn = await buildModel({ kind: 'cnn', inputShape: [12, 10, 3], filters: [4, 6], hidden: [8], embeddingDim: 4, batchNorm: true }, 2);
      // 13x10: stride-2 'same' convolutions with pads 1/1 on 13, 0/1 on 10, then 7x5 -> 4x3.
      const convnet = await buildModel({ kind: 'convnet', inputShape: [13, 10, 3], widths: [4, 6], depth: 2, downsample: 'stride', pooling: 'avg', hidden: [5], poolBatchNorm: true, embeddingDim: 4 }, 2);
      // The defaults: max-pool downsampling and [average, max] pooling.
      const convnetMax = await buildModel({ kind: 'convnet', inputShape: [13, 10, 3], widths: [4, 6, 5], depth: 2, hidden: [5], poolBatchNorm: true, embeddingDim: 4 }, 3);
      const backbone = await buildModel({ kind: 'tfjs-backbone', modelJson: 'spec/fixtures/train/tiny-keras/model.json', embeddingDim: 4, hidden: [5], trainBackbone: false }, 3);
      for (const model of [mlp, cnn, convnet, convnetMax, backbone]) {
        randomizeWeights(model, 4);
        await expectParity(model);
        model.dispose();
      }
    });
  });

  describe('errors', () => {
    it('an unsupported layer names the layer and its class', () => {
      const model = modelOf([4, 4, 2], (x) => apply(tf.layers.upSampling2d({ size: [2, 2], name: 'upsample' }), x));
      expectDmlErrorSync(() => convertLayersModel(model), 'E_MODEL', /^Cannot export layer upsample: its class UpSampling2D has no ONNX converter \(supported: .*Conv2D.*\)$/);
    });
    it('an unsupported configuration names the layer, its class, the field and the value', () => {
      const model = modelOf([4, 4, 2], (x) => apply(tf.layers.batchNormalization({ axis: 1, name: 'bn_h' }), x));
      expectDmlErrorSync(() => convertLayersModel(model), 'E_MODEL', 'Cannot export layer bn_h (BatchNormalization): axis 1 is not supported; expected the last (channel) axis of a rank-2 or rank-4 input');
      const causal = modelOf([6, 2], (x) => apply(tf.layers.conv1d({ filters: 1, kernelSize: 2, padding: 'causal', name: 'c1' }), x));
      expectDmlErrorSync(() => convertLayersModel(causal), 'E_MODEL', /^Cannot export layer c1: its class Conv1D has no ONNX converter/);
    });
    it('a model with two outputs', () => {
      const input = tf.input({ shape: [3] });
      const model = tf.model({ name: 'two', inputs: input, outputs: [apply(tf.layers.dense({ units: 2 }), input), apply(tf.layers.dense({ units: 2 }), input)] });
      expectDmlErrorSync(() => convertLayersModel(model), 'E_MODEL', /^Cannot export two: expected one input and one output but it has 1 and 2$/);
    });
  });
});
