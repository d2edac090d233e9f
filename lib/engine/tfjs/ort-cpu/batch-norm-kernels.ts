/**
 * @file Batch normalisation for the ort-cpu backend in plain loops over float32 arrays:
 * - FusedBatchNorm (tfjs's kernel: inference, and the normalisation step of tfjs-layers'
 *   BatchNormalization where the fused training kernels are not used) and Tile, which tfjs's
 *   FusedBatchNorm gradient uses to spread the per-channel 1/sqrt(variance + epsilon) over the input's
 *   shape. tfjs's cpu Tile computes a multi-dimensional index per output element through
 *   `TensorBuffer` (250 ms for [1, 1, 1, 32] to [128, 28, 28, 32]); its cpu FusedBatchNorm keeps four
 *   wrapping counters per element.
 * - The fused training kernels of ops/batch-norm-training.ts (statistics, normalisation and the
 *   closed-form gradient in two passes over the map each; see there for the formulas), whose passes
 *   run as WebAssembly SIMD loops (wasm/batch-norm-simd.ts). Sums are accumulated in double
 *   precision per channel; results are float32.
 *
 * Tile and FusedBatchNorm are bit-identical to the cpu kernels. Tile copies values. FusedBatchNorm evaluates the cpu
 * kernel's expression `offset + (x - mean) * scale / Math.sqrt(variance + epsilon)` in double
 * precision per element (the square root per channel is the same double); it handles parameters of
 * the channel count (x's last axis) or of one element, which is how the cpu kernel's wrapping
 * counters line up with channels. Other parameter lengths and dtypes go to the cpu kernels.
 */
import * as tf from '@tensorflow/tfjs';
import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import { BATCH_NORM_TRAINING_GRAD_KERNEL, BATCH_NORM_TRAINING_KERNEL } from '../ops/batch-norm-training.js';
import { batchNormTrainingBackward, batchNormTrainingForward } from '../wasm/batch-norm-simd.js';
import { cpuKernel } from './cpu-fallback.js';
import { float32Values } from './float32-values.js';
import { uninitialisedFloat32Array } from './output-arrays.js';
import type { KernelArgs } from './kernel-args.js';


/** `values` (shape `shape`) repeated `reps[d]` times along each axis d, as tfjs's Tile does. */
export function tileValues(values: Float32Array, shape: readonly number[], reps: readonly number[]): Float32Array {
  let current = values;
  const currentShape = [...shape];
  // Innermost axis first: repeating axis d repeats each contiguous block of axes d.. as a whole.
  for (let d = shape.length - 1; d >= 0; d--) {
    const rep = reps[d] as number;
    if (rep === 1) continue;
    const outer = currentShape.slice(0, d).reduce((p, s) => p * s, 1);
    const block = currentShape.slice(d).reduce((p, s) => p * s, 1);
    const next = uninitialisedFloat32Array(outer * block * rep);
    for (let o = 0; o < outer; o++) {
      const source = current.subarray(o * block, (o + 1) * block);
      for (let k = 0; k < rep; k++) {
        const start = (o * rep + k) * block;
        if (block >= 32) next.set(source, start);
        else for (let j = 0; j < block; j++) next[start + j] = source[j] as number;
      }
    }
    current = next;
    currentShape[d] = (currentShape[d] as number) * rep;
  }
  return current === values ? values.slice() : current;
}

function tile(args: KernelArgs): tf.TensorInfo | tf.TensorInfo[] {
  const backend = args.backend as MathBackendCPU;
  const { x } = args.inputs as { x: tf.TensorInfo };
  const { reps } = args.attrs as { reps: number[] };
  if (x.dtype !== 'float32' || reps.length !== x.shape.length) return cpuKernel('Tile', args);
  const out = tileValues(float32Values(backend, x), x.shape, reps);
  return backend.makeTensorInfo(
    x.shape.map((d, i) => d * (reps[i] as number)),
    'float32',
    out,
  );
}

function batchNorm(args: KernelArgs): tf.TensorInfo | tf.TensorInfo[] {
  const backend = args.backend as MathBackendCPU;
  const { x, mean, variance, scale, offset } = args.inputs as Record<string, tf.TensorInfo | undefined>;
  if (!x || !mean || !variance) return cpuKernel('FusedBatchNorm', args);
  const channels = x.shape.length > 0 ? (x.shape[x.shape.length - 1] as number) : 1;
  const params = [mean, variance, scale, offset];
  const fits = (t: tf.TensorInfo | undefined): boolean => t === undefined || (t.dtype === 'float32' && [1, channels].includes(tf.util.sizeFromShape(t.shape)));
  // The cpu kernel asserts equal ranks of the parameters; keep its checks and messages for anything odd.
  const ranksAgree = params.every((t) => t === undefined || t.shape.length === mean.shape.length);
  if (x.dtype !== 'float32' || channels === 0 || !ranksAgree || !params.every(fits)) return cpuKernel('FusedBatchNorm', args);
  const epsilon = (args.attrs?.['varianceEpsilon'] as number | null | undefined) ?? 0.001;
  const read = (t: tf.TensorInfo | undefined, fallback: number): Float64Array => {
    const out = new Float64Array(channels);
    if (t === undefined) return out.fill(fallback);
    const v = float32Values(backend, t);
    for (let c = 0; c < channels; c++) out[c] = v[v.length === 1 ? 0 : c] as number;
    return out;
  };
  const m = read(mean, 0);
  const s = read(scale, 1);
  const off = read(offset, 0);
  const v = read(variance, 0);
  const root = v.map((vc) => Math.sqrt(vc + epsilon));
  const xs = float32Values(backend, x);
  const out = uninitialisedFloat32Array(xs.length);
  // Per channel over cache-sized blocks of rows, the channel's parameters in locals.
  const rows = xs.length / channels;
  const blockRows = Math.max(1, Math.floor(16384 / channels));
  for (let r0 = 0; r0 < rows; r0 += blockRows) {
    const end = Math.min(rows, r0 + blockRows) * channels;
    for (let c = 0; c < channels; c++) {
      const offC = off[c] as number;
      const mC = m[c] as number;
      const sC = s[c] as number;
      const rootC = root[c] as number;
      for (let k = r0 * channels + c; k < end; k += channels) out[k] = offC + (((xs[k] as number) - mC) * sC) / rootC;
    }
  }
  return backend.makeTensorInfo([...x.shape], 'float32', out);
}

