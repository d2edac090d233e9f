/**
 * @file Sum over a leading or trailing block of axes for the ort-cpu backend. tfjs's cpu Sum
 * transposes the input so the reduced axes come last, which for a bias gradient (sum over batch,
 * height and width of [128, 28, 28, 32]) costs a full generic transpose; summing the leading block in
 * place avoids it. The order of additions and the double-precision accumulator are those of the cpu
 * kernel, so results are identical. Other axis sets, dtypes other than float32, go to the cpu kernel.
 */
import * as tf from '@tensorflow/tfjs';
import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import { cpuKernel } from './cpu-fallback.js';

type KernelArgs = Parameters<tf.KernelFunc>[0];

function sum(args: KernelArgs): tf.TensorInfo | tf.TensorInfo[] {
  const backend = args.backend as MathBackendCPU;
  const { x } = args.inputs as { x: tf.TensorInfo };
  const { axis, keepDims } = args.attrs as { axis: number | number[]; keepDims: boolean };
  const axes = tf.util.parseAxisParam(axis, x.shape).sort((a, b) => a - b);
  const rank = x.shape.length;
  const leading = axes.every((a, i) => a === i);
  const trailing = axes.every((a, i) => a === rank - axes.length + i);
  if (x.dtype !== 'float32' || axes.length === 0 || !(leading || trailing)) return cpuKernel('Sum', args);
  const values = backend.data.get(x.dataId).values as Float32Array;
  const reduced = axes.reduce((p, a) => p * (x.shape[a] as number), 1);
  const kept = values.length / Math.max(reduced, 1);
  const out = new Float32Array(kept);
  if (trailing) {
    for (let i = 0; i < kept; i++) {
      let s = 0;
      const offset = i * reduced;
      for (let j = 0; j < reduced; j++) s += values[offset + j] as number;
      out[i] = s;
    }
  } else {
    const acc = new Float64Array(kept);
    for (let r = 0; r < reduced; r++) {
      const offset = r * kept;
      for (let i = 0; i < kept; i++) acc[i] = (acc[i] as number) + (values[offset + i] as number);
    }
    out.set(acc);
  }
  const outShape = x.shape.filter((_, i) => !axes.includes(i));
  const shape = keepDims ? tf.backend_util.expandShapeToKeepDim(outShape, axes) : outShape;
  return backend.makeTensorInfo(shape, 'float32', out);
}

/** The reduction kernels by tfjs kernel name. */
export const REDUCTION_KERNELS: Readonly<Record<string, tf.KernelFunc>> = { Sum: sum };
