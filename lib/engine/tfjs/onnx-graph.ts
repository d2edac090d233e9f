/**
 * @file The graph under construction while a TensorFlow.js model is converted to ONNX: a
 * {@link GraphBuilder} (lib/engine/graph/graph-builder.ts) with the weight behind each initializer and the
 * layout bookkeeping that lets convolutional layers run in
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
import { GraphBuilder } from '../graph/graph-builder.js';

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
 * The TensorFlow.js weight an initializer holds, and the permutation of its axes on the way (numpy's
 * `transpose`: axis i of the initializer is axis `perm[i]` of the weight), so that trained values can be
 * written back into the weight (the graph trainer trains a converted model).
 */
export interface WeightSource {
  readonly variable: tf.LayerVariable;
  readonly perm?: readonly number[];
}

/**
 * The graph a TensorFlow.js model is converted into: a {@link GraphBuilder} that also knows the weight
 * behind each initializer and each value's layout (see the file comment).
 */
export class GraphContext extends GraphBuilder {
  /** The weight behind each initializer made from one (see {@link floats}). */
  readonly weightSources = new Map<string, WeightSource>();
  private readonly transposed = new Map<string, TensorValue>();

  /** A float32 initializer named after `base`, holding the values of weight `source` when given; returns its name. */
  override floats(base: string, dims: readonly number[], values: Float32Array | readonly number[], source?: WeightSource): string {
    const name = super.floats(base, dims, values);
    if (source) this.weightSources.set(name, source);
    return name;
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
