/**
 * @file Single-op ONNX graphs for the ort-cpu backend's kernels: matrix products and the convolution
 * family, each with the layout transposes between TensorFlow.js's NHWC tensors and ONNX's NCHW
 * operators where it needs them, fused bias and activation; and the large element-wise products,
 * quotients, sums and differences.
 *
 * Every builder takes fixed input shapes (a training run repeats the same shapes, so each graph is
 * compiled once and cached by {@link OrtSyncRuntime.session}) and returns the serialised model.
 * Inputs are named `a`, `b` (products), `x`, `w`, `dy` (convolutions), `bias`, `prelu`; the one
 * output is `y`. Convolution geometry (explicit pads, strides, dilations) is computed by the caller
 * with tfjs's own `backend_util.computeConv2DInfo`, so padding follows tfjs exactly.
 *
 * The filter-gradient graphs rest on one identity. For a convolution with stride s and dilation d,
 *   dW[kh, kw, ci, co] = sum over b, oh, ow of xpad[b, oh*s + kh*d, ow*s + kw*d, ci] * dy[b, oh, ow, co].
 * For a regular convolution that is one matrix product in NHWC, with no layout transposes: the
 * patches of x (im2col: one strided Slice of the padded input per filter tap, concatenated along the
 * channel axis, [b*oh*ow, kh*kw*ci]) transposed times dy ([b*oh*ow, co]) is dW in tfjs's filter
 * layout [kh, kw, ci, co]. For a depthwise filter it is a convolution of x (channels and batch
 * swapped, [ci, b, H, W]) with dy as the filter ([co, b, OH, OW]) at stride d and dilation s, group
 * ci; its output [1, ci*m, KH', KW'] has KH' >= KH and is sliced to the filter size.
 */
import { encodeModel, floatTensor, int64Tensor, node, tensorValueInfo, type NodeProto, type TensorProto } from '../../../onnx/builder.js';

/** tfjs's fused activations (`_FusedMatMul`, `FusedConv2D`, `FusedDepthwiseConv2D`). */
export type FusedActivation = 'linear' | 'relu' | 'relu6' | 'prelu' | 'leakyrelu' | 'elu' | 'sigmoid';

/** Bias and activation applied to `y` after the product, in tfjs's order: y + bias, then activation. */
export interface Epilogue {
  /** Shape of the bias input (broadcast against the output), or null without bias. */
  biasShape: readonly number[] | null;
  activation: FusedActivation;
  /** Shape of the PReLU slopes (activation 'prelu' only). */
  preluShape: readonly number[] | null;
  /** Slope of 'leakyrelu'. */
  leakyreluAlpha: number;
}

/** Explicit convolution geometry, spatial axes in (height, width) order. */
export interface ConvGeometry {
  strides: readonly [number, number];
  dilations: readonly [number, number];
  /** top, left, bottom, right (ONNX `pads` order). */
  pads: readonly [number, number, number, number];
}

const NHWC_TO_NCHW = [0, 3, 1, 2];
const NCHW_TO_NHWC = [0, 2, 3, 1];
/** tfjs filter [kh, kw, in, out] to ONNX weight [out, in, kh, kw]. */
const HWIO_TO_OIHW = [3, 2, 0, 1];

/** Nodes applying `epilogue` to `input`; returns them and the name of their result. */
export function epilogueNodes(input: string, epilogue: Epilogue, initializers: TensorProto[]): { nodes: NodeProto[]; output: string } {
  const nodes: NodeProto[] = [];
  let current = input;
  if (epilogue.biasShape) {
    nodes.push(node('Add', [current, 'bias'], ['biased']));
    current = 'biased';
  }
  const act = (op: string, inputs: string[], attrs = {}): void => {
    nodes.push(node(op, inputs, ['activated'], attrs));
    current = 'activated';
  };
  switch (epilogue.activation) {
    case 'linear':
      break;
    case 'relu':
      act('Relu', [current]);
      break;
    case 'relu6':
      initializers.push(floatTensor('relu6_min', [], [0]), floatTensor('relu6_max', [], [6]));
      act('Clip', [current, 'relu6_min', 'relu6_max']);
      break;
    case 'prelu':
      act('PRelu', [current, 'prelu']);
      break;
    case 'leakyrelu':
      act('LeakyRelu', [current], { alpha: { f: epilogue.leakyreluAlpha } });
      break;
    case 'elu':
      act('Elu', [current], { alpha: { f: 1 } });
      break;
    case 'sigmoid':
      act('Sigmoid', [current]);
      break;
  }
  return { nodes, output: current };
}

