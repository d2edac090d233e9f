/**
 * @file One ONNX converter per TensorFlow.js (Keras) layer class, in a registry keyed by class name.
 *
 * A converter receives the layer, its converted inputs ({@link TensorValue}s, see onnx-graph.ts) and
 * the graph under construction, adds nodes and initializers, and returns its outputs with their
 * layout. Spatial layers (convolutions, pooling, padding, cropping, 2-D global pooling) work on NCHW
 * tensors, which ONNX's Conv and pooling operators require; everything that reads memory order
 * (Flatten, Reshape, Permute, Dense, L2Normalize) works on the logical (TensorFlow.js) layout; the
 * rest keeps whatever layout its input has, mapping axes where it takes one (BatchNormalization,
 * Concatenate, Softmax).
 *
 * Numerics follow TensorFlow.js, not Keras where the two differ: `ELU` ignores its `alpha` (tfjs 4.22
 * applies alpha 1), `Softmax`'s default axis is 1, BatchNormalization is only defined on the last
 * axis, and `'same'` padding is TensorFlow's asymmetric
 * rule (the extra row/column at the end), written as explicit pads when the spatial size is known and
 * as `auto_pad: SAME_UPPER` (the same rule) when it is not. Average pooling excludes padding, as
 * TensorFlow does. Inference semantics throughout: Dropout and noise layers are identities,
 * BatchNormalization uses its moving statistics.
 *
 * A layer class without a converter, or a configuration a converter cannot express (e.g. causal
 * padding), is a DmlError E_MODEL naming the layer and its class. {@link registerLayerConverter} adds
 * converters for custom layers.
 *
 * Length: about thirty converters of a few lines each, kept beside the registry and the layout rules
 * they all follow, so that a reader checks a converter against those rules on one page.
 */
import type * as tf from '@tensorflow/tfjs';
import { describeValue, DmlError } from '../../errors.js';
import type { AttributeValue } from '../../onnx/builder.js';
import { l2Normalize } from '../graph/graph-builder.js';
import { permuteArray } from '../../util/permute-array.js';
import type { GraphContext, TensorValue, WeightSource } from './onnx-graph.js';

/** One call of a layer, as the graph walk hands it to a converter. */
export interface LayerCall {
  layer: tf.layers.Layer;
  /** Converted inputs, in the order of the layer's inbound node. */
  inputs: readonly TensorValue[];
  /** Logical shapes of the layer's outputs (batch first). */
  outputShapes: ReadonlyArray<readonly (number | null)[]>;
  /** Base for the names of the values this call creates (the layer name, prefixed inside nested models). */
  name: string;
}

/** A converter's output: the ONNX value and whether it is an NCHW form of a logical NHWC tensor. */
export interface ConvertedOutput {
  name: string;
  nchw: boolean;
}

/** Converts one layer call, adding nodes to `g`; returns one output per output of the layer. */
export type LayerConverter = (g: GraphContext, call: LayerCall) => ConvertedOutput[];

const registry = new Map<string, LayerConverter>();

/** Registers (or replaces) the converter of layers whose `getClassName()` is `className`. */
export function registerLayerConverter(className: string, converter: LayerConverter): void {
  registry.set(className, converter);
}

/** The converter of `className`, if any. */
export function layerConverter(className: string): LayerConverter | undefined {
  return registry.get(className);
}

/** Class names that have a converter, sorted. */
export function supportedLayerClasses(): string[] {
  return [...registry.keys()].sort();
}

/** The error for a layer configuration that cannot be exported. */
export function unsupportedConfig(call: LayerCall, field: string, value: unknown, expected: string): DmlError {
  return new DmlError(
    'E_MODEL',
    `Cannot export layer ${call.name} (${call.layer.getClassName()}): ${field} ${describeValue(value)} is not supported; expected ${expected}`,
  );
}

// ---- configuration and weights ----

function config(call: LayerCall): tf.serialization.ConfigDict {
  return call.layer.getConfig();
}

