/**
 * @file Sum and Mean over one contiguous block of axes for the ort-cpu backend (leading axes: a bias
 * or batch-norm gradient; trailing axes; middle axes: global average pooling over height and width).
 * tfjs's cpu kernels transpose the input so the reduced axes come last (a full generic transpose of,
 * say, [128, 28, 28, 32]), and its Mean first divides every element into a new tensor; summing the
 * block in place avoids both (tfjs's cpu Mean over [128, 28, 28, 32] took 400 ms; this takes a few).
 *
 * The result is bit-identical to the cpu kernels': each output adds its elements in the order the cpu
 * kernel does (row-major over the reduced axes, as they were given), in a double-precision accumulator
 * starting from 0, and Mean adds `fround(x / n)` per element as the cpu Mean's float32 division does.
 * Axes given out of ascending order, non-contiguous axis sets and dtypes other than float32 go to
 * the cpu kernels.
 */
import * as tf from '@tensorflow/tfjs';
import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import { cpuKernel } from './cpu-fallback.js';
import { float32Values } from './float32-values.js';
import { uninitialisedFloat32Array } from './output-arrays.js';
import type { KernelArgs } from './kernel-args.js';


/** A reduction over `reduced` consecutive elements of stride `inner`, repeated over `outer` blocks. */
export interface ReductionBlock {
  outer: number;
  reduced: number;
  inner: number;
}

/**
 * The block layout of reducing `shape` over `axes` (already normalised to non-negative), or null when
 * the axes are empty, not in ascending order, or not contiguous.
 */
export function reductionBlock(shape: readonly number[], axes: readonly number[]): ReductionBlock | null {
  if (axes.length === 0) return null;
  const first = axes[0] as number;
  if (!axes.every((a, i) => a === first + i)) return null;
  const size = (from: number, to: number): number => shape.slice(from, to).reduce((p, d) => p * d, 1);
  const last = first + axes.length - 1;
  return { outer: size(0, first), reduced: size(first, last + 1), inner: size(last + 1, shape.length) };
}

/** Elements per cache block of the column-wise summation (64 kB of float32). */
const REDUCTION_BLOCK_ELEMENTS = 16384;

/** Sums (or, with `divisor`, sums `fround(x / divisor)`) over the block; double accumulators. */
function reduceBlock(values: Float32Array, block: ReductionBlock, divisor: number | null): Float32Array {
  const { outer, reduced, inner } = block;
  const out = uninitialisedFloat32Array(outer * inner);
  if (inner === 1) {
    for (let o = 0; o < outer; o++) {
      const offset = o * reduced;
      let s = 0;
      if (divisor === null) for (let j = 0; j < reduced; j++) s += values[offset + j] as number;
      else for (let j = 0; j < reduced; j++) s += Math.fround((values[offset + j] as number) / divisor);
      out[o] = s;
    }
    return out;
  }
  // Rows of the reduced axis go through in blocks that stay in cache; within a block each column is
  // summed in a local variable (a register) instead of through the accumulator array. Every column
  // still adds its rows in ascending order from 0, so the sums are the same.
  const acc = new Float64Array(inner);
  const blockRows = Math.max(1, Math.floor(REDUCTION_BLOCK_ELEMENTS / inner));
  for (let o = 0; o < outer; o++) {
    acc.fill(0);
    const base = o * reduced * inner;
    for (let r0 = 0; r0 < reduced; r0 += blockRows) {
      const r1 = Math.min(reduced, r0 + blockRows);
      for (let i = 0; i < inner; i++) {
        let sum = acc[i] as number;
        const end = base + r1 * inner + i;
        if (divisor === null) for (let k = base + r0 * inner + i; k < end; k += inner) sum += values[k] as number;
        else for (let k = base + r0 * inner + i; k < end; k += inner) sum += Math.fround((values[k] as number) / divisor);
        acc[i] = sum;
      }
    }
    out.set(acc, o * inner);
  }
  return out;
}

function reduction(name: 'Sum' | 'Mean') {
  return (args: KernelArgs): tf.TensorInfo | tf.TensorInfo[] => {
    const backend = args.backend as MathBackendCPU;
    const { x } = args.inputs as { x: tf.TensorInfo };
    const { axis, keepDims } = args.attrs as { axis: number | number[]; keepDims: boolean };
    if (x.dtype !== 'float32') return cpuKernel(name, args);
    const axes = tf.util.parseAxisParam(axis, x.shape);
    const block = reductionBlock(x.shape, axes);
    if (!block) return cpuKernel(name, args);
    const values = float32Values(backend, x);
    const out = reduceBlock(values, block, name === 'Mean' ? block.reduced : null);
    const outShape = x.shape.filter((_, i) => !axes.includes(i));
    const shape = keepDims ? tf.backend_util.expandShapeToKeepDim(outShape, axes) : outShape;
    return backend.makeTensorInfo(shape, 'float32', out);
  };
}

/** The reduction kernels by tfjs kernel name. */
export const REDUCTION_KERNELS: Readonly<Record<string, tf.KernelFunc>> = { Sum: reduction('Sum'), Mean: reduction('Mean') };
