/**
 * @file Convolution graphs in onnxruntime's blocked channel layout (NCHWc), for the ort-cpu backend.
 *
 * onnxruntime's CPU provider has direct convolution kernels for a layout in which channels are split
 * into blocks of B (16 with AVX-512, 8 with AVX2): a tensor [n, c, h, w] is stored as
 * [n, c/B, h, w, B]. Its graph optimiser uses them only for convolutions whose filter is a constant,
 * which a training step's filters never are, so these graphs call the kernels themselves: the
 * operators `ReorderInput`, `Conv` and `ReorderOutput` of the domain `com.microsoft.nchwc`
 * (`NCHWC_DOMAIN`, lib/onnx/nchwc.ts), with the filter rearranged inside the graph. Measured on the convnet's
 * stride-2 layers (2 cores, AVX-512, batch 128): about twice as fast as `Conv` with NHWC-NCHW
 * transposes.
 *
 * Layouts, with B the block size:
 * - `ReorderInput` (channels_last 1) turns NHWC [n, h, w, c] into blocked [n, ceil(c/B)*B, h, w];
 *   `ReorderOutput` (channels_last 1, channels c) turns it back, dropping the padding channels.
 * - A filter for a blocked input is OIHWBiBo: [O/B][I/B][kh][kw][bi][bo]; for an input with fewer
 *   than B channels, which the kernel reads in plain NCHW, it is OIHWBo: [O/B][I][kh][kw][bo]. Both are
 *   built here from tfjs's [kh, kw, I, O] by Reshape and Transpose, channels padded with zeros to
 *   multiples of B.
 *
 * The input gradient of a convolution with stride s (dilation 1) is computed as s_h*s_w stride-1
 * convolutions, one per output phase (the polyphase form of a transposed convolution,
 * lib/engine/graph/polyphase.ts). The phases' outputs, each [n, h/s, w/s, ci], are interleaved by two
 * Concats and a Reshape.
 */
import { encodeModel, floatTensor, int64Tensor, node, tensorValueInfo, type NodeProto, type TensorProto } from '../../../onnx/builder.js';
import { blockedChannels, NCHWC_DOMAIN, NCHWC_OPSET_IMPORTS, nchwcReadsChannels } from '../../../onnx/nchwc.js';
import { axisPhases, type AxisPhase } from '../../graph/polyphase.js';
import { epilogueInputs, epilogueNodes, finish, type ConvGeometry, type Epilogue } from './op-models.js';

function blockedNode(...args: Parameters<typeof node>): NodeProto {
  return { ...node(...args), domain: NCHWC_DOMAIN };
}

/** Serialises a graph with float32 `inputs` (name and shape) and the one output `y` of `outShape`. */
function encodeBlockedModel(graphName: string, inputs: ReadonlyArray<readonly [string, readonly number[]]>, outShape: readonly number[], nodes: NodeProto[], initializers: TensorProto[]): Uint8Array {
  return encodeModel({
    graphName,
    inputs: inputs.map(([name, shape]) => tensorValueInfo(name, 'float32', shape)),
    outputs: [tensorValueInfo('y', 'float32', outShape)],
    nodes,
    initializers,
    opsetImports: NCHWC_OPSET_IMPORTS,
  });
}

/** Whether an input with `channels` channels goes to the blocked kernel as a blocked tensor. */
function inputIsBlocked(channels: number, block: number): boolean {
  return channels >= block;
}

/**
 * Nodes turning the filter `input` into the blocked kernel's filter `output` ([O', I', kh, kw], O' the
 * output channels rounded up to the block, I' likewise for a blocked input, the input channels
 * otherwise). `input` is in tfjs's filter layout [kh, kw, I, O] (`'HWIO'`) or [I, kh, kw, O]
 * (`'IHWO'`, the layout of a convolution's output gradient when it serves as a filter).
 */
