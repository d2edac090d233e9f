/**
 * @file Gradient rules of windowed 2-D pooling.
 *
 * - MaxPool: without the node's Indices output (onnxruntime's WebGPU provider cannot compute it): the
 *   input, padded with the lowest float32, is cut into one strided Slice per kernel offset ([N, C, K,
 *   outH, outW], K = kernel positions); each window's first offset equal to the output (its first
 *   maximum, as PyTorch picks; see `firstMatch` in reductions.ts) gets the output gradient, and a
 *   depthwise ConvTranspose with one-hot kernels puts every offset's gradients back in place
 *   (overlapping windows add up).
 *   Compiled for the CPU's blocked layout (`emit.nchwcBlock`, lib/onnx/nchwc.ts) with windows at least
 *   as large as their stride (dilation 1), the same choice is made on blocked tensors ([N, C / b, h, w,
 *   b]): each offset a strided Slice that moves blocks of b values, its first match kept by And/Or of
 *   the offsets before it, and the offsets' gradients placed by phase (zero padding of whole cells and a
 *   Sum where windows overlap) and interleaved by two Concats of blocks before one `ReorderOutput`: no
 *   ConvTranspose, the same values bit for bit (spec/engine/autodiff/blocked-pooling.spec.ts).
 * - AveragePool: each output's gradient divided by its window's count (without the padding when
 *   `count_include_pad` is 0, as PyTorch's `count_include_pad=False`) and spread over its window by a
 *   depthwise ConvTranspose with a kernel of ones.
 */
import { DmlError } from '../../../errors.js';
import { blockedChannels, NCHWC_DOMAIN } from '../../../onnx/nchwc.js';
import { describeNode, elementCount, intAttribute, type IrNode } from '../../graph/onnx-ir.js';
import { windowGeometry, type WindowGeometry } from '../../graph/shapes.js';
import type { StepEmitter } from '../emitter.js';
import type { GradientRule } from '../rule.js';
import { inputOf, outputGradient } from './elementwise.js';
import { firstMatch } from './reductions.js';

function spatialOnly(emit: StepEmitter, node: IrNode): readonly number[] {
  const dims = emit.dims(inputOf(node, 0));
  if (dims.length !== 4) throw new DmlError('E_MODEL', `${describeNode(node)}: the graph trainer differentiates 2-D pooling; this one has a rank-${dims.length} input`);
  return dims;
}

const LOWEST_FLOAT32 = -3.4028234663852886e38;

/**
 * The max-pooling gradient on the blocked layout (see the file comment), for windows at least as large
 * as their stride, dilation 1: dx [N, C, h, w] of `node` from its output gradient `dy`. The input padded
 * with the lowest float32 to whole cells of the stride; each window offset a strided Slice of it; each
 * window's first match routed the gradient. An offset (a, b) lands on input phase (a mod s_h, b mod s_w),
 * shifted by (a div s_h, b div s_w) cells: each phase is the sum of its offsets, each padded by its shift,
 * and the phases interleave by two Concats. A window without a match (a NaN maximum) gives every offset
 * the gradient, as the unblocked rule does. Where the windows tile the input (kernel = stride, no padding)
 * every phase is one offset, unshifted: no Pad, no Sum.
 */