function numberField(call: LayerCall, key: string, fallback?: number): number {
  const value = config(call)[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw unsupportedConfig(call, key, value, 'a finite number');
  return value;
}

function stringField(call: LayerCall, key: string, fallback: string): string {
  const value = config(call)[key] ?? fallback;
  if (typeof value !== 'string') throw unsupportedConfig(call, key, value, 'a string');
  return value;
}

/** A field holding one or two integers (`kernelSize`, `strides`), as [height, width]. */
function pairField(call: LayerCall, key: string, fallback?: number): [number, number] {
  const value = config(call)[key] ?? fallback;
  const pair = typeof value === 'number' ? [value, value] : value;
  if (!Array.isArray(pair) || pair.length !== 2 || !pair.every((v) => Number.isInteger(v) && (v as number) >= 0)) {
    throw unsupportedConfig(call, key, value, 'one or two non-negative integers');
  }
  return pair as [number, number];
}

/** A field holding [[top, bottom], [left, right]] (`padding` of ZeroPadding2D, `cropping` of Cropping2D). */
function padPairsField(call: LayerCall, key: string): [[number, number], [number, number]] {
  const value = config(call)[key];
  const ok = (p: unknown): p is [number, number] => Array.isArray(p) && p.length === 2 && p.every((v) => Number.isInteger(v) && (v as number) >= 0);
  if (!Array.isArray(value) || value.length !== 2 || !ok(value[0]) || !ok(value[1])) {
    throw unsupportedConfig(call, key, value, '[[top, bottom], [left, right]] non-negative integers');
  }
  return [value[0], value[1]];
}

/** The layer weight whose original name ends in `/suffix` (`kernel`, `bias`, `gamma`, ...), or undefined. */
function optionalWeight(call: LayerCall, suffix: string): LayerWeight | undefined {
  const variable = call.layer.weights.find((w) => w.originalName === suffix || w.originalName.endsWith(`/${suffix}`));
  if (variable === undefined) return undefined;
  const tensor = variable.read();
  return { data: Float32Array.from(tensor.dataSync() as Float32Array), shape: [...variable.shape] as number[], source: { variable } };
}

/** A layer weight's values, shape, and where they came from. */
interface LayerWeight {
  data: Float32Array;
  shape: number[];
  source: WeightSource;
}

function weight(call: LayerCall, suffix: string): LayerWeight {
  const w = optionalWeight(call, suffix);
  if (w === undefined) {
    const names = call.layer.weights.map((v) => v.originalName).join(', ');
    throw new DmlError('E_MODEL', `Cannot export layer ${call.name} (${call.layer.getClassName()}): it has no ${suffix} weight (weights: ${names || 'none'})`);
  }
  return w;
}

function singleInput(call: LayerCall): TensorValue {
  if (call.inputs.length !== 1) throw unsupportedConfig(call, 'input count', call.inputs.length, 'exactly one input');
  return call.inputs[0] as TensorValue;
}

// ---- activations ----

/**
 * Applies the TensorFlow.js activation `activation` (its serialised name: `relu`, `relu6`, `swish`, ...)
 * to `value`, whose layout is kept; returns the output's name. `linear` adds nothing.
 */
export function applyActivation(g: GraphContext, call: LayerCall, activation: string, value: TensorValue, base: string): string {
  const x = value.name;
  const lastAxis = (): number => g.physicalAxis(value, -1);
  switch (activation) {
    case 'linear':
      return x;
    case 'relu':
      return g.op('Relu', [x], base);
    case 'relu6':
      return g.op('Clip', [x, g.scalar(0), g.scalar(6)], base);
    case 'elu':
      return g.op('Elu', [x], base, { alpha: { f: 1 } });
    case 'selu':
      return g.op('Selu', [x], base);
    case 'sigmoid':
      return g.op('Sigmoid', [x], base);
    case 'hardSigmoid':
      return g.op('HardSigmoid', [x], base, { alpha: { f: 0.2 }, beta: { f: 0.5 } });
    case 'softplus':
      return g.op('Softplus', [x], base);
    case 'softsign':
      return g.op('Softsign', [x], base);
    case 'tanh':
      return g.op('Tanh', [x], base);
    case 'softmax':
      return g.op('Softmax', [x], base, { axis: { i: lastAxis() } });
    case 'logSoftmax':
      return g.op('LogSoftmax', [x], base, { axis: { i: lastAxis() } });
    case 'swish':
      return g.op('Mul', [g.op('Sigmoid', [x], `${base}/sigmoid`), x], base);
    case 'mish':
      return g.op('Mul', [x, g.op('Tanh', [g.op('Softplus', [x], `${base}/softplus`)], `${base}/tanh`)], base);
    case 'gelu': {
      // x * 0.5 * (1 + erf(x / sqrt 2)), in tfjs's order of operations.
      const erf = g.op('Erf', [g.op('Div', [x, g.scalar(Math.SQRT2)], `${base}/scaled`)], `${base}/erf`);
      const cdf = g.op('Mul', [g.scalar(0.5), g.op('Add', [g.scalar(1), erf], `${base}/one_plus`)], `${base}/cdf`);
      return g.op('Mul', [x, cdf], base);
    }
    case 'gelu_new': {
      // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))).
      const cube = g.op('Mul', [x, g.op('Mul', [x, x], `${base}/square`)], `${base}/cube`);
      const inner = g.op('Add', [x, g.op('Mul', [g.scalar(0.044715), cube], `${base}/cubic_term`)], `${base}/inner`);
      const tanh = g.op('Tanh', [g.op('Mul', [g.scalar(Math.sqrt(2 / Math.PI)), inner], `${base}/tanh_in`)], `${base}/tanh`);
      return g.op('Mul', [g.scalar(0.5), g.op('Mul', [x, g.op('Add', [g.scalar(1), tanh], `${base}/one_plus`)], `${base}/x_times`)], base);
    }
    default:
      throw unsupportedConfig(
        call,
        'activation',
        activation,
        'one of linear, relu, relu6, elu, selu, sigmoid, hardSigmoid, softplus, softsign, tanh, softmax, logSoftmax, swish, mish, gelu, gelu_new',
      );
  }
}

/** The layer's own `activation` applied to its main output `name` (which has `value`'s layout). */
function withActivation(g: GraphContext, call: LayerCall, name: string, nchw: boolean): ConvertedOutput {
  const activation = stringField(call, 'activation', 'linear');
  const shape = call.outputShapes[0] ?? [];
  return { name: applyActivation(g, call, activation, { name, shape, nchw }, `${call.name}/${activation}`), nchw };
}

// ---- spatial helpers ----

interface SpatialInput {
  /** The input as an NCHW ONNX tensor. */
  x: TensorValue;
  /** The layer's data format is channels-last (its output is then an NCHW form of an NHWC tensor). */
  channelsLast: boolean;
  height: number | null;
  width: number | null;
}

function spatialInput(g: GraphContext, call: LayerCall): SpatialInput {
  const input = singleInput(call);
  if (input.shape.length !== 4) throw unsupportedConfig(call, 'input rank', input.shape.length, 'rank 4 (batch, height, width, channels)');
  const format = stringField(call, 'dataFormat', 'channelsLast');
  if (format === 'channelsLast') return { x: g.channelsFirst(input), channelsLast: true, height: input.shape[1] ?? null, width: input.shape[2] ?? null };
  if (format === 'channelsFirst') return { x: g.native(input), channelsLast: false, height: input.shape[2] ?? null, width: input.shape[3] ?? null };
  throw unsupportedConfig(call, 'dataFormat', format, "'channelsLast' or 'channelsFirst'");
}

/** TensorFlow's 'same' padding along one axis: [before, after], the odd pixel after. */
function samePad(size: number, kernel: number, stride: number, dilation: number): [number, number] {
  const effective = (kernel - 1) * dilation + 1;
  const out = Math.ceil(size / stride);
  const total = Math.max((out - 1) * stride + effective - size, 0);
  const before = Math.floor(total / 2);
  return [before, total - before];
}

/** ONNX padding attributes for a window op with TensorFlow padding mode `padding`. */
function paddingAttributes(
  call: LayerCall,
  input: SpatialInput,
  kernel: [number, number],
  strides: [number, number],
  dilation: [number, number],
): Record<string, AttributeValue> {
  const padding = stringField(call, 'padding', 'valid');
  if (padding === 'valid') return { pads: { ints: [0, 0, 0, 0] } };
  if (padding !== 'same') throw unsupportedConfig(call, 'padding', padding, "'valid' or 'same'");
  if (input.height === null || input.width === null) return { auto_pad: { s: 'SAME_UPPER' } };
  const [top, bottom] = samePad(input.height, kernel[0], strides[0], dilation[0]);
  const [left, right] = samePad(input.width, kernel[1], strides[1], dilation[1]);
  return { pads: { ints: [top, left, bottom, right] } };
}

/** An HWIO kernel [kh, kw, in, out] as ONNX's OIHW. */
function oihw(kernel: LayerWeight): { data: Float32Array; dims: number[]; source: WeightSource } {
  const [kh, kw, cin, cout] = kernel.shape as [number, number, number, number];
  const perm = [3, 2, 0, 1];
  return { data: permuteArray(kernel.data, kernel.shape, perm), dims: [cout, cin, kh, kw], source: { variable: kernel.source.variable, perm } };
}

/** A depthwise kernel [kh, kw, in, multiplier] as an ONNX grouped-conv weight [in * multiplier, 1, kh, kw]. */
function depthwiseWeight(kernel: LayerWeight): { data: Float32Array; dims: number[]; channels: number; source: WeightSource } {
  const [kh, kw, cin, multiplier] = kernel.shape as [number, number, number, number];
  const perm = [2, 3, 0, 1];
  return { data: permuteArray(kernel.data, kernel.shape, perm), dims: [cin * multiplier, 1, kh, kw], channels: cin, source: { variable: kernel.source.variable, perm } };
}

function checkedStridesAndDilation(call: LayerCall): { strides: [number, number]; dilation: [number, number] } {
  const strides = pairField(call, 'strides', 1);
  const dilation = pairField(call, 'dilationRate', 1);
  if (strides.some((s) => s < 1) || dilation.some((d) => d < 1)) throw unsupportedConfig(call, 'strides/dilationRate', [...strides, ...dilation], 'positive integers');
  return { strides, dilation };
}

function convLayer(g: GraphContext, call: LayerCall): ConvertedOutput[] {
  const input = spatialInput(g, call);
  const kernel = weight(call, 'kernel');
  if (kernel.shape.length !== 4) throw unsupportedConfig(call, 'kernel shape', `[${kernel.shape.join(', ')}]`, 'a 4-D HWIO kernel');
  const { strides, dilation } = checkedStridesAndDilation(call);
  const size: [number, number] = [kernel.shape[0] as number, kernel.shape[1] as number];
  const w = oihw(kernel);
  const bias = optionalWeight(call, 'bias');
  const inputs = [input.x.name, g.floats(`${call.name}/kernel`, w.dims, w.data, w.source)];
  if (bias) inputs.push(g.floats(`${call.name}/bias`, bias.shape, bias.data, bias.source));
  const out = g.op('Conv', inputs, `${call.name}/conv`, {
    kernel_shape: { ints: size },
    strides: { ints: strides },
    dilations: { ints: dilation },
    group: { i: 1 },
    ...paddingAttributes(call, input, size, strides, dilation),
  });
  return [withActivation(g, call, out, input.channelsLast)];
}

function depthwiseConvLayer(g: GraphContext, call: LayerCall): ConvertedOutput[] {
  const input = spatialInput(g, call);
  const kernel = weight(call, 'depthwise_kernel');
  const { strides, dilation } = checkedStridesAndDilation(call);
  const size: [number, number] = [kernel.shape[0] as number, kernel.shape[1] as number];
  const w = depthwiseWeight(kernel);
  const inputs = [input.x.name, g.floats(`${call.name}/depthwise_kernel`, w.dims, w.data, w.source)];
  const bias = optionalWeight(call, 'bias');
  if (bias) inputs.push(g.floats(`${call.name}/bias`, bias.shape, bias.data, bias.source));
  const out = g.op('Conv', inputs, `${call.name}/depthwise`, {
    kernel_shape: { ints: size },
    strides: { ints: strides },
    dilations: { ints: dilation },
    group: { i: w.channels },
    ...paddingAttributes(call, input, size, strides, dilation),
  });
  return [withActivation(g, call, out, input.channelsLast)];
}

function separableConvLayer(g: GraphContext, call: LayerCall): ConvertedOutput[] {
  const input = spatialInput(g, call);
  const { strides, dilation } = checkedStridesAndDilation(call);
  const depthwise = weight(call, 'depthwise_kernel');
  const size: [number, number] = [depthwise.shape[0] as number, depthwise.shape[1] as number];
  const dw = depthwiseWeight(depthwise);
  const spread = g.op('Conv', [input.x.name, g.floats(`${call.name}/depthwise_kernel`, dw.dims, dw.data, dw.source)], `${call.name}/depthwise`, {
    kernel_shape: { ints: size },
    strides: { ints: strides },
    dilations: { ints: dilation },
    group: { i: dw.channels },
    ...paddingAttributes(call, input, size, strides, dilation),
  });
  const pointwise = oihw(weight(call, 'pointwise_kernel'));
  const inputs = [spread, g.floats(`${call.name}/pointwise_kernel`, pointwise.dims, pointwise.data, pointwise.source)];
  const bias = optionalWeight(call, 'bias');
  if (bias) inputs.push(g.floats(`${call.name}/bias`, bias.shape, bias.data, bias.source));
  const out = g.op('Conv', inputs, `${call.name}/pointwise`, { kernel_shape: { ints: [1, 1] }, strides: { ints: [1, 1] }, group: { i: 1 } });
  return [withActivation(g, call, out, input.channelsLast)];
}

function poolingLayer(opType: 'MaxPool' | 'AveragePool'): LayerConverter {
  return (g, call) => {
    const input = spatialInput(g, call);
    const size = pairField(call, 'poolSize', 2);
    const strides = pairField(call, 'strides', undefined);
    const attributes: Record<string, AttributeValue> = {
      kernel_shape: { ints: size },
      strides: { ints: strides },
      ...paddingAttributes(call, input, size, strides, [1, 1]),
    };
    // TensorFlow averages over the window's pixels inside the image only.
    if (opType === 'AveragePool') attributes['count_include_pad'] = { i: 0 };
    return [{ name: g.op(opType, [input.x.name], `${call.name}/pool`, attributes), nchw: input.channelsLast }];
  };
}

function globalPooling2d(opType: 'ReduceMean' | 'ReduceMax'): LayerConverter {
  return (g, call) => {
    const input = spatialInput(g, call);
    return [{ name: g.op(opType, [input.x.name], call.name, { axes: { ints: [2, 3] }, keepdims: { i: 0 } }), nchw: false }];
  };
}

function globalPooling1d(opType: 'ReduceMean' | 'ReduceMax'): LayerConverter {
  return (g, call) => {
    const input = g.native(singleInput(call));
    if (input.shape.length !== 3) throw unsupportedConfig(call, 'input rank', input.shape.length, 'rank 3 (batch, steps, channels)');
    return [{ name: g.op(opType, [input.name], call.name, { axes: { ints: [1] }, keepdims: { i: 0 } }), nchw: false }];
  };
}

// ---- merging ----

/** The inputs of a merge layer in one layout: NCHW when all are rank 4 and any already is, else logical. */
function alignedInputs(g: GraphContext, call: LayerCall): TensorValue[] {
  const ranks = new Set(call.inputs.map((v) => v.shape.length));
  if (call.inputs.length < 2) throw unsupportedConfig(call, 'input count', call.inputs.length, 'at least two inputs');
  if (ranks.size !== 1) throw unsupportedConfig(call, 'input ranks', [...ranks].join(' and '), 'inputs of equal rank');
  const toNchw = ranks.has(4) && call.inputs.some((v) => v.nchw);
  return call.inputs.map((v) => (toNchw ? g.channelsFirst(v) : g.native(v)));
}

/** A merge computed pairwise from the left with `opType` (Add, Mul, Max, Min), as tfjs does. */
function pairwiseMerge(opType: string): LayerConverter {
  return (g, call) => {
    const inputs = alignedInputs(g, call);
    let acc = (inputs[0] as TensorValue).name;
    for (let i = 1; i < inputs.length; i++) acc = g.op(opType, [acc, (inputs[i] as TensorValue).name], i === inputs.length - 1 ? call.name : `${call.name}/partial`);
    return [{ name: acc, nchw: (inputs[0] as TensorValue).nchw }];
  };
}

function averageLayer(g: GraphContext, call: LayerCall): ConvertedOutput[] {
  const [sum] = pairwiseMerge('Add')(g, { ...call, name: `${call.name}/sum` }) as [ConvertedOutput];
  return [{ name: g.op('Mul', [sum.name, g.scalar(1 / call.inputs.length)], call.name), nchw: sum.nchw }];
}

function concatenateLayer(g: GraphContext, call: LayerCall): ConvertedOutput[] {
  const inputs = alignedInputs(g, call);
  const first = inputs[0] as TensorValue;
  const axis = numberField(call, 'axis', -1);
  const rank = first.shape.length;
  if (!Number.isInteger(axis) || axis < -rank || axis >= rank || axis === 0 || axis === -rank) {
    throw unsupportedConfig(call, 'axis', axis, `a non-batch axis of a rank-${rank} tensor`);
  }
  const physical = g.physicalAxis(first, axis);
  return [{ name: g.op('Concat', inputs.map((v) => v.name), call.name, { axis: { i: physical } }), nchw: first.nchw }];
}

// ---- normalisation ----

function batchNormLayer(g: GraphContext, call: LayerCall): ConvertedOutput[] {
  const input = singleInput(call);
  const rank = input.shape.length;
  const raw = config(call)['axis'] ?? -1;
  const axisValue = Array.isArray(raw) && raw.length === 1 ? raw[0] : raw;
  if (typeof axisValue !== 'number' || !Number.isInteger(axisValue)) throw unsupportedConfig(call, 'axis', raw, 'one integer axis');
  const axis = axisValue < 0 ? axisValue + rank : axisValue;
  // Only the channel (last) axis: tfjs's cpu kernel applies the statistics along the last axis
  // whatever `axis` says, so no other axis has a well-defined tfjs result to match.
  if (axis !== rank - 1 || (rank !== 2 && rank !== 4)) {
    throw unsupportedConfig(call, 'axis', axisValue, 'the last (channel) axis of a rank-2 or rank-4 input');
  }
  // ONNX BatchNormalization normalises over axis 1: NCHW for feature maps.
  const x = rank === 4 ? g.channelsFirst(input) : input;
  const mean = weight(call, 'moving_mean');
  const variance = weight(call, 'moving_variance');
  const channels = mean.data.length;
  const gamma = optionalWeight(call, 'gamma');
  const beta = optionalWeight(call, 'beta');
  const out = g.op(
    'BatchNormalization',
    [
      x.name,
      g.floats(`${call.name}/gamma`, [channels], gamma?.data ?? new Float32Array(channels).fill(1), gamma?.source),
      g.floats(`${call.name}/beta`, [channels], beta?.data ?? new Float32Array(channels), beta?.source),
      g.floats(`${call.name}/moving_mean`, [channels], mean.data, mean.source),
      g.floats(`${call.name}/moving_variance`, [channels], variance.data, variance.source),
    ],
    call.name,
    // momentum: inference ignores it; the graph trainer updates the moving statistics with it (Keras's and ONNX's meaning agree).
    { epsilon: { f: numberField(call, 'epsilon', 1e-3) }, momentum: { f: numberField(call, 'momentum', 0.99) } },
  );
  return [{ name: out, nchw: x.nchw }];
}

// ---- shape layers ----

function flattenLayer(g: GraphContext, call: LayerCall): ConvertedOutput[] {
  let x = g.native(singleInput(call));
  if (x.shape.length <= 2) return [{ name: x.name, nchw: false }];
  if (stringField(call, 'dataFormat', 'channelsLast') === 'channelsFirst') {
    // Keras flattens a channels-first tensor in channels-last order.
    const perm = [0, ...Array.from({ length: x.shape.length - 2 }, (_, i) => i + 2), 1];
    x = { ...x, name: g.op('Transpose', [x.name], `${call.name}/channels_last`, { perm: { ints: perm } }) };
  }
  return [{ name: g.op('Flatten', [x.name], call.name, { axis: { i: 1 } }), nchw: false }];
}

function reshapeLayer(g: GraphContext, call: LayerCall): ConvertedOutput[] {
  const x = g.native(singleInput(call));
  const raw = config(call)['targetShape'];
  // tfjs stores the inferred dimension (-1) as null.
  const target = Array.isArray(raw) ? raw.map((d) => (d === null ? -1 : d)) : [];
  if (!Array.isArray(raw) || !target.every((d) => Number.isInteger(d) && ((d as number) > 0 || d === -1)) || target.filter((d) => d === -1).length > 1) {
    throw unsupportedConfig(call, 'targetShape', raw, 'positive integers and at most one -1');
  }
  // 0 copies the batch size from the input.
  const shape = g.int64s(`${call.name}/shape`, [target.length + 1], [0, ...(target as number[])]);
  return [{ name: g.op('Reshape', [x.name, shape], call.name), nchw: false }];
}

function permuteLayer(g: GraphContext, call: LayerCall): ConvertedOutput[] {
  const x = g.native(singleInput(call));
  const dims = config(call)['dims'];
  if (!Array.isArray(dims) || dims.length !== x.shape.length - 1) throw unsupportedConfig(call, 'dims', dims, `a permutation of 1..${x.shape.length - 1}`);
  return [{ name: g.op('Transpose', [x.name], call.name, { perm: { ints: [0, ...(dims as number[])] } }), nchw: false }];
}

function zeroPaddingLayer(g: GraphContext, call: LayerCall): ConvertedOutput[] {
  const input = spatialInput(g, call);
  const [[top, bottom], [left, right]] = padPairsField(call, 'padding');
  const pads = g.int64s(`${call.name}/pads`, [8], [0, 0, top, left, 0, 0, bottom, right]);
  return [{ name: g.op('Pad', [input.x.name, pads], call.name, { mode: { s: 'constant' } }), nchw: input.channelsLast }];
}

function croppingLayer(g: GraphContext, call: LayerCall): ConvertedOutput[] {
  const input = spatialInput(g, call);
  const [[top, bottom], [left, right]] = padPairsField(call, 'cropping');
  // Negative ends count from the end; an end past the size is clamped to it.
  const end = (crop: number): number => (crop === 0 ? Number.MAX_SAFE_INTEGER : -crop);
  const starts = g.int64s(`${call.name}/starts`, [2], [top, left]);
  const ends = g.int64s(`${call.name}/ends`, [2], [end(bottom), end(right)]);
  const axes = g.int64s(`${call.name}/axes`, [2], [2, 3]);
  return [{ name: g.op('Slice', [input.x.name, starts, ends, axes], call.name), nchw: input.channelsLast }];
}

// ---- element-wise layers ----

function identityLayer(_g: GraphContext, call: LayerCall): ConvertedOutput[] {
  const input = singleInput(call);
  return [{ name: input.name, nchw: input.nchw }];
}

function elementwise(build: (g: GraphContext, call: LayerCall, input: TensorValue) => string): LayerConverter {
  return (g, call) => {
    const input = singleInput(call);
    return [{ name: build(g, call, input), nchw: input.nchw }];
  };
}

registerLayerConverter('Dense', (g, call) => {
  const x = g.native(singleInput(call));
  const kernel = weight(call, 'kernel');
  const bias = optionalWeight(call, 'bias');
  const w = g.floats(`${call.name}/kernel`, kernel.shape, kernel.data, kernel.source);
  const b = bias ? g.floats(`${call.name}/bias`, bias.shape, bias.data, bias.source) : undefined;
  let out: string;
  if (x.shape.length === 2) {
    out = g.op('Gemm', b ? [x.name, w, b] : [x.name, w], `${call.name}/dense`, { alpha: { f: 1 }, beta: { f: 1 }, transA: { i: 0 }, transB: { i: 0 } });
  } else {
    out = g.op('MatMul', [x.name, w], b ? `${call.name}/matmul` : `${call.name}/dense`);
    if (b) out = g.op('Add', [out, b], `${call.name}/dense`);
  }
  return [withActivation(g, call, out, false)];
});
registerLayerConverter('Conv2D', convLayer);
registerLayerConverter('DepthwiseConv2D', depthwiseConvLayer);
registerLayerConverter('SeparableConv2D', separableConvLayer);
registerLayerConverter('BatchNormalization', batchNormLayer);
registerLayerConverter('MaxPooling2D', poolingLayer('MaxPool'));
registerLayerConverter('AveragePooling2D', poolingLayer('AveragePool'));
registerLayerConverter('GlobalAveragePooling2D', globalPooling2d('ReduceMean'));
registerLayerConverter('GlobalMaxPooling2D', globalPooling2d('ReduceMax'));
registerLayerConverter('GlobalAveragePooling1D', globalPooling1d('ReduceMean'));
registerLayerConverter('GlobalMaxPooling1D', globalPooling1d('ReduceMax'));
registerLayerConverter('ZeroPadding2D', zeroPaddingLayer);
registerLayerConverter('Cropping2D', croppingLayer);
registerLayerConverter('Flatten', flattenLayer);
registerLayerConverter('Reshape', reshapeLayer);
registerLayerConverter('Permute', permuteLayer);
registerLayerConverter('Add', pairwiseMerge('Add'));
registerLayerConverter('Multiply', pairwiseMerge('Mul'));
registerLayerConverter('Maximum', pairwiseMerge('Max'));
registerLayerConverter('Minimum', pairwiseMerge('Min'));
registerLayerConverter('Average', averageLayer);
registerLayerConverter('Concatenate', concatenateLayer);
for (const inference of ['Dropout', 'SpatialDropout1D', 'GaussianNoise', 'GaussianDropout', 'AlphaDropout']) registerLayerConverter(inference, identityLayer);
registerLayerConverter(
  'Activation',
  elementwise((g, call, x) => applyActivation(g, call, stringField(call, 'activation', 'linear'), x, call.name)),
);
registerLayerConverter(
  'ReLU',
  elementwise((g, call, x) => {
    const max = config(call)['maxValue'];
    if (max === null || max === undefined) return g.op('Relu', [x.name], call.name);
    return g.op('Clip', [x.name, g.scalar(0), g.scalar(numberField(call, 'maxValue'))], call.name);
  }),
);
registerLayerConverter(
  'LeakyReLU',
  elementwise((g, call, x) => g.op('LeakyRelu', [x.name], call.name, { alpha: { f: numberField(call, 'alpha', 0.3) } })),
);
// tfjs 4.22's ELU layer computes elu(x) with alpha 1 whatever its config says; the export matches it.
registerLayerConverter(
  'ELU',
  elementwise((g, call, x) => g.op('Elu', [x.name], call.name, { alpha: { f: 1 } })),
);
registerLayerConverter(
  'ThresholdedReLU',
  elementwise((g, call, x) => g.op('ThresholdedRelu', [x.name], call.name, { alpha: { f: numberField(call, 'theta', 1) } })),
);
registerLayerConverter(
  'Softmax',
  elementwise((g, call, x) => {
    const raw = config(call)['axis'] ?? 1;
    const axis = Array.isArray(raw) && raw.length === 1 ? raw[0] : raw;
    if (typeof axis !== 'number' || !Number.isInteger(axis)) throw unsupportedConfig(call, 'axis', raw, 'one integer axis');
    return g.op('Softmax', [x.name], call.name, { axis: { i: g.physicalAxis(x, axis) } });
  }),
);
registerLayerConverter(
  'Rescaling',
  elementwise((g, call, x) => {
    const scaled = g.op('Mul', [x.name, g.scalar(numberField(call, 'scale'))], `${call.name}/scaled`);
    return g.op('Add', [scaled, g.scalar(numberField(call, 'offset', 0))], call.name);
  }),
);
registerLayerConverter('L2Normalize', (g, call) => {
  const x = g.native(singleInput(call));
  return [{ name: l2Normalize(g, x.name, call.name, numberField(call, 'epsilon', 1e-12)), nchw: false }];
});