function blockedFilterNodes(input: string, output: string, layout: 'HWIO' | 'IHWO', shape: { kh: number; kw: number; ci: number; co: number }, block: number, nodes: NodeProto[], initializers: TensorProto[]): void {
  const { kh, kw, ci, co } = shape;
  const blocked = inputIsBlocked(ci, block);
  const cip = blocked ? blockedChannels(ci, block) : ci;
  const cop = blockedChannels(co, block);
  const inAxis = layout === 'HWIO' ? 2 : 0;
  let padded = input;
  if (cip !== ci || cop !== co) {
    const pads = [0, 0, 0, 0, 0, 0, 0, cop - co];
    pads[4 + inAxis] = cip - ci;
    initializers.push(int64Tensor(`${output}_pads`, [8], pads));
    nodes.push(node('Pad', [input, `${output}_pads`], [`${output}_padded`]));
    padded = `${output}_padded`;
  }
  // Split I into (I/B, bi) when blocked and O into (O/B, bo); then order [O/B, I or I/B, kh, kw, (bi,) bo].
  const inParts = blocked ? [cip / block, block] : [ci];
  const split = layout === 'HWIO' ? [kh, kw, ...inParts, cop / block, block] : [...inParts, kh, kw, cop / block, block];
  const perm = layout === 'HWIO' ? (blocked ? [4, 2, 0, 1, 3, 5] : [3, 2, 0, 1, 4]) : blocked ? [4, 0, 2, 3, 1, 5] : [3, 0, 1, 2, 4];
  initializers.push(int64Tensor(`${output}_split`, [split.length], split), int64Tensor(`${output}_shape`, [4], [cop, cip, kh, kw]));
  nodes.push(node('Reshape', [padded, `${output}_split`], [`${output}_split_blocks`]));
  nodes.push(node('Transpose', [`${output}_split_blocks`], [`${output}_ordered`], { perm: { ints: perm } }));
  nodes.push(node('Reshape', [`${output}_ordered`, `${output}_shape`], [output]));
}

/** Nodes turning the NHWC tensor `input` with `channels` channels into what the blocked kernel reads. */
function kernelInputNodes(input: string, output: string, channels: number, block: number, nodes: NodeProto[]): void {
  if (inputIsBlocked(channels, block)) {
    nodes.push(blockedNode('ReorderInput', [input], [output], { channels_last: { i: 1 } }));
  } else {
    nodes.push(node('Transpose', [input], [output], { perm: { ints: [0, 3, 1, 2] } }));
  }
}

/**
 * Forward convolution (group 1), NHWC in and out, on the blocked kernels: x [b, h, w, ci], filter w
 * [kh, kw, ci, co], then the epilogue (a bias of shape [co] added inside the kernel); same contract
 * as op-models' `convModel`.
 */
export function blockedConvModel(xShape: readonly number[], wShape: readonly number[], g: ConvGeometry, outShape: readonly number[], epilogue: Epilogue, block: number): Uint8Array {
  const [kh, kw, ci, co] = wShape as [number, number, number, number];
  const nodes: NodeProto[] = [];
  const initializers: TensorProto[] = [];
  kernelInputNodes('x', 'x_blocked', ci, block, nodes);
  blockedFilterNodes('w', 'w_blocked', 'HWIO', { kh, kw, ci, co }, block, nodes, initializers);
  // A bias of one value per output channel is added by the kernel (zero-padded to the block).
  const kernelBias = epilogue.biasShape?.length === 1 && epilogue.biasShape[0] === co;
  const convInputs = ['x_blocked', 'w_blocked'];
  if (kernelBias) {
    const padding = blockedChannels(co, block) - co;
    if (padding > 0) {
      initializers.push(int64Tensor('bias_pads', [2], [0, padding]));
      nodes.push(node('Pad', ['bias', 'bias_pads'], ['bias_blocked']));
    }
    convInputs.push(padding > 0 ? 'bias_blocked' : 'bias');
  }
  nodes.push(blockedNode('Conv', convInputs, ['y_blocked'], {
    kernel_shape: { ints: [kh, kw] },
    strides: { ints: [...g.strides] },
    dilations: { ints: [...g.dilations] },
    pads: { ints: [...g.pads] },
  }));
  nodes.push(blockedNode('ReorderOutput', ['y_blocked'], ['y_nhwc'], { channels: { i: co }, channels_last: { i: 1 } }));
  const tail = epilogueNodes('y_nhwc', kernelBias ? { ...epilogue, biasShape: null } : epilogue, initializers);
  nodes.push(...tail.nodes);
  return encodeModel({
    graphName: 'ort_cpu_blocked_conv',
    inputs: [tensorValueInfo('x', 'float32', xShape), tensorValueInfo('w', 'float32', wShape), ...epilogueInputs(epilogue)],
    outputs: [tensorValueInfo('y', 'float32', outShape)],
    nodes: finish(nodes, tail.output),
    initializers,
    opsetImports: NCHWC_OPSET_IMPORTS,
  });
}

