/**
 * @file 2-D convolutions in onnxruntime's blocked CPU layout (NCHWc, lib/onnx/nchwc.ts), for the
 * graph trainer's step graphs on the CPU provider: the forward convolution, the input gradient of a
 * stride-1 convolution, and the weight gradient, each a `com.microsoft.nchwc` Conv between reorders.
 *
 * onnxruntime's plain CPU Conv forms an im2col matrix per image and multiplies it: for Recipe R's
 * 3 x 3 layers at batch 128 on 2 cores, 15-28 ms each where PyTorch's oneDNN takes 10-15; its blocked
 * kernels take 12-16 ms with the reorders (scripts/experiments/blocked-conv-cost.ts, docs/graph-trainer.md
 * "Speed"). onnxruntime uses them for inference graphs, whose weights are constants it reorders once;
 * here the weights are inputs of every step, so the graph reorders them itself (two `ReorderInput`s
 * per weight and step). The ort-cpu backend's convolutions (lib/engine/tfjs/ort-cpu/blocked-conv-models.ts)
 * use the same kernels for TensorFlow.js's NHWC tensors.
 *
 * The weight gradient is a convolution too, with the roles changed: for y = Conv(x, w) with strides s,
 * dilations d and pads p,
 *
 *   dW[o, c, i, j] = Σ_n Σ_(u,v) dY[n, o, u, v] · x_p[n, c, s u + d i, s v + d j]
 *
 * is the convolution of xᵀ ([c, n, h, w]: the input channels as the batch, the images as channels)
 * with dYᵀ ([o, n, oh, ow]) as its kernel, dilated by s and strided by d; its output [c, o, ≥kh, ≥kw]
 * cropped and transposed is dW. onnxruntime's plain Conv is not made for a kernel as large as an
 * image (7x the forward's time); its blocked kernel runs it as fast as the forward convolution and
 * never writes the im2col patches the unblocked rule (convolution.ts) forms. The kernel dYᵀ is laid
 * out in the blocked filter layout by passes that move whole vectors, not single values:
 * `ReorderInput` of dY ([n, o / b, oh ow, b_o], shared with the input gradient), a Transpose moving
 * whole rows to [o / b, n / b, b_n, oh ow b_o], and `ReorderOutput` to channels-last, which swaps b_n
 * with oh ow ([o / b, n / b, oh, ow, b_n, b_o]). The input's padding is written out beforehand (by a
 * depthwise 1 x 1 blocked Conv of ones, which runs on every thread where a Pad runs on one): given as
 * this convolution's pads, every one of its 3 x 3 outputs would touch the border and run onnxruntime's
 * slow path (about 2x; scripts/experiments/blocked-conv-cost.ts).
 */
import { blockedChannels, NCHWC_DOMAIN, nchwcReadsChannels } from '../../../onnx/nchwc.js';
import { axisPhases } from '../../graph/polyphase.js';
import type { StepEmitter } from '../emitter.js';

/** The geometry of a 2-D convolution: ONNX's attributes, pads as [top, left, bottom, right]. */
export interface ConvolutionGeometry {
  readonly kernel: readonly number[];
  readonly strides: readonly number[];
  readonly dilations: readonly number[];
  readonly pads: readonly number[];
}

/**
 * Whether `emit` writes an ungrouped 2-D convolution over `channels` input channels in the blocked
 * layout: compiled for it (`emit.nchwcBlock`), and channels the kernels take: fewer than a block
 * (read as plain NCHW) or a multiple of 4 (`ReorderInput` needs it; the rest of the block is zeros).
 */
export function blockedConvolutionFits(emit: StepEmitter, channels: number, groups: number): boolean {
  const block = emit.nchwcBlock;
  return block !== undefined && groups === 1 && nchwcReadsChannels(channels, block);
}

/**
 * Whether the weight gradient of an ungrouped convolution of a batch of `batch` images into
 * `outChannels` channels can be written as {@link blockedWeightGradient}: the images are the channels
 * of its convolution, whole blocks of them (no padding of dY), and dY's channels a multiple of 4.
 */
export function blockedWeightGradientFits(emit: StepEmitter, batch: number, outChannels: number, groups: number): boolean {
  const block = emit.nchwcBlock;
  return block !== undefined && groups === 1 && batch % block === 0 && outChannels % 4 === 0;
}