/** Graph inputs the epilogue reads (`bias`, `prelu`). */
export function epilogueInputs(epilogue: Epilogue): ReturnType<typeof tensorValueInfo>[] {
  return [
    ...(epilogue.biasShape ? [tensorValueInfo('bias', 'float32', epilogue.biasShape)] : []),
    ...(epilogue.activation === 'prelu' && epilogue.preluShape ? [tensorValueInfo('prelu', 'float32', epilogue.preluShape)] : []),
  ];
}

/** Renames the last node's output to `y` (the graph output). */
export function finish(nodes: NodeProto[], last: string): NodeProto[] {
  for (const n of nodes) n.output = (n.output ?? []).map((o) => (o === last ? 'y' : o));
  for (const n of nodes) n.input = (n.input ?? []).map((i) => (i === last ? 'y' : i));
  return nodes;
}

/** Signature string of an epilogue, for session caching. */
export function epilogueSignature(e: Epilogue): string {
  return `${e.biasShape ? `b${e.biasShape.join('x')}` : '-'}|${e.activation}${e.activation === 'prelu' ? `:${e.preluShape?.join('x')}` : ''}${e.activation === 'leakyrelu' ? `:${e.leakyreluAlpha}` : ''}`;
}

/**
 * a [.., m, k] (or [.., k, m] with transposeA) times b [.., k, n] (or [.., n, k] with transposeB),
 * batch dimensions broadcast as numpy does, then the epilogue. Rank-2 products use Gemm with its
 * transpose flags (no transposed copy); higher ranks transpose the last two axes and use MatMul.
 */
export function matMulModel(aShape: readonly number[], bShape: readonly number[], transposeA: boolean, transposeB: boolean, outShape: readonly number[], epilogue: Epilogue): Uint8Array {
  const nodes: NodeProto[] = [];
  const initializers: TensorProto[] = [];
  if (aShape.length === 2 && bShape.length === 2) {
    nodes.push(node('Gemm', ['a', 'b'], ['product'], { transA: { i: transposeA ? 1 : 0 }, transB: { i: transposeB ? 1 : 0 } }));
  } else {
    const swapLast = (rank: number): number[] => [...Array.from({ length: rank - 2 }, (_, i) => i), rank - 1, rank - 2];
    let a = 'a';
    let b = 'b';
    if (transposeA) {
      nodes.push(node('Transpose', ['a'], ['a_t'], { perm: { ints: swapLast(aShape.length) } }));
      a = 'a_t';
    }
    if (transposeB) {
      nodes.push(node('Transpose', ['b'], ['b_t'], { perm: { ints: swapLast(bShape.length) } }));
      b = 'b_t';
    }
    nodes.push(node('MatMul', [a, b], ['product']));
  }
  const tail = epilogueNodes('product', epilogue, initializers);
  nodes.push(...tail.nodes);
  return encodeModel({
    graphName: 'ort_cpu_matmul',
    inputs: [tensorValueInfo('a', 'float32', aShape), tensorValueInfo('b', 'float32', bShape), ...epilogueInputs(epilogue)],
    outputs: [tensorValueInfo('y', 'float32', outShape)],
    nodes: finish(nodes, tail.output),
    initializers,
  });
}

function convAttributes(g: ConvGeometry, group: number): Record<string, { ints: number[] } | { i: number }> {
  return { strides: { ints: [...g.strides] }, dilations: { ints: [...g.dilations] }, pads: { ints: [...g.pads] }, group: { i: group } };
}

