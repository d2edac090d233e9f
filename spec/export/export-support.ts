/**
 * @file Shared pieces of the export specs: seeded random weights for any tfjs model, a round trip
 * (convert -> encode -> onnxruntime, compared with tfjs on the same random inputs), and two small
 * reference networks in the style of Keras's ResNet50 and MobileNetV2 (same layer types and wiring,
 * few channels, 32x32 input).
 */
import * as tf from '@tensorflow/tfjs';
import { permuteArray } from '../../lib/util/permute-array.js';
import { compareOutputs, runOnnxModel, type ParityReport } from '../../lib/export/parity.js';
import { convertLayersModel, type ConvertOptions } from '../../lib/engine/tfjs/tfjs-to-onnx.js';
import { encodeModel } from '../../lib/onnx/builder.js';
import { L2Normalize } from '../../lib/train/models/l2-normalize.js';
import { Rng } from '../../lib/util/rng.js';

/**
 * Replaces every weight of `model` with seeded random values: He-scaled normal kernels, small
 * biases and BN offsets, BN scales near 1 and moving variances in [0.5, 1.5] (so BN is not a no-op).
 */
export function randomizeWeights(model: tf.LayersModel, seed: number): void {
  const rng = new Rng(seed);
  const values = model.weights.map((w) => {
    const shape = w.shape as number[];
    const size = shape.reduce((a, b) => a * b, 1);
    const name = w.originalName;
    const data = new Float32Array(size);
    if (name.endsWith('moving_variance')) for (let i = 0; i < size; i++) data[i] = 0.5 + rng.next();
    else if (name.endsWith('gamma')) for (let i = 0; i < size; i++) data[i] = 1 + 0.2 * rng.nextGaussian();
    else if (shape.length >= 2) {
      const fanIn = size / (shape[shape.length - 1] as number);
      const std = Math.sqrt(2 / Math.max(1, name.endsWith('depthwise_kernel') ? size / ((shape[2] as number) * (shape[3] as number)) : fanIn));
      for (let i = 0; i < size; i++) data[i] = std * rng.nextGaussian();
    } else for (let i = 0; i < size; i++) data[i] = 0.1 * rng.nextGaussian();
    return tf.tensor(data, shape);
  });
  model.setWeights(values);
  tf.dispose(values);
}

/** Options of {@link roundTrip}. */
export interface RoundTripOptions extends ConvertOptions {
  /** Inputs in the batch. Default 3. */
  rows?: number;
  seed?: number;
}

/**
 * Converts `model`, runs the ONNX graph in onnxruntime and tfjs on the same Gaussian inputs, and
 * compares. Unknown input sizes (besides the batch) must not occur.
 */
export async function roundTrip(model: tf.LayersModel, options: RoundTripOptions = {}): Promise<ParityReport & { bytes: Uint8Array }> {
  const rows = options.rows ?? 3;
  const converted = convertLayersModel(model, options);
  const bytes = encodeModel({ graphName: model.name, ...converted });
  const tfShape = [rows, ...(model.inputs[0]!.shape.slice(1) as number[])];
  const size = tfShape.reduce((a, b) => a * b, 1);
  const rng = new Rng(options.seed ?? 1);
  const data = Float32Array.from({ length: size }, () => rng.nextGaussian());
  const expected = tf.tidy(() => Float32Array.from((model.predict(tf.tensor(data, tfShape)) as tf.Tensor).dataSync()));
  let feed: { data: Float32Array; dims: number[] } = { data, dims: tfShape };
  const image = converted.image;
  if (image) {
    const nhwc = [rows, image.height!, image.width!, image.channels];
    feed = image.layout === 'NCHW' ? { data: permuteArray(data, nhwc, [0, 3, 1, 2]), dims: [rows, image.channels, image.height!, image.width!] } : { data, dims: nhwc };
  }
  const actual = await runOnnxModel(bytes, { name: converted.inputName, ...feed }, converted.outputName);
  return { ...compareOutputs(actual, expected, rows), bytes };
}

