/**
 * @file The ort-cpu backend's onnxruntime kernels: the matrix products and convolutions that
 * dominate training time (BatchMatMul, _FusedMatMul, Conv2D, FusedConv2D, Conv2DBackpropInput,
 * Conv2DBackpropFilter, DepthwiseConv2dNative, FusedDepthwiseConv2D and the two depthwise gradients).
 *
 * Each kernel reads its inputs' float32 arrays from the backend, runs a cached single-op graph
 * synchronously through {@link OrtSyncRuntime} into an output array allocated here
 * (onnxruntime writes into it), and hands that array to the backend without copying. What a graph
 * does not cover (non-float32 inputs, NCHW data, a rounding mode whose output size differs from
 * onnxruntime's floor rule) is passed to tfjs's own `cpu` kernel of the same name, which works on
 * this backend because the backend is a `MathBackendCPU`.
 *
 * Regular convolutions run on onnxruntime's blocked-layout kernels where the processor has them
 * (blocked-conv-models.ts: the forward pass, the input gradient as one stride-1 convolution per output
 * phase, the filter gradient of large inputs); depthwise convolutions, geometries the blocked graphs
 * do not cover and processors without the kernels use the NCHW graphs of op-models.ts (`Conv` and
 * `ConvTranspose` between layout transposes, im2col and `Gemm` for the filter gradient).
 */
import * as tf from '@tensorflow/tfjs';
import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import { cpuKernel } from './cpu-fallback.js';
import { float32Values } from './float32-values.js';
import {
  blockedConvBackpropFilterModel,
  blockedConvBackpropInputApplies,
  blockedConvBackpropInputModel,
  blockedConvModel,
} from './blocked-conv-models.js';
import {
  convBackpropFilterModel,
  convBackpropInputModel,
  convModel,
  epilogueSignature,
  matMulModel,
  type ConvGeometry,
  type Epilogue,
  type FusedActivation,
} from './op-models.js';
import type { FloatArray, OrtSyncRuntime } from './ort-sync-runtime.js';
import { blockOfProbe, nchwcProbeModel, nchwcReadsChannels } from '../../../onnx/nchwc.js';
import type { KernelArgs } from './kernel-args.js';

/** The backend the kernels run on: tfjs's cpu backend plus the onnxruntime runtime. */
export interface OrtKernelBackend extends MathBackendCPU {
  readonly runtime: OrtSyncRuntime;
}

type TensorInfo = tf.TensorInfo;

function floatOf(backend: OrtKernelBackend, t: TensorInfo): FloatArray {
  return { data: float32Values(backend, t), dims: t.shape };
}

function allFloat32(...tensors: Array<TensorInfo | undefined>): boolean {
  return tensors.every((t) => t === undefined || t.dtype === 'float32');
}

function epilogueOf(bias: TensorInfo | undefined, prelu: TensorInfo | undefined, attrs: tf.NamedAttrMap): Epilogue {
  const activation = ((attrs['activation'] as string | undefined) ?? 'linear') as FusedActivation;
  return {
    biasShape: bias ? bias.shape : null,
    activation,
    preluShape: activation === 'prelu' && prelu ? prelu.shape : null,
    leakyreluAlpha: (attrs['leakyreluAlpha'] as number | undefined) ?? 0.2,
  };
}

function epilogueFeeds(backend: OrtKernelBackend, bias: TensorInfo | undefined, prelu: TensorInfo | undefined, e: Epilogue): Record<string, FloatArray> {
  const feeds: Record<string, FloatArray> = {};
  if (bias) feeds['bias'] = floatOf(backend, bias);
  if (e.activation === 'prelu' && prelu) feeds['prelu'] = floatOf(backend, prelu);
  return feeds;
}

function broadcastShapes(a: readonly number[], b: readonly number[]): number[] {
  return tf.backend_util.assertAndGetBroadcastShape(a as number[], b as number[]);
}

/** Output shape of tfjs's BatchMatMul: broadcast batch dimensions, then [m, n]. */
function matMulOutShape(a: readonly number[], b: readonly number[], transposeA: boolean, transposeB: boolean): number[] {
  const m = transposeA ? a[a.length - 1] : a[a.length - 2];
  const n = transposeB ? b[b.length - 2] : b[b.length - 1];
  const batch = broadcastShapes(a.slice(0, -2), b.slice(0, -2));
  return [...batch, m as number, n as number];
}