/** `x` ([N, channels, H, W]) as the blocked kernels read it: reordered, or itself with fewer channels than a block. */
export function blockedInput(emit: StepEmitter, x: string, channels: number, base: string): string {
  return channels < (emit.nchwcBlock as number) ? x : emit.opOfDomain(NCHWC_DOMAIN, 'ReorderInput', [x], `${base}/blocked`);
}

/** `value` ([..., c, ...] with the channels on `axis` of `dims`) padded with zeros to a multiple of 4 channels there, as `ReorderInput` reads them. */
function alignedToFour(emit: StepEmitter, value: string, dims: readonly number[], axis: number, base: string): { value: string; dims: number[] } {
  const channels = dims[axis] as number;
  const aligned = Math.ceil(channels / 4) * 4;
  const alignedDims = dims.map((d, i) => (i === axis ? aligned : d));
  if (aligned === channels) return { value, dims: alignedDims };
  const pads = new Array<number>(2 * dims.length).fill(0);
  pads[dims.length + axis] = aligned - channels;
  return { value: emit.op('Pad', [value, emit.ints(pads)], base), dims: alignedDims };
}

/**
 * The weight `w` ([o, c, kh, kw]) in the blocked filter layout: [o', c', kh, kw] holding [o' / b, c' / b,
 * kh, kw, b_c, b_o] (o' and c' rounded up to the block b, zero-padded), or [o' / b, c, kh, kw, b_o] for
 * an input with fewer channels than a block. Two `ReorderInput`s, which run on every thread: of w read
 * as [o, c, kh, kw] (the input channels blocked innermost), then of the result read as [1, o, c' kh kw, 1]
 * (the output channels blocked innermost). An element-wise Transpose took 9 ms for one of ResNet-18's
 * 512 x 512 x 3 x 3 weights, on one thread.
 */
function blockedFilter(emit: StepEmitter, w: string, wDims: readonly number[], base: string): string {
  const block = emit.nchwcBlock as number;
  const [o, c, kh, kw] = wDims as [number, number, number, number];
  const plainInput = c < block;
  const cPadded = plainInput ? c : blockedChannels(c, block);
  const inputBlocked = plainInput ? w : emit.opOfDomain(NCHWC_DOMAIN, 'ReorderInput', [w], `${base}/w_in_blocked`);
  const aligned = alignedToFour(emit, inputBlocked, [o, cPadded, kh, kw], 0, `${base}/w_aligned`);
  const rows = emit.reshape(aligned.value, aligned.dims, [1, aligned.dims[0] as number, cPadded * kh * kw, 1], `${base}/w_rows`);
  const blocked = emit.opOfDomain(NCHWC_DOMAIN, 'ReorderInput', [rows], `${base}/w_out_blocked`);
  return emit.reshape(blocked, [1, blockedChannels(o, block), cPadded * kh * kw, 1], [blockedChannels(o, block), cPadded, kh, kw], `${base}/w_blocked`);
}

/**
 * Conv(x, w, bias) through the blocked kernels: `xBlocked` from {@link blockedInput} of an input with
 * `channels` channels, `w` [o, channels, kh, kw], `bias` [o] or ''; the result [N, o, out_h, out_w] in
 * NCHW, written as `into` when given (a forward value), else under a fresh name.
 */
export function blockedConvolution(
  emit: StepEmitter,
  xBlocked: string,
  channels: number,
  w: string,
  wDims: readonly number[],
  bias: string,
  geometry: ConvolutionGeometry,
  base: string,
  into?: string,
): string {
  const block = emit.nchwcBlock as number;
  const o = wDims[0] as number;
  const oPadded = blockedChannels(o, block);
  const inputs = [xBlocked, blockedFilter(emit, w, [o, channels, ...wDims.slice(2)], base)];
  if (bias !== '') inputs.push(oPadded === o ? bias : emit.op('Pad', [bias, emit.ints([0, oPadded - o])], `${base}/bias_padded`));
  const yBlocked = emit.opOfDomain(NCHWC_DOMAIN, 'Conv', inputs, `${base}/y_blocked`, {
    kernel_shape: { ints: geometry.kernel },
    strides: { ints: geometry.strides },
    dilations: { ints: geometry.dilations },
    pads: { ints: geometry.pads },
  });
  const reorder = { channels: { i: o } };
  if (into === undefined) return emit.opOfDomain(NCHWC_DOMAIN, 'ReorderOutput', [yBlocked], base, reorder);
  emit.opInto('ReorderOutput', [yBlocked], into, reorder, NCHWC_DOMAIN);
  return into;
}