const apply = (layer: tf.layers.Layer, x: tf.SymbolicTensor | tf.SymbolicTensor[]): tf.SymbolicTensor => layer.apply(x) as tf.SymbolicTensor;

/** Keras ResNet50's `block1` (bottleneck with a projection or identity shortcut), few channels. */
function resnetBlock(x: tf.SymbolicTensor, filters: number, stride: number, projection: boolean, name: string): tf.SymbolicTensor {
  const bn = (n: string): tf.layers.Layer => tf.layers.batchNormalization({ epsilon: 1.001e-5, name: `${name}_${n}_bn` });
  let shortcut = x;
  if (projection) {
    shortcut = apply(tf.layers.conv2d({ filters: 4 * filters, kernelSize: 1, strides: stride, name: `${name}_0_conv` }), x);
    shortcut = apply(bn('0'), shortcut);
  }
  let y = apply(tf.layers.conv2d({ filters, kernelSize: 1, strides: stride, name: `${name}_1_conv` }), x);
  y = apply(tf.layers.activation({ activation: 'relu', name: `${name}_1_relu` }), apply(bn('1'), y));
  y = apply(tf.layers.conv2d({ filters, kernelSize: 3, padding: 'same', name: `${name}_2_conv` }), y);
  y = apply(tf.layers.activation({ activation: 'relu', name: `${name}_2_relu` }), apply(bn('2'), y));
  y = apply(tf.layers.conv2d({ filters: 4 * filters, kernelSize: 1, name: `${name}_3_conv` }), y);
  y = apply(bn('3'), y);
  y = apply(tf.layers.add({ name: `${name}_add` }), [shortcut, y]);
  return apply(tf.layers.activation({ activation: 'relu', name: `${name}_out` }), y);
}

/**
 * A ResNet50-style embedder on 32x32x3: ZeroPadding2D(3) + Conv 7x7/2 + BN + ReLU + ZeroPadding2D(1) +
 * MaxPool 3x3/2, three bottleneck blocks (projection, identity, strided projection), global average
 * pooling, Dropout, Dense 16, L2Normalize. Weights random from `seed`.
 */
export function resnetStyle(seed: number): tf.LayersModel {
  const input = tf.input({ shape: [32, 32, 3], name: 'input_1' });
  let x = apply(tf.layers.zeroPadding2d({ padding: [[3, 3], [3, 3]], name: 'conv1_pad' }), input);
  x = apply(tf.layers.conv2d({ filters: 8, kernelSize: 7, strides: 2, name: 'conv1_conv' }), x);
  x = apply(tf.layers.batchNormalization({ epsilon: 1.001e-5, name: 'conv1_bn' }), x);
  x = apply(tf.layers.activation({ activation: 'relu', name: 'conv1_relu' }), x);
  x = apply(tf.layers.zeroPadding2d({ padding: [[1, 1], [1, 1]], name: 'pool1_pad' }), x);
  x = apply(tf.layers.maxPooling2d({ poolSize: 3, strides: 2, name: 'pool1_pool' }), x);
  x = resnetBlock(x, 4, 1, true, 'conv2_block1');
  x = resnetBlock(x, 4, 1, false, 'conv2_block2');
  x = resnetBlock(x, 8, 2, true, 'conv3_block1');
  x = apply(tf.layers.globalAveragePooling2d({ name: 'avg_pool' }), x);
  x = apply(tf.layers.dropout({ rate: 0.5, name: 'dropout' }), x);
  x = apply(tf.layers.dense({ units: 16, name: 'embedding' }), x);
  const model = tf.model({ name: 'resnet_style', inputs: input, outputs: apply(new L2Normalize({ name: 'l2norm' }), x) });
  randomizeWeights(model, seed);
  return model;
}