/**
 * Forward convolution, NHWC in and out: x [b, h, w, ci] with filter w [kh, kw, ci, co] (regular,
 * group 1) or [kh, kw, ci, m] (depthwise: group ci, output channel c*m + j), then the epilogue.
 * (im2col times the filter in NHWC, as the filter gradient does, measured no faster even for a
 * first layer on 1- or 3-channel images, whose patches are narrow.)
 */
export function convModel(xShape: readonly number[], wShape: readonly number[], depthwise: boolean, g: ConvGeometry, outShape: readonly number[], epilogue: Epilogue): Uint8Array {
  const [kh, kw, ci, co] = wShape as [number, number, number, number];
  const nodes: NodeProto[] = [node('Transpose', ['x'], ['x_nchw'], { perm: { ints: NHWC_TO_NCHW } })];
  const initializers: TensorProto[] = [];
  if (depthwise) {
    // [kh, kw, ci, m] -> [ci, m, kh, kw] -> [ci*m, 1, kh, kw]
    nodes.push(node('Transpose', ['w'], ['w_cmhw'], { perm: { ints: [2, 3, 0, 1] } }));
    initializers.push(int64Tensor('w_shape', [4], [ci * co, 1, kh, kw]));
    nodes.push(node('Reshape', ['w_cmhw', 'w_shape'], ['w_oihw']));
  } else {
    nodes.push(node('Transpose', ['w'], ['w_oihw'], { perm: { ints: HWIO_TO_OIHW } }));
  }
  nodes.push(node('Conv', ['x_nchw', 'w_oihw'], ['y_nchw'], convAttributes(g, depthwise ? ci : 1)));
  nodes.push(node('Transpose', ['y_nchw'], ['y_nhwc'], { perm: { ints: NCHW_TO_NHWC } }));
  const tail = epilogueNodes('y_nhwc', epilogue, initializers);
  nodes.push(...tail.nodes);
  return encodeModel({
    graphName: 'ort_cpu_conv',
    inputs: [tensorValueInfo('x', 'float32', xShape), tensorValueInfo('w', 'float32', wShape), ...epilogueInputs(epilogue)],
    outputs: [tensorValueInfo('y', 'float32', outShape)],
    nodes: finish(nodes, tail.output),
    initializers,
  });
}

/**
 * Gradient of a convolution with respect to its input: ConvTranspose of dy [b, oh, ow, co'] with the
 * forward filter, NHWC out [b, h, w, ci]. `outputPadding` makes the output exactly h x w (it is the
 * rows and columns the forward convolution's floor division dropped, between 0 and stride - 1).
 */
export function convBackpropInputModel(
  dyShape: readonly number[],
  wShape: readonly number[],
  depthwise: boolean,
  g: ConvGeometry,
  outputPadding: readonly [number, number],
  inShape: readonly number[],
): Uint8Array {
  const [kh, kw, ci, co] = wShape as [number, number, number, number];
  const nodes: NodeProto[] = [node('Transpose', ['dy'], ['dy_nchw'], { perm: { ints: NHWC_TO_NCHW } })];
  const initializers: TensorProto[] = [];
  if (depthwise) {
    // ConvTranspose weight [C_in = ci*m, C_out/group = 1, kh, kw], group ci.
    nodes.push(node('Transpose', ['w'], ['w_cmhw'], { perm: { ints: [2, 3, 0, 1] } }));
    initializers.push(int64Tensor('w_shape', [4], [ci * co, 1, kh, kw]));
    nodes.push(node('Reshape', ['w_cmhw', 'w_shape'], ['w_t']));
  } else {
    // ConvTranspose weight [C_in = co, C_out = ci, kh, kw].
    nodes.push(node('Transpose', ['w'], ['w_t'], { perm: { ints: [3, 2, 0, 1] } }));
  }
  nodes.push(node('ConvTranspose', ['dy_nchw', 'w_t'], ['dx_nchw'], { ...convAttributes(g, depthwise ? ci : 1), output_padding: { ints: [...outputPadding] } }));
  nodes.push(node('Transpose', ['dx_nchw'], ['y'], { perm: { ints: NCHW_TO_NHWC } }));
  return encodeModel({
    graphName: 'ort_cpu_conv_backprop_input',
    inputs: [tensorValueInfo('dy', 'float32', dyShape), tensorValueInfo('w', 'float32', wShape)],
    outputs: [tensorValueInfo('y', 'float32', inShape)],
    nodes,
    initializers,
  });
}