/** The row and column phases of an input gradient, or null where the blocked graph does not apply. */
function inputGradientPhases(dyShape: readonly number[], wShape: readonly number[], g: ConvGeometry, inShape: readonly number[], block: number): [AxisPhase[], AxisPhase[]] | null {
  const [kh, kw, , co] = wShape as [number, number, number, number];
  const [, h, w] = inShape as [number, number, number, number];
  const [, oh, ow] = dyShape as [number, number, number, number];
  if (g.dilations[0] !== 1 || g.dilations[1] !== 1 || !nchwcReadsChannels(co, block)) return null;
  const rowPhases = axisPhases(kh, g.strides[0], g.pads[0], h, oh);
  const columnPhases = axisPhases(kw, g.strides[1], g.pads[1], w, ow);
  return rowPhases && columnPhases ? [rowPhases, columnPhases] : null;
}

/**
 * Whether {@link blockedConvBackpropInputModel} covers the geometry: dilation 1, output-gradient
 * channels the kernels read, and both axes in phases (`axisPhases`, lib/engine/graph/polyphase.ts).
 */
export function blockedConvBackpropInputApplies(dyShape: readonly number[], wShape: readonly number[], g: ConvGeometry, inShape: readonly number[], block: number): boolean {
  return inputGradientPhases(dyShape, wShape, g, inShape, block) !== null;
}

/**
 * Gradient of a regular convolution (group 1, dilation 1) with respect to its input, on the blocked
 * kernels: dy [b, oh, ow, co] and the forward filter w [kh, kw, ci, co] to dx `inShape` [b, h, w, ci]
 * (same contract as op-models' `convBackpropInputModel`); null where
 * {@link blockedConvBackpropInputApplies} is false.
 */
export function blockedConvBackpropInputModel(dyShape: readonly number[], wShape: readonly number[], g: ConvGeometry, inShape: readonly number[], block: number): Uint8Array | null {
  const [, , ci, co] = wShape as [number, number, number, number];
  const [b, h, w] = inShape as [number, number, number, number];
  const [sh, sw] = g.strides;
  const phases = inputGradientPhases(dyShape, wShape, g, inShape, block);
  if (!phases) return null;
  const [rowPhases, columnPhases] = phases;
  const nodes: NodeProto[] = [];
  const initializers: TensorProto[] = [int64Tensor('phase_shape', [6], [b, h / sh, 1, w / sw, 1, ci])];
  kernelInputNodes('dy', 'dy_blocked', co, block, nodes);
  // The transposed filter [kh, kw, co, ci]: the gradient convolutions read co channels and write ci.
  nodes.push(node('Transpose', ['w'], ['w_t'], { perm: { ints: [0, 1, 3, 2] } }));
  const rowsOfPhases: string[] = [];
  rowPhases.forEach((rows, py) => {
    const phasesOfRow: string[] = [];
    columnPhases.forEach((columns, px) => {
      const name = `phase_${py}_${px}`;
      initializers.push(int64Tensor(`${name}_rows`, [rows.taps.length], rows.taps), int64Tensor(`${name}_columns`, [columns.taps.length], columns.taps));
      nodes.push(node('Gather', ['w_t', `${name}_rows`], [`${name}_w_rows`], { axis: { i: 0 } }));
      nodes.push(node('Gather', [`${name}_w_rows`, `${name}_columns`], [`${name}_w`], { axis: { i: 1 } }));
      blockedFilterNodes(`${name}_w`, `${name}_w_blocked`, 'HWIO', { kh: rows.taps.length, kw: columns.taps.length, ci: co, co: ci }, block, nodes, initializers);
      nodes.push(blockedNode('Conv', ['dy_blocked', `${name}_w_blocked`], [`${name}_blocked`], {
        kernel_shape: { ints: [rows.taps.length, columns.taps.length] },
        pads: { ints: [rows.padBefore, columns.padBefore, rows.padAfter, columns.padAfter] },
      }));
      nodes.push(blockedNode('ReorderOutput', [`${name}_blocked`], [`${name}_nhwc`], { channels: { i: ci }, channels_last: { i: 1 } }));
      nodes.push(node('Reshape', [`${name}_nhwc`, 'phase_shape'], [name]));
      phasesOfRow.push(name);
    });
    // [b, h/sh, 1, w/sw, sw, ci]: columns interleaved
    nodes.push(node('Concat', phasesOfRow, [`row_phase_${py}`], { axis: { i: 4 } }));
    rowsOfPhases.push(`row_phase_${py}`);
  });
  // [b, h/sh, sh, w/sw, sw, ci] is [b, h, w, ci] in memory.
  nodes.push(node('Concat', rowsOfPhases, ['interleaved'], { axis: { i: 2 } }));
  initializers.push(int64Tensor('dx_shape', [4], [...inShape]));
  nodes.push(node('Reshape', ['interleaved', 'dx_shape'], ['y']));
  return encodeBlockedModel('ort_cpu_blocked_conv_backprop_input', [['dy', dyShape], ['w', wShape]], inShape, nodes, initializers);
}