function matMul(args: KernelArgs, fused: boolean): TensorInfo | TensorInfo[] {
  const backend = args.backend as OrtKernelBackend;
  const { a, b, bias, preluActivationWeights: prelu } = args.inputs as Record<string, TensorInfo | undefined>;
  if (!a || !b || !allFloat32(a, b, bias, prelu) || a.shape.length < 2 || b.shape.length < 2) return cpuKernel(fused ? '_FusedMatMul' : 'BatchMatMul', args);
  const transposeA = Boolean(args.attrs?.['transposeA']);
  const transposeB = Boolean(args.attrs?.['transposeB']);
  const epilogue = fused ? epilogueOf(bias, prelu, args.attrs ?? {}) : { biasShape: null, activation: 'linear' as const, preluShape: null, leakyreluAlpha: 0 };
  const outShape = matMulOutShape(a.shape, b.shape, transposeA, transposeB);
  const signature = `matmul|${a.shape.join('x')}|${b.shape.join('x')}|${transposeA}|${transposeB}|${epilogueSignature(epilogue)}`;
  const session = backend.runtime.session(signature, () => matMulModel(a.shape, b.shape, transposeA, transposeB, outShape, epilogue));
  const [y] = session.run({ a: floatOf(backend, a), b: floatOf(backend, b), ...epilogueFeeds(backend, bias, prelu, epilogue) }, [outShape]);
  return backend.makeTensorInfo(outShape, 'float32', (y as FloatArray).data);
}

/** tfjs's convolution geometry, or null when onnxruntime's output size would differ. */
function geometryOf(info: tf.backend_util.Conv2DInfo): ConvGeometry | null {
  const { top, left, bottom, right } = info.padInfo;
  if ([top, left, bottom, right].some((p) => p < 0)) return null;
  const onnxOut = (size: number, before: number, after: number, effective: number, stride: number): number => Math.floor((size + before + after - effective) / stride) + 1;
  if (onnxOut(info.inHeight, top, bottom, info.effectiveFilterHeight, info.strideHeight) !== info.outHeight) return null;
  if (onnxOut(info.inWidth, left, right, info.effectiveFilterWidth, info.strideWidth) !== info.outWidth) return null;
  return { strides: [info.strideHeight, info.strideWidth], dilations: [info.dilationHeight, info.dilationWidth], pads: [top, left, bottom, right] };
}

const blockSizes = new WeakMap<OrtSyncRuntime, number>();

/** Environment variable that, set to `0`, keeps every convolution on the NCHW graphs (op-models.ts). */
export const ORT_CPU_BLOCKED_ENV = 'DML_ORT_CPU_BLOCKED';

/**
 * The channel block of onnxruntime's blocked-layout convolution kernels on this processor (16 with
 * AVX-512, 8 with AVX2), probed once per runtime; 0 where they are missing or do not run, or while
 * {@link ORT_CPU_BLOCKED_ENV} is `0`, and the convolutions then use the NCHW graphs.
 */
export function blockedLayoutBlockSize(runtime: OrtSyncRuntime): number {
  if (process.env[ORT_CPU_BLOCKED_ENV] === '0') return 0;
  let block = blockSizes.get(runtime);
  if (block === undefined) {
    try {
      const [probe] = runtime.compile(nchwcProbeModel()).run({ x: { data: new Float32Array(4), dims: [1, 1, 1, 4] } });
      block = blockOfProbe(probe?.dims) ?? 0;
    } catch {
      block = 0;
    }
    blockSizes.set(runtime, block);
  }
  return block;
}

/**
 * Largest im2col patch matrix (elements) for which a filter gradient uses im2col and one matrix
 * product; larger ones use the blocked kernels (blocked-conv-models.ts), which copy the input twice
 * instead of kh*kw/(sh*sw) times. Measured (2 cores, AVX-512, batch 128): im2col faster below about
 * 2M patch elements (28x28x1: 2.0 vs 4.0 ms), even near 3M, the blocked kernels faster from about 4M
 * (28x28x8: 16.1 vs 10.3 ms; the convnet's 64x64x3 stride 2: 17.9 vs 9.4 ms).
 */