/**
 * Gradient of a convolution with respect to its filter (see the file comment for the identities):
 * x [b, h, w, ci] and dy [b, oh, ow, co'] to dW [kh, kw, ci, co] (regular) or [kh, kw, ci, m]
 * (depthwise, co' = ci*m).
 */
export function convBackpropFilterModel(xShape: readonly number[], dyShape: readonly number[], depthwise: boolean, g: ConvGeometry, filterShape: readonly number[]): Uint8Array {
  return depthwise ? depthwiseBackpropFilterModel(xShape, dyShape, g, filterShape) : im2colBackpropFilterModel(xShape, dyShape, g, filterShape);
}

/**
 * Nodes turning NHWC `input` ([b, h, w, ci]) into its patches `cols` ([b*oh*ow, kh*kw*ci], taps in
 * (kh, kw) order with channels innermost, tfjs's filter order): pad, one strided Slice per filter
 * tap, concatenated along the channel axis.
 */
function im2colNodes(input: string, g: ConvGeometry, kernel: readonly [number, number, number], out: readonly [number, number, number], nodes: NodeProto[], initializers: TensorProto[]): string {
  const [kh, kw, ci] = kernel;
  const [b, oh, ow] = out;
  const [top, left, bottom, right] = g.pads;
  let padded = input;
  if (top || left || bottom || right) {
    initializers.push(int64Tensor('im2col_pads', [8], [0, top, left, 0, 0, bottom, right, 0]));
    nodes.push(node('Pad', [input, 'im2col_pads'], ['im2col_padded']));
    padded = 'im2col_padded';
  }
  initializers.push(int64Tensor('tap_axes', [2], [1, 2]), int64Tensor('tap_steps', [2], [...g.strides]));
  const taps: string[] = [];
  for (let r = 0; r < kh; r++) {
    for (let c = 0; c < kw; c++) {
      // Tap (r, c) of every output position: padded rows r*d, r*d + s, ..., (oh - 1)*s + r*d.
      const start = [r * g.dilations[0], c * g.dilations[1]];
      const end = [(start[0] as number) + (oh - 1) * g.strides[0] + 1, (start[1] as number) + (ow - 1) * g.strides[1] + 1];
      initializers.push(int64Tensor(`tap_${r}_${c}_starts`, [2], start), int64Tensor(`tap_${r}_${c}_ends`, [2], end));
      nodes.push(node('Slice', [padded, `tap_${r}_${c}_starts`, `tap_${r}_${c}_ends`, 'tap_axes', 'tap_steps'], [`tap_${r}_${c}`]));
      taps.push(`tap_${r}_${c}`);
    }
  }
  initializers.push(int64Tensor('cols_shape', [2], [b * oh * ow, kh * kw * ci]));
  nodes.push(node('Concat', taps, ['patches'], { axis: { i: 3 } }));
  nodes.push(node('Reshape', ['patches', 'cols_shape'], ['cols']));
  return 'cols';
}