function maxPoolGradientBlocked(emit: StepEmitter, node: IrNode, dy: string, dims: readonly number[], g: WindowGeometry, base: string): string {
  const block = emit.nchwcBlock as number;
  const [n, channels, h, w] = dims as [number, number, number, number];
  const [kh, kw] = g.kernel as [number, number];
  const [sh, sw] = g.strides as [number, number];
  const [outH, outW] = g.output as [number, number];
  const [top, left] = g.pads as [number, number];
  const cBlocks = blockedChannels(channels, block) / block;
  // Whole cells of the stride, covering the input with its begin padding and every window with its shift.
  const cellsH = Math.max(Math.ceil((h + top) / sh), outH + Math.floor((kh - 1) / sh));
  const cellsW = Math.max(Math.ceil((w + left) / sw), outW + Math.floor((kw - 1) / sw));
  const blocked = (value: string, spatial: [number, number], name: string): string =>
    emit.reshape(emit.opOfDomain(NCHWC_DOMAIN, 'ReorderInput', [value], `${name}_blocked`), [n, cBlocks * block, ...spatial], [n, cBlocks, ...spatial, block], `${name}_5d`);
  // The padding written before the reorder (a Pad of NCHW rows: faster than one of the blocked tensor).
  const [bottom, right] = [sh * cellsH - h - top, sw * cellsW - w - left];
  const xPadded = top + left + bottom + right === 0 ? inputOf(node, 0) : emit.op('Pad', [inputOf(node, 0), emit.ints([0, 0, top, left, 0, 0, bottom, right]), emit.scalar(LOWEST_FLOAT32)], `${base}/x_padded`);
  const x = blocked(xPadded, [sh * cellsH, sw * cellsW], `${base}/x`);
  const y = blocked(node.outputs[0] as string, [outH, outW], `${base}/y`);
  const dyBlocked = blocked(dy, [outH, outW], `${base}/dy`);
  const matches: string[] = [];
  for (let a = 0; a < kh; a++) {
    for (let b = 0; b < kw; b++) {
      const cut = emit.op('Slice', [x, emit.ints([a, b]), emit.ints([a + (outH - 1) * sh + 1, b + (outW - 1) * sw + 1]), emit.ints([2, 3]), emit.ints([sh, sw])], `${base}/offset_${a}_${b}`);
      matches.push(emit.op('Equal', [cut, y], `${base}/offset_${a}_${b}/matches`));
    }
  }
  // The first match in the window's order (PyTorch's choice): a match no earlier offset made.
  const chosen = [matches[0] as string];
  let taken = matches[0] as string;
  for (let k = 1; k < matches.length; k++) {
    chosen.push(emit.op('And', [matches[k] as string, emit.op('Not', [taken], `${base}/offset_${k}/before`)], `${base}/offset_${k}/first`));
    taken = emit.op('Or', [taken, matches[k] as string], `${base}/offset_${k}/taken`);
  }
  const none = emit.op('Not', [taken], `${base}/no_match`);
  const routed = chosen.map((c, k) => emit.op('Where', [emit.op('Or', [c, none], `${base}/offset_${k}/chosen`), dyBlocked, emit.scalar(0)], `${base}/offset_${k}/routed`));
  // Each phase: its offsets, shifted into place by zero padding of whole cells.
  const cellDims = [n, cBlocks, cellsH, 1, cellsW, 1, block];
  const phaseRows = Array.from({ length: sh }, (_, ra) => {
    const phases = Array.from({ length: sw }, (_, rb) => {
      const parts: string[] = [];
      for (let a = ra; a < kh; a += sh) {
        for (let b = rb; b < kw; b += sw) {
          const [qa, qb] = [Math.floor(a / sh), Math.floor(b / sw)];
          const shift = [qa, qb, cellsH - outH - qa, cellsW - outW - qb];
          const part = routed[a * kw + b] as string;
          parts.push(shift.every((p) => p === 0) ? part : emit.op('Pad', [part, emit.ints([0, 0, qa, qb, 0, 0, 0, shift[2] as number, shift[3] as number, 0])], `${base}/offset_${a}_${b}/placed`));
        }
      }
      const phase = parts.length === 1 ? (parts[0] as string) : emit.op('Sum', parts, `${base}/phase_${ra}_${rb}`);
      return emit.reshape(phase, [n, cBlocks, cellsH, cellsW, block], cellDims, `${base}/phase_${ra}_${rb}/cells`);
    });
    return sw === 1 ? (phases[0] as string) : emit.op('Concat', phases, `${base}/row_phase_${ra}`, { axis: { i: 5 } });
  });
  const interleaved = sh === 1 ? (phaseRows[0] as string) : emit.op('Concat', phaseRows, `${base}/interleaved`, { axis: { i: 3 } });
  const placed = emit.reshape(interleaved, [n, cBlocks, cellsH, sh, cellsW, sw, block], [n, cBlocks, sh * cellsH, sw * cellsW, block], `${base}/placed_5d`);
  const cropped = top + left + bottom + right === 0 ? placed : emit.op('Slice', [placed, emit.ints([top, left]), emit.ints([top + h, left + w]), emit.ints([2, 3])], `${base}/cropped`);
  return emit.opOfDomain(NCHWC_DOMAIN, 'ReorderOutput', [emit.reshape(cropped, [n, cBlocks, h, w, block], [n, cBlocks * block, h, w], `${base}/dx_blocked`)], base, {
    channels: { i: channels },
  });
}