const IM2COL_MAX_PATCHES = 1 << 22;

type ConvAttrs = {
  strides: number | [number, number];
  pad: 'same' | 'valid' | number | tf.backend_util.ExplicitPadding;
  dilations?: number | [number, number];
  dimRoundingMode?: 'floor' | 'round' | 'ceil';
  dataFormat?: 'NHWC' | 'NCHW';
};

function convInfoOf(inShape: readonly number[], filterShape: readonly number[], attrs: ConvAttrs, depthwise: boolean): tf.backend_util.Conv2DInfo {
  return tf.backend_util.computeConv2DInfo(
    inShape as [number, number, number, number],
    filterShape as [number, number, number, number],
    attrs.strides,
    attrs.dilations ?? 1,
    attrs.pad,
    attrs.dimRoundingMode,
    depthwise,
    'channelsLast',
  );
}

function isNhwc(attrs: ConvAttrs): boolean {
  return attrs.dataFormat === undefined || attrs.dataFormat === 'NHWC';
}

function conv(name: string, depthwise: boolean, fused: boolean) {
  return (args: KernelArgs): TensorInfo | TensorInfo[] => {
    const backend = args.backend as OrtKernelBackend;
    const { x, filter, bias, preluActivationWeights: prelu } = args.inputs as Record<string, TensorInfo | undefined>;
    const attrs = args.attrs as unknown as ConvAttrs;
    if (!x || !filter || !allFloat32(x, filter, bias, prelu) || x.shape.length !== 4 || !isNhwc(attrs)) return cpuKernel(name, args);
    const info = convInfoOf(x.shape, filter.shape, attrs, depthwise);
    const geometry = geometryOf(info);
    if (!geometry) return cpuKernel(name, args);
    const epilogue = fused ? epilogueOf(bias, prelu, args.attrs ?? {}) : { biasShape: null, activation: 'linear' as const, preluShape: null, leakyreluAlpha: 0 };
    const outShape = info.outShape;
    const block = depthwise ? 0 : blockedLayoutBlockSize(backend.runtime);
    const blocked = block > 0 && nchwcReadsChannels(x.shape[3] as number, block);
    const signature = `${name}|${blocked ? `blocked${block}` : 'nchw'}|${x.shape.join('x')}|${filter.shape.join('x')}|${JSON.stringify(geometry)}|${epilogueSignature(epilogue)}`;
    const session = backend.runtime.session(signature, () =>
      blocked ? blockedConvModel(x.shape, filter.shape, geometry, outShape, epilogue, block) : convModel(x.shape, filter.shape, depthwise, geometry, outShape, epilogue),
    );
    const [y] = session.run({ x: floatOf(backend, x), w: floatOf(backend, filter), ...epilogueFeeds(backend, bias, prelu, epilogue) }, [outShape]);
    return backend.makeTensorInfo(outShape, 'float32', (y as FloatArray).data);
  };
}

function convBackpropInput(name: string, depthwise: boolean) {
  return (args: KernelArgs): TensorInfo | TensorInfo[] => {
    const backend = args.backend as OrtKernelBackend;
    const { dy, filter } = args.inputs as Record<string, TensorInfo | undefined>;
    const attrs = args.attrs as unknown as ConvAttrs & { inputShape: number[] };
    if (!dy || !filter || !allFloat32(dy, filter) || !isNhwc(attrs)) return cpuKernel(name, args);
    const info = convInfoOf(attrs.inputShape, filter.shape, attrs, depthwise);
    const geometry = geometryOf(info);
    if (!geometry) return cpuKernel(name, args);
    const [top, left, bottom, right] = geometry.pads;
    const produced = (outSize: number, stride: number, effective: number, before: number, after: number): number => stride * (outSize - 1) + effective - before - after;
    const outputPadding: [number, number] = [
      info.inHeight - produced(info.outHeight, info.strideHeight, info.effectiveFilterHeight, top, bottom),
      info.inWidth - produced(info.outWidth, info.strideWidth, info.effectiveFilterWidth, left, right),
    ];
    if (outputPadding[0] < 0 || outputPadding[1] < 0 || outputPadding[0] >= Math.max(info.strideHeight, info.dilationHeight) || outputPadding[1] >= Math.max(info.strideWidth, info.dilationWidth)) {
      return cpuKernel(name, args);
    }
    const inShape = info.inShape;
    const block = depthwise ? 0 : blockedLayoutBlockSize(backend.runtime);
    const blocked = block > 0 && blockedConvBackpropInputApplies(dy.shape, filter.shape, geometry, inShape, block);
    const signature = `${name}|${blocked ? `blocked${block}` : 'nchw'}|${dy.shape.join('x')}|${filter.shape.join('x')}|${JSON.stringify(geometry)}|${outputPadding.join(',')}|${inShape.join('x')}`;
    const session = backend.runtime.session(signature, () =>
      blocked
        ? (blockedConvBackpropInputModel(dy.shape, filter.shape, geometry, inShape, block) as Uint8Array)
        : convBackpropInputModel(dy.shape, filter.shape, depthwise, geometry, outputPadding, inShape),
    );
    const [y] = session.run({ dy: floatOf(backend, dy), w: floatOf(backend, filter) }, [inShape]);
    return backend.makeTensorInfo([...inShape], 'float32', (y as FloatArray).data);
  };
}

