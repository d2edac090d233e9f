/**
 * @file onnxruntime's blocked convolution layout on the CPU (NCHWc), as graphs can use it directly.
 *
 * onnxruntime's CPU provider has convolution kernels for a layout that keeps a block of channels
 * innermost, `[N, C / b, H, W, b]` with b the block size (16 with AVX-512, 8 with AVX2), written in a
 * graph as tensors of shape `[N, C', H, W]` (C' the channels rounded up to a multiple of b). At the
 * `all` optimisation level onnxruntime rewrites a Conv into that layout when its weights are constant;
 * a training graph's weights are inputs, so dmlkit's graph trainer writes the layout itself, with the
 * operators of the `com.microsoft.nchwc` domain (onnxruntime's contrib operators):
 *
 * - `ReorderInput(X)`: `[N, C, H, W]` to blocked (C a multiple of 4; the padded channels are zeros);
 *   `channels_last = 1` reads `[N, H, W, C]`;
 * - `ReorderOutput(X)` with `channels` (the real count): blocked to `[N, channels, H, W]`, or with
 *   `channels_last = 1` to `[N, H, W, channels]`;
 * - `Conv(X, W, B?)`: ONNX Conv's attributes (2-D, and `activation`); X blocked, or plain NCHW when its
 *   channels are fewer than b; W `[O', C', kh, kw]` in the blocked filter layout (OIHWBiBo: `[O' / b,
 *   C' / b, kh, kw, b_in, b_out]`; OIHWBo, `[O' / b, C, kh, kw, b_out]`, for a plain input); Y blocked.
 *
 * None of this runs on another execution provider: graphs that use it are compiled for the CPU only.
 */
import ort from './ort.js';
import { encodeModel, node, ONNX_OPSET_VERSION, tensorValueInfo, type OperatorSetId } from './builder.js';

/** The operator domain of onnxruntime's blocked-layout CPU kernels. */
export const NCHWC_DOMAIN = 'com.microsoft.nchwc';

/** The operator sets a model using them imports: ONNX's and {@link NCHWC_DOMAIN}'s. */
export const NCHWC_OPSET_IMPORTS: readonly OperatorSetId[] = [
  { domain: '', version: ONNX_OPSET_VERSION },
  { domain: NCHWC_DOMAIN, version: 1 },
];

/**
 * A graph reordering an NHWC [1, 1, 1, 4] input `x` into the blocked layout: its output `y`'s second
 * dimension is the block size (4 where onnxruntime has no blocked kernels for the processor). Read
 * it with {@link blockOfProbe}.
 */
export function nchwcProbeModel(): Uint8Array {
  return encodeModel({
    graphName: 'dmlkit_nchwc_block_probe',
    inputs: [tensorValueInfo('x', 'float32', [1, 1, 1, 4])],
    outputs: [tensorValueInfo('y', 'float32', ['n', 'c', 'h', 'w'])],
    nodes: [{ ...node('ReorderInput', ['x'], ['y'], { channels_last: { i: 1 } }), domain: NCHWC_DOMAIN }],
    opsetImports: NCHWC_OPSET_IMPORTS,
  });
}

/** The block size the probe's output dimensions `dims` show, or undefined for none (4: the channels left as they were). */
export function blockOfProbe(dims: readonly number[] | undefined): number | undefined {
  const block = dims?.[1] ?? 0;
  return block >= 8 ? block : undefined;
}

/** `channels` rounded up to whole blocks of `block`: the channels of a blocked tensor (the rest zeros). */
export function blockedChannels(channels: number, block: number): number {
  return Math.ceil(channels / block) * block;
}

/**
 * Whether the blocked Conv can read an input with `channels` channels: fewer than a block (read as
 * plain NCHW), or a multiple of 4 (`ReorderInput` needs it).
 */
export function nchwcReadsChannels(channels: number, block: number): boolean {
  return channels >= block ? channels % 4 === 0 : channels > 0;
}

let probed: Promise<number | undefined> | undefined;

/**
 * The channel block of onnxruntime's NCHWc kernels on this machine, or undefined where there are none
 * or they cannot run. Probed once per process by {@link nchwcProbeModel} on the CPU provider.
 */
export function nchwcBlockSize(): Promise<number | undefined> {
  probed ??= (async () => {
    try {
      const session = await ort.InferenceSession.create(nchwcProbeModel(), { executionProviders: ['cpu'], intraOpNumThreads: 1, logSeverityLevel: 3 });
      try {
        const out = await session.run({ x: new ort.Tensor('float32', new Float32Array(4), [1, 1, 1, 4]) });
        return blockOfProbe(out.y?.dims);
      } finally {
        await session.release();
      }
    } catch {
      return undefined;
    }
  })();
  return probed;
}
