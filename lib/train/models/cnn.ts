/**
 * @file (b) A small CNN for small images (Fashion-MNIST scale). NHWC input [H, W, C]; per entry of
 * `filters` one block Conv2D(k x k, same padding) [+ BatchNormalization] + activation + 2x2 max pool
 * (`conv_i`, `conv_bn_i`, `conv_act_i`, `pool_i`); then Flatten and the head (hidden Dense layers,
 * Dense to the embedding, L2Normalize). The default, on 28x28x1: conv 32 -> pool -> conv 64 -> pool
 * -> 3136 -> Dense 128 -> embedding.
 *
 * Training it needs Conv2DBackpropFilter, which the wasm backend lacks: see backend.ts.
 */
import * as tf from '@tensorflow/tfjs';
import { invalidParameterError } from '../../errors.js';
import type { Rng } from '../../util/rng.js';
import { appendHead } from './head.js';
import type { ResolvedSpecOf } from './model-spec.js';
import { kernelInitializer } from './seeded-init.js';
import { inputConv2d } from './input-conv2d.js';
import { batchNormalization } from './training-batch-norm.js';

/** Builds the model of the (checked) `spec`; initialiser seeds come from `rng`. */
export function buildCnnModel(spec: ResolvedSpecOf<'cnn'>, rng: Rng): tf.LayersModel {
  const { inputShape: shape, filters, kernelSize, activation, batchNorm, hidden, embeddingDim } = spec;
  const [height, width, channels] = shape;
  const head = { hidden, embeddingDim, activation, batchNorm };
  const minSide = 2 ** filters.length;
  if (height < minSide || width < minSide) {
    throw invalidParameterError('model.inputShape', `height and width of at least ${minSide} for ${filters.length} 2x2 poolings`, `[${shape.join(', ')}]`);
  }

  const input = tf.input({ name: 'image', shape: [height, width, channels] });
  let x: tf.SymbolicTensor = input;
  filters.forEach((f, i) => {
    // The first convolution reads the images, whose gradient nothing needs (input-conv2d.ts; it
    // matters without bias, i.e. with batchNorm).
    const conv = i === 0 ? inputConv2d : tf.layers.conv2d;
    x = conv({ name: `conv_${i + 1}`, filters: f, kernelSize, padding: 'same', useBias: !batchNorm, kernelInitializer: kernelInitializer(rng, activation) }).apply(x) as tf.SymbolicTensor;
    if (batchNorm) x = batchNormalization({ name: `conv_bn_${i + 1}` }).apply(x) as tf.SymbolicTensor;
    x = tf.layers.activation({ name: `conv_act_${i + 1}`, activation }).apply(x) as tf.SymbolicTensor;
    x = tf.layers.maxPooling2d({ name: `pool_${i + 1}`, poolSize: 2, strides: 2 }).apply(x) as tf.SymbolicTensor;
  });
  x = tf.layers.flatten({ name: 'flatten' }).apply(x) as tf.SymbolicTensor;
  return tf.model({ name: 'cnn_embedder', inputs: input, outputs: appendHead(x, head, rng) });
}
