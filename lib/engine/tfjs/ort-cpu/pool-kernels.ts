/**
 * @file Max pooling for the ort-cpu backend over NHWC float32 arrays: MaxPool and its gradient
 * MaxPoolGrad. The window search (maxima and their positions) is a WebAssembly SIMD kernel
 * (wasm/relu-pool-kernels.ts: four channels per instruction, comparisons as lane masks); the gradient
 * a plain loop that routes each dy to its window's maximum. tfjs's cpu MaxPoolGrad indexes through
 * `TensorBuffer.get` per element and took over 800 ms per call on the small CNN's first pooling layer
 * (batch 128, 28 x 28 x 32); these take a few milliseconds.
 *
 * They reproduce tfjs's cpu semantics exactly: the window is clipped to the input (padding never
 * wins), the maximum is the first strictly greater value in row-major window order (NaN never wins;
 * an all-padding or all-NaN window gives -Infinity and routes no gradient), and each input position
 * of the gradient sums, in double precision and in output order, the dy of every window whose maximum
 * it is. Other dtypes and ranks go to the cpu kernels.
 */
import * as tf from '@tensorflow/tfjs';
import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import { cpuKernel } from './cpu-fallback.js';
import { float32Values } from './float32-values.js';
import { uninitialisedFloat32Array } from './output-arrays.js';
import { maxPoolPositions } from '../wasm/relu-pool-kernels.js';
import type { KernelArgs } from './kernel-args.js';

type PoolAttrs = { filterSize: number | [number, number]; strides: number | [number, number]; pad: 'valid' | 'same' | number; dimRoundingMode?: 'floor' | 'round' | 'ceil' };

/**
 * For each output element (NHWC order) the flat input index of its window's maximum, or -1; also
 * writes the maxima into `out` when given. Runs the WebAssembly SIMD kernel.
 */
function argmaxPositions(x: Float32Array, info: tf.backend_util.Conv2DInfo, out: Float32Array | null): Int32Array {
  return maxPoolPositions(
    x,
    {
      batchSize: info.batchSize,
      inHeight: info.inHeight,
      inWidth: info.inWidth,
      channels: info.inChannels,
      outHeight: info.outHeight,
      outWidth: info.outWidth,
      strideHeight: info.strideHeight,
      strideWidth: info.strideWidth,
      filterHeight: info.effectiveFilterHeight,
      filterWidth: info.effectiveFilterWidth,
      padTop: info.padInfo.top,
      padLeft: info.padInfo.left,
    },
    out,
  );
}

function poolInfo(x: tf.TensorInfo, attrs: PoolAttrs): tf.backend_util.Conv2DInfo {
  return tf.backend_util.computePool2DInfo(x.shape as [number, number, number, number], attrs.filterSize, attrs.strides, 1, attrs.pad, attrs.dimRoundingMode);
}

/**
 * The argmax positions of each MaxPool output, by the output's data id (tensor data is immutable):
 * MaxPoolGrad receives the forward output and reuses them instead of searching every window again.
 * An entry dies with its output's data id.
 */
const positionsByOutput = new WeakMap<object, { input: object; geometry: string; positions: Int32Array }>();

function geometryKey(info: tf.backend_util.Conv2DInfo): string {
  return [info.inShape, info.outShape, info.strideHeight, info.strideWidth, info.effectiveFilterHeight, info.effectiveFilterWidth, info.padInfo.top, info.padInfo.left].join('|');
}

function maxPool(args: KernelArgs): tf.TensorInfo | tf.TensorInfo[] {
  const backend = args.backend as MathBackendCPU;
  const { x } = args.inputs as { x: tf.TensorInfo };
  if (x.dtype !== 'float32' || x.shape.length !== 4) return cpuKernel('MaxPool', args);
  const info = poolInfo(x, args.attrs as unknown as PoolAttrs);
  const out = uninitialisedFloat32Array(tf.util.sizeFromShape(info.outShape));
  const positions = argmaxPositions(float32Values(backend, x), info, out);
  const result = backend.makeTensorInfo(info.outShape, 'float32', out);
  positionsByOutput.set(result.dataId, { input: x.dataId, geometry: geometryKey(info), positions });
  return result;
}

function maxPoolGrad(args: KernelArgs): tf.TensorInfo | tf.TensorInfo[] {
  const backend = args.backend as MathBackendCPU;
  const { dy, input, output } = args.inputs as { dy: tf.TensorInfo; input: tf.TensorInfo; output?: tf.TensorInfo };
  if (input.dtype !== 'float32' || dy.dtype !== 'float32' || input.shape.length !== 4) return cpuKernel('MaxPoolGrad', args);
  const info = poolInfo(input, args.attrs as unknown as PoolAttrs);
  const cached = output ? positionsByOutput.get(output.dataId) : undefined;
  const positions =
    cached && cached.input === input.dataId && cached.geometry === geometryKey(info)
      ? cached.positions
      : argmaxPositions(float32Values(backend, input), info, null);
  const dyValues = float32Values(backend, dy);
  if (info.strideHeight >= info.effectiveFilterHeight && info.strideWidth >= info.effectiveFilterWidth) {
    // Windows that do not overlap (the usual 2x2 stride-2 pooling): an input position is the maximum
    // of at most one window, so its sum has one term; 0 + dy is that sum exactly (-0 becomes +0 as
    // in the double sum below), written straight into a zeroed float32 array (a pooled output array:
    // a fresh zeroed one cost a page fault per 4 KiB every step).
    const grad = uninitialisedFloat32Array(tf.util.sizeFromShape(input.shape)).fill(0);
    for (let o = 0; o < positions.length; o++) {
      const p = positions[o] as number;
      if (p >= 0) grad[p] = 0 + (dyValues[o] as number);
    }
    return backend.makeTensorInfo([...input.shape], 'float32', grad);
  }
  const sums = new Float64Array(tf.util.sizeFromShape(input.shape));
  for (let o = 0; o < positions.length; o++) {
    const p = positions[o] as number;
    if (p >= 0) sums[p] = (sums[p] as number) + (dyValues[o] as number);
  }
  return backend.makeTensorInfo([...input.shape], 'float32', new Float32Array(sums));
}

/** The pooling kernels by tfjs kernel name. */
export const POOL_KERNELS: Readonly<Record<string, tf.KernelFunc>> = { MaxPool: maxPool, MaxPoolGrad: maxPoolGrad };