/**
 * dW [o, c, kh, kw] of y = Conv(x, w) (ungrouped; see {@link blockedWeightGradientFits}) as the
 * convolution of xᵀ by dYᵀ described in the file comment. `x` [N, c, h, w]; `dyReordered`: dY
 * ([N, o, out_h, out_w], `yDims`) after `ReorderInput`.
 */
export function blockedWeightGradient(
  emit: StepEmitter,
  x: string,
  xDims: readonly number[],
  dyReordered: string,
  yDims: readonly number[],
  geometry: ConvolutionGeometry,
  base: string,
): string {
  const block = emit.nchwcBlock as number;
  const [n, c, h, w] = xDims as [number, number, number, number];
  const [, o, outH, outW] = yDims as [number, number, number, number];
  const [kh, kw] = geometry.kernel as [number, number];
  const [top, left, bottom, right] = geometry.pads as [number, number, number, number];
  const oPadded = blockedChannels(o, block);
  // xᵀ, the images as channels, blocked; its padding written out.
  const xRows = emit.opOfDomain(NCHWC_DOMAIN, 'ReorderInput', [emit.op('Transpose', [x], `${base}/x_t`, { perm: { ints: [1, 0, 2, 3] } })], `${base}/x_t_blocked`);
  // The padding written out by a depthwise 1 x 1 Conv of ones with the pads (blocked, on every thread;
  // the same values as a Pad, which runs on one).
  const xPadded =
    top + left + bottom + right === 0
      ? xRows
      : emit.opOfDomain(NCHWC_DOMAIN, 'Conv', [xRows, emit.floats(`${base}/ones`, [n, 1, 1, 1], new Array<number>(n).fill(1))], `${base}/x_t_padded`, {
          kernel_shape: { ints: [1, 1] },
          pads: { ints: [top, left, bottom, right] },
          group: { i: n },
        });
  const [paddedH, paddedW] = [h + top + bottom, w + left + right];
  // dYᵀ in the blocked filter layout [o' / b, n / b, out_h, out_w, b_n, b_o], from dY's [n, o' / b, out_h out_w, b_o].
  const rows = emit.op('Transpose', [emit.reshape(dyReordered, [n, oPadded, outH, outW], [n / block, block, oPadded / block, outH * outW * block], `${base}/dy_split`)], `${base}/dy_moved`, {
    perm: { ints: [2, 0, 1, 3] },
  });
  const blocks = emit.reshape(rows, [oPadded / block, n / block, block, outH * outW * block], [(oPadded / block) * (n / block), block * block, outH, outW], `${base}/dy_blocks`);
  const filter = emit.opOfDomain(NCHWC_DOMAIN, 'ReorderOutput', [blocks], `${base}/dy_filter`, { channels: { i: block * block }, channels_last: { i: 1 } });
  const filterDims = [oPadded, n, outH, outW];
  // The output's extent: every window offset the forward's strides leave room for (at least the kernel).
  const [strideH, strideW] = geometry.strides as [number, number];
  const [dilationH, dilationW] = geometry.dilations as [number, number];
  const extentH = Math.floor((paddedH - (strideH * (outH - 1) + 1)) / dilationH) + 1;
  const extentW = Math.floor((paddedW - (strideW * (outW - 1) + 1)) / dilationW) + 1;
  const product = emit.opOfDomain(NCHWC_DOMAIN, 'Conv', [xPadded, emit.reshape(filter, [(oPadded / block) * (n / block), outH, outW, block * block], filterDims, `${base}/dy_kernel`)], `${base}/dw_t_blocked`, {
    kernel_shape: { ints: [outH, outW] },
    strides: { ints: [dilationH, dilationW] },
    dilations: { ints: [strideH, strideW] },
    pads: { ints: [0, 0, 0, 0] },
  });
  // The product [c, o' / b, extent_h, extent_w, b_o] cropped to the kernel, its two outer axes swapped (whole
  // rows of kh kw b_o values), then unblocked by `ReorderOutput` read as [1, o', c kh kw, 1]: dW [o, c, kh, kw]
  // without an element-wise transpose of [c, o, kh, kw] (17 ms of ResNet-18's step on one thread).
  const product5 = emit.reshape(product, [c, oPadded, extentH, extentW], [c, oPadded / block, extentH, extentW, block], `${base}/dw_t_5d`);
  const cropped = extentH === kh && extentW === kw ? product5 : emit.op('Slice', [product5, emit.ints([0, 0]), emit.ints([kh, kw]), emit.ints([2, 3])], `${base}/dw_t_cropped`);
  const swapped = emit.op('Transpose', [emit.reshape(cropped, [c, oPadded / block, kh, kw, block], [c, oPadded / block, kh * kw * block], `${base}/dw_t_rows`)], `${base}/dw_blocks`, { perm: { ints: [1, 0, 2] } });
  const unblocked = emit.opOfDomain(NCHWC_DOMAIN, 'ReorderOutput', [emit.reshape(swapped, [oPadded / block, c, kh * kw * block], [1, oPadded, c * kh * kw, 1], `${base}/dw_blocked`)], `${base}/dw_rows`, { channels: { i: o } });
  return emit.reshape(unblocked, [1, o, c * kh * kw, 1], [o, c, kh, kw], base);
}