/** Regular filter gradient: im2col of x, transposed, times dy in one Gemm. */
function im2colBackpropFilterModel(xShape: readonly number[], dyShape: readonly number[], g: ConvGeometry, filterShape: readonly number[]): Uint8Array {
  const [kh, kw, ci, co] = filterShape as [number, number, number, number];
  const [b, oh, ow] = dyShape as [number, number, number, number];
  const nodes: NodeProto[] = [];
  const initializers: TensorProto[] = [int64Tensor('dy_shape', [2], [b * oh * ow, co]), int64Tensor('dw_shape', [4], [kh, kw, ci, co])];
  const cols = im2colNodes('x', g, [kh, kw, ci], [b, oh, ow], nodes, initializers);
  nodes.push(node('Reshape', ['dy', 'dy_shape'], ['dy_rows']));
  nodes.push(node('Gemm', [cols, 'dy_rows'], ['dw_rows'], { transA: { i: 1 } }));
  nodes.push(node('Reshape', ['dw_rows', 'dw_shape'], ['y']));
  return encodeModel({
    graphName: 'ort_cpu_conv_backprop_filter',
    inputs: [tensorValueInfo('x', 'float32', xShape), tensorValueInfo('dy', 'float32', dyShape)],
    outputs: [tensorValueInfo('y', 'float32', filterShape)],
    nodes,
    initializers,
  });
}

/** Depthwise filter gradient: a grouped convolution of x with dy as the filter. */
function depthwiseBackpropFilterModel(xShape: readonly number[], dyShape: readonly number[], g: ConvGeometry, filterShape: readonly number[]): Uint8Array {
  const [b, h, w, ci] = xShape as [number, number, number, number];
  const [kh, kw, , m] = filterShape as [number, number, number, number];
  const initializers: TensorProto[] = [];
  const nodes: NodeProto[] = [
    // x as [ci, b, h, w]; dy as the filter [co', b, oh, ow]
    node('Transpose', ['x'], ['x_cbhw'], { perm: { ints: [3, 0, 1, 2] } }),
    node('Transpose', ['dy'], ['dy_filter'], { perm: { ints: [3, 0, 1, 2] } }),
  ];
  const swapped: ConvGeometry = { strides: g.dilations, dilations: g.strides, pads: g.pads };
  initializers.push(int64Tensor('x_shape', [4], [1, ci * b, h, w]));
  nodes.push(node('Reshape', ['x_cbhw', 'x_shape'], ['x_grouped']));
  nodes.push(node('Conv', ['x_grouped', 'dy_filter'], ['dw_full'], convAttributes(swapped, ci)));
  // dw_full: [1, ci*m, KH', KW']; keep the first kh x kw.
  initializers.push(int64Tensor('slice_starts', [2], [0, 0]), int64Tensor('slice_ends', [2], [kh, kw]), int64Tensor('slice_axes', [2], [2, 3]));
  nodes.push(node('Slice', ['dw_full', 'slice_starts', 'slice_ends', 'slice_axes'], ['dw_sliced']));
  initializers.push(int64Tensor('dw_shape', [4], [ci, m, kh, kw]));
  nodes.push(node('Reshape', ['dw_sliced', 'dw_shape'], ['dw_cmhw']));
  nodes.push(node('Transpose', ['dw_cmhw'], ['y'], { perm: { ints: [2, 3, 0, 1] } }));
  return encodeModel({
    graphName: 'ort_cpu_depthwise_backprop_filter',
    inputs: [tensorValueInfo('x', 'float32', xShape), tensorValueInfo('dy', 'float32', dyShape)],
    outputs: [tensorValueInfo('y', 'float32', filterShape)],
    nodes,
    initializers,
  });
}

/**
 * One element-wise binary operator (`Add`, `Sub`, `Mul`, `Div`) on float32 inputs `a` and `b`, with
 * ONNX's numpy broadcasting (which is tfjs's).
 */
export function binaryModel(op: 'Add' | 'Sub' | 'Mul' | 'Div', aShape: readonly number[], bShape: readonly number[], outShape: readonly number[]): Uint8Array {
  return encodeModel({
    graphName: `ort_cpu_${op.toLowerCase()}`,
    inputs: [tensorValueInfo('a', 'float32', aShape), tensorValueInfo('b', 'float32', bShape)],
    outputs: [tensorValueInfo('y', 'float32', outShape)],
    nodes: [node(op, ['a', 'b'], ['y'])],
  });
}