const maxPool: GradientRule = {
  differentiableInputs: () => [0],
  backward: (emit, node, dys, needed) => {
    if (!needed[0]) return [undefined];
    const dims = spatialOnly(emit, node);
    const [n, channels, h, w] = dims as [number, number, number, number];
    const g = windowGeometry(node, dims);
    const [outH, outW] = g.output as [number, number];
    const [kh, kw] = g.kernel as [number, number];
    const offsets = kh * kw;
    const base = `${node.name}/grad`;
    // The rows and columns the windows cover, at least the input and its begin padding.
    const span = [0, 1].map((i) => ((g.output[i] as number) - 1) * (g.strides[i] as number) + ((g.kernel[i] as number) - 1) * (g.dilations[i] as number) + 1);
    const padded = [0, 1].map((i) => Math.max(span[i] as number, (dims[2 + i] as number) + (g.pads[i] as number)));
    const [top, left] = g.pads as [number, number];
    // No Pad where the windows cover the input exactly (2 x 2 windows at stride 2 on an even size): a copy.
    const unpadded = top === 0 && left === 0 && padded[0] === h && padded[1] === w;
    const blockable = g.strides.every((st, i) => st <= (g.kernel[i] as number)) && g.dilations.every((d) => d === 1) && intAttribute(node, 'ceil_mode', 0) === 0;
    if (blockable && emit.nchwcBlock !== undefined && channels % 4 === 0) return [maxPoolGradientBlocked(emit, node, outputGradient(node, dys), dims, g, base)];
    const x = unpadded ? inputOf(node, 0) : emit.op('Pad', [inputOf(node, 0), emit.ints([0, 0, top, left, 0, 0, (padded[0] as number) - h - top, (padded[1] as number) - w - left]), emit.scalar(LOWEST_FLOAT32)], `${base}/padded`);
    const windows: string[] = [];
    for (let a = 0; a < kh; a++) {
      for (let b = 0; b < kw; b++) {
        const starts = [a * (g.dilations[0] as number), b * (g.dilations[1] as number)];
        const ends = [0, 1].map((i) => (starts[i] as number) + ((i === 0 ? outH : outW) - 1) * (g.strides[i] as number) + 1);
        const cut = emit.op('Slice', [x, emit.ints(starts), emit.ints(ends), emit.ints([2, 3]), emit.ints(g.strides)], `${base}/offset_${a}_${b}`);
        windows.push(emit.reshape(cut, [n, channels, outH, outW], [n, channels, 1, outH, outW], `${base}/offset_${a}_${b}/u`));
      }
    }
    const stacked = emit.op('Concat', windows, `${base}/windows`, { axis: { i: 2 } });
    const y = emit.reshape(node.outputs[0] as string, [n, channels, outH, outW], [n, channels, 1, outH, outW], `${base}/y_u`);
    const chosen = firstMatch(emit, stacked, y, [n, channels, offsets, outH, outW], 2, base);
    const dy = emit.reshape(outputGradient(node, dys), [n, channels, outH, outW], [n, channels, 1, outH, outW], `${base}/dy_u`);
    const routed = emit.op('Where', [chosen, dy, emit.scalar(0)], `${base}/routed`);
    const oneHot = new Array<number>(channels * offsets * offsets).fill(0);
    for (let c = 0; c < channels; c++) for (let k = 0; k < offsets; k++) oneHot[(c * offsets + k) * offsets + k] = 1;
    const placed = emit.op('ConvTranspose', [
      emit.reshape(routed, [n, channels, offsets, outH, outW], [n, channels * offsets, outH, outW], `${base}/routed_flat`),
      emit.floats(`${base}/one_hot`, [channels * offsets, 1, kh, kw], oneHot),
    ], `${base}/placed`, {
      group: { i: channels },
      kernel_shape: { ints: g.kernel },
      strides: { ints: g.strides },
      dilations: { ints: g.dilations },
      output_padding: { ints: [0, 1].map((i) => (padded[i] as number) - (span[i] as number)) },
    });
    return [unpadded ? placed : emit.op('Slice', [placed, emit.ints([top, left]), emit.ints([top + h, left + w]), emit.ints([2, 3])], base)];
  },
};

