/**
 * @file The graph under construction while a TensorFlow.js model is converted to ONNX: nodes and
 * initializers with unique names, plus the layout bookkeeping that lets convolutional layers run in
 * ONNX's NCHW while TensorFlow.js thinks in NHWC.
 *
 * Every converted tensor is a {@link TensorValue}: its ONNX name, its *logical* shape (the shape
 * TensorFlow.js gives it, batch first) and whether the ONNX tensor holds that rank-4 channels-last
 * tensor transposed to NCHW (`nchw: true`). Converters ask for the layout they need
 * ({@link GraphContext.channelsFirst}, {@link GraphContext.native}); a Transpose is inserted only when
 * the value is in the other layout, and at most once per value. So a chain of convolutions, batch
 * norms and activations on an NCHW graph input runs without any transpose, and a Flatten or Reshape
 * after them gets exactly one (back to NHWC order, so the flattened features match TensorFlow.js).
 */
import type * as tf from '@tensorflow/tfjs';
import { floatTensor, int64Tensor, node, type AttributeValue, type NodeProto, type TensorProto } from '../../onnx/builder.js';

/** A converted tensor. See the file comment. */
export interface TensorValue {
  /** Name of the ONNX value. */
  readonly name: string;
  /** Logical (TensorFlow.js) shape, batch first; null for unknown sizes. */
  readonly shape: readonly (number | null)[];
  /** The ONNX tensor is the rank-4 logical NHWC tensor transposed to NCHW. */
  readonly nchw: boolean;
}

/** Axis `i` of a logical NHWC tensor is axis `NHWC_TO_NCHW_AXIS[i]` of its NCHW form. */
export const NHWC_TO_NCHW_AXIS: readonly number[] = [0, 2, 3, 1];

/**
 * `data`, a row-major array of `shape`, with its axes permuted: axis i of the result is axis
 * `perm[i]` of the input (numpy's `transpose`).
 */
export function permuteArray(data: Float32Array, shape: readonly number[], perm: readonly number[]): Float32Array {
  const rank = shape.length;
  const outShape = perm.map((p) => shape[p] as number);
  const inStrides = new Array<number>(rank).fill(1);
  for (let i = rank - 2; i >= 0; i--) inStrides[i] = (inStrides[i + 1] as number) * (shape[i + 1] as number);
  const strideOfOut = perm.map((p) => inStrides[p] as number);
  const out = new Float32Array(data.length);
  const index = new Array<number>(rank).fill(0);
  let source = 0;
  for (let o = 0; o < out.length; o++) {
    out[o] = data[source] as number;
    for (let axis = rank - 1; axis >= 0; axis--) {
      index[axis] = (index[axis] as number) + 1;
      source += strideOfOut[axis] as number;
      if ((index[axis] as number) < (outShape[axis] as number)) break;
      source -= (index[axis] as number) * (strideOfOut[axis] as number);
      index[axis] = 0;
    }
  }
  return out;
}

/**
 * The TensorFlow.js weight an initializer holds, and the permutation of its axes on the way (numpy's
 * `transpose`: axis i of the initializer is axis `perm[i]` of the weight), so that trained values can be
 * written back into the weight (the graph trainer trains a converted model).
 */
export interface WeightSource {
  readonly variable: tf.LayerVariable;
  readonly perm?: readonly number[];
}

/** Nodes and initializers of a graph being built, with unique value names. */
export class GraphContext {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  /** The weight behind each initializer made from one (see {@link floats}). */
  readonly weightSources = new Map<string, WeightSource>();
  private readonly used = new Set<string>();
  private readonly scalars = new Map<number, string>();
  private readonly transposed = new Map<string, TensorValue>();

  /** A fresh value name: `base`, or `base_2`, `base_3`, ... when taken. */
  unique(base: string): string {
    let name = base;
    for (let i = 2; this.used.has(name); i++) name = `${base}_${i}`;
    this.used.add(name);
    return name;
  }

  /** Marks `name` as taken (graph inputs). */
  reserve(name: string): void {
    this.used.add(name);
  }

  /** A float32 initializer named after `base`, holding the values of weight `source` when given; returns its name. */
  floats(base: string, dims: readonly number[], values: Float32Array | readonly number[], source?: WeightSource): string {
    const name = this.unique(base);
    this.initializers.push(floatTensor(name, dims, values));
    if (source) this.weightSources.set(name, source);
    return name;
  }

  /** An int64 initializer named after `base`; returns its name. */
  int64s(base: string, dims: readonly number[], values: readonly number[]): string {
    const name = this.unique(base);
    this.initializers.push(int64Tensor(name, dims, values));
    return name;
  }

  /** A float32 scalar initializer, shared by every use of the same value. */
  scalar(value: number): string {
    let name = this.scalars.get(value);
    if (name === undefined) {
      name = this.floats(`const_${String(value).replace(/[^0-9a-zA-Z]/g, '_')}`, [], [value]);
      this.scalars.set(value, name);
    }
    return name;
  }

  /** Adds a node with one output named after `base`; returns the output's name. */
  op(opType: string, inputs: readonly string[], base: string, attributes: Readonly<Record<string, AttributeValue>> = {}): string {
    const output = this.unique(base);
    this.nodes.push(node(opType, inputs, [output], attributes));
    return output;
  }

  /** `value` as an NCHW ONNX tensor (it must be rank 4); transposes a native one once. */
  channelsFirst(value: TensorValue): TensorValue {
    if (value.nchw) return value;
    return this.transpose(value, true);
  }

  /** `value` in its logical layout; transposes an NCHW one back to NHWC once. */
  native(value: TensorValue): TensorValue {
    if (!value.nchw) return value;
    return this.transpose(value, false);
  }

  /** The ONNX axis holding logical axis `axis` (negative counts from the end) of `value`. */
  physicalAxis(value: TensorValue, axis: number): number {
    const rank = value.shape.length;
    const logical = axis < 0 ? axis + rank : axis;
    return value.nchw ? (NHWC_TO_NCHW_AXIS[logical] as number) : logical;
  }

  private transpose(value: TensorValue, toNchw: boolean): TensorValue {
    const key = `${value.name}\u0000${toNchw}`;
    const cached = this.transposed.get(key);
    if (cached) return cached;
    const perm = toNchw ? [0, 3, 1, 2] : [0, 2, 3, 1];
    const name = this.op('Transpose', [value.name], `${value.name}/${toNchw ? 'nchw' : 'nhwc'}`, { perm: { ints: perm } });
    const result: TensorValue = { name, shape: value.shape, nchw: toNchw };
    this.transposed.set(key, result);
    return result;
  }
}

/**
 * Adds x / sqrt(sum(x², last axis) + epsilon) for the logical-layout value `x`, the computation of
 * the L2Normalize layer (lib/train/models/l2-normalize.ts); returns the output's name.
 */
export function l2Normalize(g: GraphContext, x: string, base: string, epsilon: number): string {
  const squared = g.op('Mul', [x, x], `${base}/squared`);
  const sum = g.op('ReduceSum', [squared, g.int64s(`${base}/axes`, [1], [-1])], `${base}/sum`, { keepdims: { i: 1 } });
  const norm = g.op('Sqrt', [g.op('Add', [sum, g.scalar(epsilon)], `${base}/sum_eps`)], `${base}/norm`);
  return g.op('Div', [x, norm], base);
}