/**
 * Gradient of a regular convolution with respect to its filter, on the blocked kernels: x [b, h, w, ci]
 * and dy [b, oh, ow, co] to dW [kh, kw, ci, co]. It is the convolution of x, read with its channels as
 * the batch and its batch as the channels ([ci, b, h, w]), with dy as the filter ([co, b, oh, ow]), at
 * the forward dilation as stride and the forward stride as dilation, over the forward padding; its
 * output [ci, co, kh', kw'] has kh' >= kh (rows the forward convolution's floor division dropped) and is
 * cut to the filter size. Null when the batch size cannot be read by the blocked kernels.
 */
export function blockedConvBackpropFilterModel(xShape: readonly number[], dyShape: readonly number[], g: ConvGeometry, filterShape: readonly number[], block: number): Uint8Array | null {
  const [b, h, w] = xShape as [number, number, number, number];
  const [, oh, ow, co] = dyShape as [number, number, number, number];
  const [kh, kw] = filterShape as [number, number, number, number];
  if (!nchwcReadsChannels(b, block)) return null;
  const full = (size: number, before: number, after: number, taps: number, dilation: number, stride: number): number => Math.floor((size + before + after - (stride * (taps - 1) + 1)) / dilation) + 1;
  const fullRows = full(h, g.pads[0], g.pads[2], oh, g.dilations[0], g.strides[0]);
  const fullColumns = full(w, g.pads[1], g.pads[3], ow, g.dilations[1], g.strides[1]);
  const nodes: NodeProto[] = [node('Transpose', ['x'], ['x_cbhw'], { perm: { ints: [3, 0, 1, 2] } })];
  const initializers: TensorProto[] = [];
  const blockedInput = inputIsBlocked(b, block);
  // A blocked input's padding is written out first, by a depthwise 1 x 1 Conv of ones (the same values, on
  // every thread): given as this convolution's pads, each of its few outputs would touch the border and
  // run onnxruntime's slow path (about 2x; scripts/experiments/blocked-conv-cost.ts).
  const padded = blockedInput && g.pads.some((p) => p !== 0);
  if (blockedInput) {
    nodes.push(blockedNode('ReorderInput', ['x_cbhw'], ['x_blocked'], { channels_last: { i: 0 } }));
  }
  if (padded) {
    const batchBlocked = blockedChannels(b, block);
    initializers.push(floatTensor('pad_ones', [batchBlocked, 1, 1, 1], new Array<number>(batchBlocked).fill(1)));
    nodes.push(blockedNode('Conv', ['x_blocked', 'pad_ones'], ['x_padded'], { kernel_shape: { ints: [1, 1] }, pads: { ints: [...g.pads] }, group: { i: batchBlocked } }));
  }
  blockedFilterNodes('dy', 'dy_blocked', 'IHWO', { kh: oh, kw: ow, ci: b, co }, block, nodes, initializers);
  nodes.push(blockedNode('Conv', [padded ? 'x_padded' : blockedInput ? 'x_blocked' : 'x_cbhw', 'dy_blocked'], ['dw_blocked'], {
    kernel_shape: { ints: [oh, ow] },
    strides: { ints: [...g.dilations] },
    dilations: { ints: [...g.strides] },
    pads: { ints: padded ? [0, 0, 0, 0] : [...g.pads] },
  }));
  // [ci, kh', kw', co]
  nodes.push(blockedNode('ReorderOutput', ['dw_blocked'], ['dw_full'], { channels: { i: co }, channels_last: { i: 1 } }));
  let cut = 'dw_full';
  if (fullRows !== kh || fullColumns !== kw) {
    initializers.push(int64Tensor('cut_starts', [2], [0, 0]), int64Tensor('cut_ends', [2], [kh, kw]), int64Tensor('cut_axes', [2], [1, 2]));
    nodes.push(node('Slice', ['dw_full', 'cut_starts', 'cut_ends', 'cut_axes'], ['dw_cut']));
    cut = 'dw_cut';
  }
  nodes.push(node('Transpose', [cut], ['y'], { perm: { ints: [1, 2, 0, 3] } }));
  return encodeBlockedModel('ort_cpu_blocked_conv_backprop_filter', [['x', xShape], ['dy', dyShape]], filterShape, nodes, initializers);
}