/** The float32 values of `t`, after checking that `t` is float32 of `size` elements (a kernel precondition). */
function checkedFloat32Values(backend: MathBackendCPU, kernel: string, name: string, t: tf.TensorInfo | undefined, size: number): Float32Array {
  if (t === undefined || t.dtype !== 'float32' || tf.util.sizeFromShape(t.shape) !== size) {
    const got = t === undefined ? 'none' : `${t.dtype} [${t.shape.join(', ')}]`;
    throw new Error(`${kernel}: input ${name} must be float32 with ${size} elements, got ${got}`);
  }
  return float32Values(backend, t);
}

/** Channels (the last axis) and rows (the product of the others) of `x`. */
function channelsAndRows(x: tf.TensorInfo): { channels: number; rows: number } {
  const channels = x.shape.length > 0 ? (x.shape[x.shape.length - 1] as number) : 1;
  return { channels, rows: channels === 0 ? 0 : tf.util.sizeFromShape(x.shape) / channels };
}

/** Forward pass in training mode: statistics of the batch, then the normalisation (wasm/batch-norm-simd.ts). */
function batchNormTraining(args: KernelArgs): tf.TensorInfo[] {
  const backend = args.backend as MathBackendCPU;
  const { x, scale, offset } = args.inputs as Record<string, tf.TensorInfo | undefined>;
  if (x === undefined) throw new Error(`${BATCH_NORM_TRAINING_KERNEL}: input x is missing`);
  const { channels, rows } = channelsAndRows(x);
  const xs = checkedFloat32Values(backend, BATCH_NORM_TRAINING_KERNEL, 'x', x, rows * channels);
  const gamma = checkedFloat32Values(backend, BATCH_NORM_TRAINING_KERNEL, 'scale', scale, channels);
  const beta = checkedFloat32Values(backend, BATCH_NORM_TRAINING_KERNEL, 'offset', offset, channels);
  const epsilon = args.attrs?.['epsilon'] as number;
  if (!(rows > 0)) throw new Error(`${BATCH_NORM_TRAINING_KERNEL}: x of shape [${x.shape.join(', ')}] has no values per channel`);

  const y = uninitialisedFloat32Array(xs.length);
  const { mean, variance, inverseStd } = batchNormTrainingForward(xs, rows, channels, gamma, beta, epsilon, y);
  return [
    backend.makeTensorInfo([...x.shape], 'float32', y),
    backend.makeTensorInfo([channels], 'float32', mean),
    backend.makeTensorInfo([channels], 'float32', variance),
    backend.makeTensorInfo([channels], 'float32', inverseStd),
  ];
}

/** The closed-form gradient: per-channel sums of dy and dy · (x - mean), then dx (wasm/batch-norm-simd.ts). */
function batchNormTrainingGrad(args: KernelArgs): tf.TensorInfo[] {
  const backend = args.backend as MathBackendCPU;
  const { dy, x, mean, inverseStd, scale } = args.inputs as Record<string, tf.TensorInfo | undefined>;
  if (x === undefined) throw new Error(`${BATCH_NORM_TRAINING_GRAD_KERNEL}: input x is missing`);
  const { channels, rows } = channelsAndRows(x);
  const name = BATCH_NORM_TRAINING_GRAD_KERNEL;
  const xs = checkedFloat32Values(backend, name, 'x', x, rows * channels);
  const dys = checkedFloat32Values(backend, name, 'dy', dy, rows * channels);
  const mu = checkedFloat32Values(backend, name, 'mean', mean, channels);
  const s = checkedFloat32Values(backend, name, 'inverseStd', inverseStd, channels);
  const gamma = checkedFloat32Values(backend, name, 'scale', scale, channels);

  const dx = uninitialisedFloat32Array(xs.length);
  const { dScale, dOffset } = batchNormTrainingBackward(dys, xs, rows, channels, mu, s, gamma, dx);
  return [backend.makeTensorInfo([...x.shape], 'float32', dx), backend.makeTensorInfo([channels], 'float32', dScale), backend.makeTensorInfo([channels], 'float32', dOffset)];
}

/** The batch-normalisation kernels by tfjs kernel name. */
export const BATCH_NORM_KERNELS: Readonly<Record<string, tf.KernelFunc>> = {
  FusedBatchNorm: batchNorm,
  Tile: tile,
  [BATCH_NORM_TRAINING_KERNEL]: batchNormTraining,
  [BATCH_NORM_TRAINING_GRAD_KERNEL]: batchNormTrainingGrad,
};