function convBackpropFilter(name: string, depthwise: boolean) {
  return (args: KernelArgs): TensorInfo | TensorInfo[] => {
    const backend = args.backend as OrtKernelBackend;
    const { x, dy } = args.inputs as Record<string, TensorInfo | undefined>;
    const attrs = args.attrs as unknown as ConvAttrs & { filterShape: number[] };
    if (!x || !dy || !allFloat32(x, dy) || x.shape.length !== 4 || !isNhwc(attrs)) return cpuKernel(name, args);
    const info = convInfoOf(x.shape, attrs.filterShape, attrs, depthwise);
    const geometry = geometryOf(info);
    if (!geometry) return cpuKernel(name, args);
    const filterShape = attrs.filterShape as [number, number, number, number];
    const patches = (dy.shape[0] as number) * (dy.shape[1] as number) * (dy.shape[2] as number) * filterShape[0] * filterShape[1] * filterShape[2];
    const block = depthwise || patches <= IM2COL_MAX_PATCHES ? 0 : blockedLayoutBlockSize(backend.runtime);
    // The blocked graph reads the batch as channels (blocked-conv-models.ts).
    const blocked = block > 0 && nchwcReadsChannels(x.shape[0] as number, block);
    const signature = `${name}|${blocked ? `blocked${block}` : 'nchw'}|${x.shape.join('x')}|${dy.shape.join('x')}|${JSON.stringify(geometry)}|${filterShape.join('x')}`;
    const session = backend.runtime.session(signature, () =>
      blocked
        ? (blockedConvBackpropFilterModel(x.shape, dy.shape, geometry, filterShape, block) as Uint8Array)
        : convBackpropFilterModel(x.shape, dy.shape, depthwise, geometry, filterShape),
    );
    const [y] = session.run({ x: floatOf(backend, x), dy: floatOf(backend, dy) }, [filterShape]);
    return backend.makeTensorInfo([...filterShape], 'float32', (y as FloatArray).data);
  };
}

/** The onnxruntime kernels by tfjs kernel name. */
export const HEAVY_KERNELS: Readonly<Record<string, tf.KernelFunc>> = {
  BatchMatMul: (args) => matMul(args, false),
  _FusedMatMul: (args) => matMul(args, true),
  Conv2D: conv('Conv2D', false, false),
  FusedConv2D: conv('FusedConv2D', false, true),
  DepthwiseConv2dNative: conv('DepthwiseConv2dNative', true, false),
  FusedDepthwiseConv2D: conv('FusedDepthwiseConv2D', true, true),
  Conv2DBackpropInput: convBackpropInput('Conv2DBackpropInput', false),
  DepthwiseConv2dNativeBackpropInput: convBackpropInput('DepthwiseConv2dNativeBackpropInput', true),
  Conv2DBackpropFilter: convBackpropFilter('Conv2DBackpropFilter', false),
  DepthwiseConv2dNativeBackpropFilter: convBackpropFilter('DepthwiseConv2dNativeBackpropFilter', true),
};