/**
 * The input gradient dx [N, c, h, w] of y = Conv(x, w) (ungrouped, dilation 1) from dY ([N, o, out_h,
 * out_w], `yDims`) through the blocked kernels, or undefined where the polyphase form does not apply
 * (an input size not divisible by the stride, a phase without taps) or the kernels cannot read dY's
 * channels. `dyBlocked` gives dY after `ReorderInput` (shared with the weight gradient).
 *
 * Each (row, column) phase of dx is a stride-1 convolution of dY with some of the kernel's taps, in
 * reverse order, transposed ([c, o, taps_h, taps_w]); with stride 1 the one phase is the flipped kernel.
 * The kernel is laid out once in the blocked filter layout of its transpose, by two `ReorderInput`s and a
 * Transpose of whole blocks (no element-wise Transpose), and each phase's taps are gathered from it
 * along the kernel axes, blocks of b x b values at a time. The phases stay blocked and are interleaved
 * by two Concats of blocks before the one `ReorderOutput`. onnxruntime's ConvTranspose took 42 ms for
 * ResNet-18's first stride-2 convolution of layer 4 (docs/graph-trainer.md, "Speed").
 */
export function blockedInputGradient(
  emit: StepEmitter,
  dy: string,
  dyBlocked: () => string,
  yDims: readonly number[],
  w: string,
  wDims: readonly number[],
  xDims: readonly number[],
  geometry: ConvolutionGeometry,
  base: string,
): string | undefined {
  const block = emit.nchwcBlock as number;
  const [n, c, h, wd] = xDims as [number, number, number, number];
  const [o, , kh, kw] = wDims as [number, number, number, number];
  const [outH, outW] = yDims.slice(2) as [number, number];
  if (geometry.dilations.some((d) => d !== 1) || !nchwcReadsChannels(o, block)) return undefined;
  const rows = axisPhases(kh, geometry.strides[0] as number, geometry.pads[0] as number, h, outH);
  const columns = axisPhases(kw, geometry.strides[1] as number, geometry.pads[1] as number, wd, outW);
  if (!rows || !columns) return undefined;
  const plainInput = o < block;
  const kk = kh * kw;
  // The transposed kernel [c, o, kh, kw] in the blocked filter layout, as [c' / b, o' / b, kh, kw, b_o, b_c]
  // (or [c' / b, o, kh, kw, b_c] for a dY read plain).
  let filter: string;
  let cPadded: number;
  let filterDims: number[];
  if (plainInput) {
    const aligned = alignedToFour(emit, w, wDims, 1, `${base}/w_aligned`);
    cPadded = blockedChannels(c, block);
    const blocked = emit.opOfDomain(NCHWC_DOMAIN, 'ReorderInput', [aligned.value], `${base}/w_in_blocked`); // [o, c' / b, kk, b_c]
    filter = emit.op('Transpose', [emit.reshape(blocked, [o, cPadded, kh, kw], [o, cPadded / block, kk * block], `${base}/w_rows`)], `${base}/w_moved`, { perm: { ints: [1, 0, 2] } });
    filterDims = [cPadded / block, o, kh, kw, block];
  } else {
    const oPadded = blockedChannels(o, block);
    const outAligned = alignedToFour(emit, w, wDims, 0, `${base}/w_out_aligned`);
    const outBlocked = emit.opOfDomain(NCHWC_DOMAIN, 'ReorderInput', [emit.reshape(outAligned.value, outAligned.dims, [1, outAligned.dims[0] as number, c * kk, 1], `${base}/w_out_rows`)], `${base}/w_out_blocked`); // [o' / b, c, kk, b_o]
    const inAligned = alignedToFour(emit, emit.reshape(outBlocked, [1, oPadded, c * kk, 1], [oPadded / block, c, kk * block], `${base}/w_blocks`), [oPadded / block, c, kk * block], 1, `${base}/w_in_aligned`);
    cPadded = blockedChannels(c, block);
    const inBlocked = emit.opOfDomain(NCHWC_DOMAIN, 'ReorderInput', [emit.reshape(inAligned.value, inAligned.dims, [oPadded / block, inAligned.dims[1] as number, kk * block, 1], `${base}/w_in_rows`)], `${base}/w_in_blocked`); // [o' / b, c' / b, kk b_o, b_c]
    filter = emit.op('Transpose', [emit.reshape(inBlocked, [oPadded / block, cPadded, kk * block, 1], [oPadded / block, cPadded / block, kk * block * block], `${base}/w_block_rows`)], `${base}/w_moved`, { perm: { ints: [1, 0, 2] } });
    filterDims = [cPadded / block, oPadded / block, kh, kw, block, block];
  }
  const filterView = emit.reshape(filter, [filterDims[0] as number, filterDims[1] as number, filterDims.slice(2).reduce((a, b) => a * b, 1)], filterDims, `${base}/w_filter`);
  const input = plainInput ? dy : dyBlocked();
  const phaseOutputs = rows.map((row, py) =>
    columns.map((column, px) => {
      const name = rows.length * columns.length === 1 ? base : `${base}/phase_${py}_${px}`;
      const taps = emit.op('Gather', [emit.op('Gather', [filterView, emit.ints(row.taps)], `${name}/w_rows_taps`, { axis: { i: 2 } }), emit.ints(column.taps)], `${name}/w_taps`, { axis: { i: 3 } });
      const tapDims = filterDims.map((d, i) => (i === 2 ? row.taps.length : i === 3 ? column.taps.length : d));
      const kernel = emit.reshape(taps, tapDims, [cPadded, plainInput ? o : blockedChannels(o, block), row.taps.length, column.taps.length], `${name}/w_kernel`);
      return emit.opOfDomain(NCHWC_DOMAIN, 'Conv', [input, kernel], `${name}/dx_blocked`, {
        kernel_shape: { ints: [row.taps.length, column.taps.length] },
        pads: { ints: [row.padBefore, column.padBefore, row.padAfter, column.padAfter] },
      });
    }),
  );
  const reorder = { channels: { i: c } };
  if (rows.length * columns.length === 1) return emit.opOfDomain(NCHWC_DOMAIN, 'ReorderOutput', [phaseOutputs[0]?.[0] as string], base, reorder);
  // Interleaved in the blocked layout [N, c' / b, h / s, s, w / s, s, b]: whole blocks of b values move.
  const [phaseH, phaseW] = [h / rows.length, wd / columns.length];
  const phaseDims = [n, cPadded / block, phaseH, 1, phaseW, 1, block];
  const rowsOfPhases = phaseOutputs.map((row, py) =>
    emit.op('Concat', row.map((phase, px) => emit.reshape(phase, [n, cPadded, phaseH, phaseW], phaseDims, `${base}/phase_${py}_${px}/cells`)), `${base}/row_phase_${py}`, { axis: { i: 5 } }),
  );
  const interleaved = emit.op('Concat', rowsOfPhases, `${base}/interleaved`, { axis: { i: 3 } });
  return emit.opOfDomain(NCHWC_DOMAIN, 'ReorderOutput', [emit.reshape(interleaved, [n, cPadded / block, phaseH, rows.length, phaseW, columns.length, block], [n, cPadded, h, wd], `${base}/dx_blocked`)], base, reorder);
}