/** 1 / (the number of input positions each output window averages), per output position. */
function inverseCounts(geometry: WindowGeometry, spatial: readonly number[], includePad: boolean): number[] {
  const [outH, outW] = geometry.output as [number, number];
  const values: number[] = [];
  for (let i = 0; i < outH; i++) {
    for (let j = 0; j < outW; j++) {
      const count = [i, j].map((o, axis) => {
        const start = o * (geometry.strides[axis] as number) - (geometry.pads[axis] as number);
        const end = start + (geometry.kernel[axis] as number);
        const lo = includePad ? -(geometry.pads[axis] as number) : 0;
        const hi = includePad ? (spatial[axis] as number) + (geometry.pads[axis + 2] as number) : (spatial[axis] as number);
        return Math.min(end, hi) - Math.max(start, lo);
      });
      values.push(1 / ((count[0] as number) * (count[1] as number)));
    }
  }
  return values;
}

const averagePool: GradientRule = {
  differentiableInputs: () => [0],
  backward: (emit, node, dys, needed) => {
    if (!needed[0]) return [undefined];
    const dims = spatialOnly(emit, node);
    if (intAttribute(node, 'ceil_mode', 0) !== 0) throw new DmlError('E_MODEL', `${describeNode(node)}: AveragePool with ceil_mode 1 is not supported by the graph trainer`);
    const geometry = windowGeometry(node, dims);
    const [, channels, h, w] = dims as [number, number, number, number];
    const [outH, outW] = geometry.output as [number, number];
    const base = `${node.name}/grad`;
    const weights = inverseCounts(geometry, [h, w], intAttribute(node, 'count_include_pad', 0) === 1);
    const scaled = emit.op('Mul', [outputGradient(node, dys), emit.floats(`${base}/inverse_counts`, [1, 1, outH, outW], weights)], `${base}/scaled`);
    const ones = emit.floats(`${base}/ones`, [channels, 1, ...geometry.kernel], new Array<number>(channels * elementCount(geometry.kernel)).fill(1));
    const outputPadding = [h, w].map((size, i) => size - ((geometry.strides[i] as number) * ((i === 0 ? outH : outW) - 1) + (geometry.kernel[i] as number) - (geometry.pads[i] as number) - (geometry.pads[i + 2] as number)));
    return [emit.op('ConvTranspose', [scaled, ones], base, {
      group: { i: channels },
      kernel_shape: { ints: geometry.kernel },
      strides: { ints: geometry.strides },
      pads: { ints: geometry.pads },
      output_padding: { ints: outputPadding },
    })];
  },
};

/** Rules of this file by operator type. */
export const POOLING_RULES: Readonly<Record<string, GradientRule>> = { MaxPool: maxPool, AveragePool: averagePool };
