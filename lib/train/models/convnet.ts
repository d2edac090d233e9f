/**
 * @file (b') A compact CNN for real image sets (32-128 px), the shape PyTorch users reach for: NHWC
 * input [H, W, C]; per entry i of `widths` one stage of `depth` blocks, each a 3x3 Conv2D ('same'
 * padding, no bias) + BatchNormalization + activation. Every stage halves height and width:
 * - `downsample: "maxpool"` (default): the first convolution of the network has stride 2 (rounding up,
 *   TensorFlow's 'same' rule) and every later stage starts with a 2x2 MaxPooling2D of stride 2
 *   (rounding down, as PyTorch's MaxPool2d(2)); all other convolutions have stride 1;
 * - `downsample: "stride"`: the first convolution of every stage has stride 2, the others stride 1.
 * After the last stage global pooling: `pooling: "avg"` GlobalAveragePooling2D (`gap`), `"max"`
 * GlobalMaxPooling2D (`gmp`), `"avgmax"` (default) both concatenated, average first (`pool`, 2 x the
 * last width); with `poolBatchNorm` a BatchNormalization of the pooled features (`gap_bn`), and the
 * head (hidden Dense layers, Dense to the embedding, L2Normalize). Batch normalisation takes PyTorch's
 * defaults (see BN_MOMENTUM). Layer names: `stage{i}_pool` (maxpool), `stage{i}_conv{j}`,
 * `stage{i}_bn{j}`, `stage{i}_act{j}` (i, j from 1), `gap`, `gmp`, `pool`, `gap_bn`, then the head's.
 *
 * Why the defaults (maxpool, avgmax): with stride-2 downsampling and average pooling alone, EPHN
 * (1st order) collapsed on a real 64x64 RGB benchmark: every embedding pointing the same way (mean
 * cosine 0.9994, the loss at ln 2 from about step 300); in PyTorch every variant that dropped either
 * the max-pool downsampling or the max-pool branch collapsed as well (5 runs), and the network with
 * both (Recipe R: widths [32, 64, 128], depth 2, poolBatchNorm) never did (3 runs). docs/results.md's
 * table measures the variants on Fashion-MNIST and an icon set.
 *
 * Why `poolBatchNorm`: pooled ReLU maps are all positive, so an untrained embedding of them points the
 * same way for every image (mean pairwise cosine 0.64-0.90 over 300 Fashion-MNIST test images in
 * training mode, three seeds of docs/results.md's convnet); centring them per feature starts the
 * similarities near 0 (-0.002 to 0.000), which losses weighted by the similarities (2nd-order EPHN)
 * need.
 *
 * The default, on 64x64x3 with widths [32, 64, 128, 256] and depth 1: 32x32x32 -> (pool) 16x16x64 ->
 * (pool) 8x8x128 -> (pool) 4x4x256 -> [avg, max] 512 -> embedding. Like `cnn`, training it needs Conv2DBackpropFilter, which the wasm
 * backend lacks: see backend.ts.
 */
import * as tf from '@tensorflow/tfjs';
import { invalidParameterError } from '../../errors.js';
import type { Rng } from '../../util/rng.js';
import { appendHead } from './head.js';
import type { ResolvedSpecOf } from './model-spec.js';
import { kernelInitializer } from './seeded-init.js';
import { inputConv2d } from './input-conv2d.js';
import { batchNormalization } from './training-batch-norm.js';

/**
 * Batch normalisation as PyTorch's BatchNorm2d defaults it (momentum 0.1 there, i.e. 0.9 of the old
 * moving statistic kept; epsilon 1e-5), not Keras's 0.99 / 1e-3: with 0.99 the moving statistics that
 * validation and the exported model use still hold 45% of their initial values (mean 0, variance 1)
 * after 80 steps, an epoch of the Fashion-MNIST example; with 0.9, under 0.1% after 70 steps.
 */
const BN_MOMENTUM = 0.9;
const BN_EPSILON = 1e-5;

/** Builds the model of the (checked) `spec`; initialiser seeds come from `rng`, in layer order. Errors: E_ARG when the input is too small for its stages. */
export function buildConvnetModel(spec: ResolvedSpecOf<'convnet'>, rng: Rng): tf.LayersModel {
  const { inputShape: shape, widths, depth, activation, poolBatchNorm, downsample, pooling, hidden, embeddingDim } = spec;
  const [height, width, channels] = shape;
  const head = { hidden, embeddingDim, activation, batchNorm: false };
  const minSide = 2 ** widths.length;
  if (height < minSide || width < minSide) {
    throw invalidParameterError('model.inputShape', `height and width of at least ${minSide} for ${widths.length} stages that each halve them`, `[${shape.join(', ')}]`);
  }

  const input = tf.input({ name: 'image', shape: [height, width, channels] });
  let x: tf.SymbolicTensor = input;
  widths.forEach((filters, s) => {
    if (downsample === 'maxpool' && s > 0) {
      x = tf.layers.maxPooling2d({ name: `stage${s + 1}_pool`, poolSize: 2, strides: 2, padding: 'valid' }).apply(x) as tf.SymbolicTensor;
    }
    for (let j = 0; j < depth; j++) {
      const name = (what: string): string => `stage${s + 1}_${what}${j + 1}`;
      // The first convolution reads the images, whose gradient nothing needs (input-conv2d.ts).
      const conv = s === 0 && j === 0 ? inputConv2d : tf.layers.conv2d;
      x = conv({
        name: name('conv'),
        filters,
        kernelSize: 3,
        strides: j === 0 && (downsample === 'stride' || s === 0) ? 2 : 1,
        padding: 'same',
        useBias: false,
        kernelInitializer: kernelInitializer(rng, activation),
      }).apply(x) as tf.SymbolicTensor;
      x = batchNormalization({ name: name('bn'), momentum: BN_MOMENTUM, epsilon: BN_EPSILON }).apply(x) as tf.SymbolicTensor;
      x = tf.layers.activation({ name: name('act'), activation }).apply(x) as tf.SymbolicTensor;
    }
  });
  const features = x;
  const average = (): tf.SymbolicTensor => tf.layers.globalAveragePooling2d({ name: 'gap' }).apply(features) as tf.SymbolicTensor;
  const maximum = (): tf.SymbolicTensor => tf.layers.globalMaxPooling2d({ name: 'gmp' }).apply(features) as tf.SymbolicTensor;
  if (pooling === 'avg') x = average();
  else if (pooling === 'max') x = maximum();
  else x = tf.layers.concatenate({ name: 'pool', axis: -1 }).apply([average(), maximum()]) as tf.SymbolicTensor;
  if (poolBatchNorm) x = batchNormalization({ name: 'gap_bn', momentum: BN_MOMENTUM, epsilon: BN_EPSILON }).apply(x) as tf.SymbolicTensor;
  return tf.model({ name: 'convnet_embedder', inputs: input, outputs: appendHead(x, head, rng) });
}