/** Keras MobileNetV2's inverted residual block, few channels. */
function invertedResidual(x: tf.SymbolicTensor, expansion: number, stride: number, filters: number, name: string): tf.SymbolicTensor {
  const channels = x.shape[3] as number;
  const relu6 = (n: string): tf.layers.Layer => tf.layers.reLU({ maxValue: 6, name: `${name}_${n}_relu` });
  let y = x;
  if (expansion !== 1) {
    y = apply(tf.layers.conv2d({ filters: expansion * channels, kernelSize: 1, useBias: false, name: `${name}_expand` }), y);
    y = apply(tf.layers.batchNormalization({ epsilon: 1e-3, momentum: 0.999, name: `${name}_expand_BN` }), y);
    y = apply(expansion === 6 && stride === 1 ? tf.layers.activation({ activation: 'relu6', name: `${name}_expand_relu` }) : relu6('expand'), y);
  }
  if (stride === 2) {
    // Keras's correct_pad for an even input and a 3x3 kernel: ((0, 1), (0, 1)).
    y = apply(tf.layers.zeroPadding2d({ padding: [[0, 1], [0, 1]], name: `${name}_pad` }), y);
  }
  y = apply(tf.layers.depthwiseConv2d({ kernelSize: 3, strides: stride, padding: stride === 1 ? 'same' : 'valid', useBias: false, name: `${name}_depthwise` }), y);
  y = apply(tf.layers.batchNormalization({ epsilon: 1e-3, momentum: 0.999, name: `${name}_depthwise_BN` }), y);
  y = apply(relu6('depthwise'), y);
  y = apply(tf.layers.conv2d({ filters, kernelSize: 1, useBias: false, name: `${name}_project` }), y);
  y = apply(tf.layers.batchNormalization({ epsilon: 1e-3, momentum: 0.999, name: `${name}_project_BN` }), y);
  return channels === filters && stride === 1 ? apply(tf.layers.add({ name: `${name}_add` }), [x, y]) : y;
}

/**
 * A MobileNetV2-style embedder on 32x32x3: Conv 3x3/2 'same' (asymmetric padding) + BN + ReLU(6),
 * inverted residual blocks (expansion 1 with a residual Add; expansion 6 stride 2 with ZeroPadding2D
 * and a 'valid' depthwise conv; expansion 6 stride 1 with Activation relu6 and an Add), Conv 1x1 + BN +
 * ReLU6, global average pooling, Dense 16, L2Normalize. Weights random from `seed`.
 */
export function mobileNetV2Style(seed: number): tf.LayersModel {
  const input = tf.input({ shape: [32, 32, 3], name: 'input_1' });
  let x = apply(tf.layers.conv2d({ filters: 8, kernelSize: 3, strides: 2, padding: 'same', useBias: false, name: 'Conv1' }), input);
  x = apply(tf.layers.batchNormalization({ epsilon: 1e-3, momentum: 0.999, name: 'bn_Conv1' }), x);
  x = apply(tf.layers.reLU({ maxValue: 6, name: 'Conv1_relu' }), x);
  x = invertedResidual(x, 1, 1, 8, 'expanded_conv');
  x = invertedResidual(x, 6, 2, 12, 'block_1');
  x = invertedResidual(x, 6, 1, 12, 'block_2');
  x = apply(tf.layers.conv2d({ filters: 32, kernelSize: 1, useBias: false, name: 'Conv_1' }), x);
  x = apply(tf.layers.batchNormalization({ epsilon: 1e-3, momentum: 0.999, name: 'Conv_1_bn' }), x);
  x = apply(tf.layers.reLU({ maxValue: 6, name: 'out_relu' }), x);
  x = apply(tf.layers.globalAveragePooling2d({ name: 'global_average_pooling2d' }), x);
  x = apply(tf.layers.dense({ units: 16, name: 'embedding' }), x);
  const model = tf.model({ name: 'mobilenetv2_style', inputs: input, outputs: apply(new L2Normalize({ name: 'l2norm' }), x) });
  randomizeWeights(model, seed);
  return model;
}
