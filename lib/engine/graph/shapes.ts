/**
 * @file Static shapes of a forward graph at a fixed batch size, and constant folding of its shape
 * computations.
 *
 * The graph trainer compiles one step graph per input size, so every tensor's dimensions are known
 * at compile time: gradient rules use them (a broadcast's reduction axes, a transposed convolution's
 * output padding), and the shape arithmetic PyTorch's exporter writes (`Shape -> Gather -> Unsqueeze
 * -> Concat -> Reshape`, `Shape -> Expand` of F.normalize) is evaluated here and disappears from the
 * step graph. Only nodes whose inputs are all constants and none of them a trained weight are folded,
 * and only up to {@link MAX_FOLDED_ELEMENTS} elements.
 */
import { DmlError } from '../../errors.js';
import { describeNode, elementCount, intAttribute, intsAttribute, type IrElementType, type IrGraph, type IrNode, type IrTensor } from './onnx-ir.js';

/** A tensor's element type and dimensions. */
export interface ValueShape {
  readonly type: IrElementType;
  readonly dims: readonly number[];
}

/** The result of {@link inferShapes}. */
export interface ShapedGraph {
  /** Every value's shape: inputs, initializers, node outputs (folded ones included). */
  readonly shapes: ReadonlyMap<string, ValueShape>;
  /** Constants: initializers that are not trained and folded node outputs. */
  readonly constants: ReadonlyMap<string, IrTensor>;
  /** The nodes left to run, in graph order. */
  readonly nodes: readonly IrNode[];
}

/** The largest tensor a folded node may produce. */
export const MAX_FOLDED_ELEMENTS = 65_536;

type ShapeFunction = (node: IrNode, inputs: readonly (ValueShape | undefined)[], constant: (i: number) => IrTensor | undefined) => ValueShape[];

function broadcast(node: IrNode, shapes: readonly (readonly number[])[]): number[] {
  const rank = Math.max(...shapes.map((s) => s.length));
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    let d = 1;
    for (const s of shapes) {
      const v = s[s.length - rank + i] ?? 1;
      if (v !== 1 && d !== 1 && v !== d) throw new DmlError('E_MODEL', `${describeNode(node)}: shapes [${shapes.map((x) => x.join(', ')).join('] and [')}] do not broadcast`);
      if (v !== 1) d = v;
    }
    out.push(d);
  }
  return out;
}

function required(node: IrNode, inputs: readonly (ValueShape | undefined)[], i: number): ValueShape {
  const s = inputs[i];
  if (!s) throw new DmlError('E_MODEL', `${describeNode(node)}: input ${i} is missing`);
  return s;
}

function constantInts(node: IrNode, constant: (i: number) => IrTensor | undefined, i: number, what: string): number[] {
  const c = constant(i);
  if (!c) throw new DmlError('E_MODEL', `${describeNode(node)}: its ${what} (input ${i}) must be a constant at a fixed batch size; it is computed from data`);
  return Array.from(c.data);
}

function normalizeAxis(node: IrNode, axis: number, rank: number): number {
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw new DmlError('E_MODEL', `${describeNode(node)}: axis ${axis} is outside rank ${rank}`);
  return a;
}

/** Reduction axes of a Reduce* node (attribute, or input 1 for ReduceSum and opset 18 style), normalised and sorted. */
export function reductionAxes(node: IrNode, rank: number, constant: (i: number) => IrTensor | undefined): number[] {
  let axes: readonly number[] | undefined;
  if (node.inputs[1]) axes = constantInts(node, constant, 1, 'axes');
  else if (node.attributes.has('axes')) axes = intsAttribute(node, 'axes', []);
  if (!axes || axes.length === 0) {
    if (intAttribute(node, 'noop_with_empty_axes', 0) === 1) return [];
    return Array.from({ length: rank }, (_, i) => i);
  }
  return [...new Set(axes.map((a) => normalizeAxis(node, a, rank)))].sort((a, b) => a - b);
}

/** The explicit [begin..., end...] pads of a Conv or pooling node over `spatial` input sizes. */
export function spatialPads(node: IrNode, spatial: readonly number[], kernel: readonly number[], strides: readonly number[], dilations: readonly number[]): number[] {
  const autoPad = node.attributes.get('auto_pad');
  const mode = autoPad && 's' in autoPad ? autoPad.s : 'NOTSET';
  const n = spatial.length;
  if (mode === 'NOTSET') return [...intsAttribute(node, 'pads', new Array<number>(2 * n).fill(0))];
  if (mode === 'VALID') return new Array<number>(2 * n).fill(0);
  const begin: number[] = [];
  const end: number[] = [];
  for (let i = 0; i < n; i++) {
    const size = spatial[i] as number;
    const stride = strides[i] as number;
    const out = Math.ceil(size / stride);
    const total = Math.max(0, (out - 1) * stride + ((kernel[i] as number) - 1) * (dilations[i] as number) + 1 - size);
    const small = Math.floor(total / 2);
    begin.push(mode === 'SAME_UPPER' ? small : total - small);
    end.push(mode === 'SAME_UPPER' ? total - small : small);
  }
  return [...begin, ...end];
}

/** Spatial geometry of a Conv or pooling node applied to an input of dims `x` ([N, C, ...spatial]). */
export interface WindowGeometry {
  readonly kernel: readonly number[];
  readonly strides: readonly number[];
  readonly dilations: readonly number[];
  /** [begin..., end...]. */
  readonly pads: readonly number[];
  readonly output: readonly number[];
}

/** The window geometry of `node` (kernel from `kernel_shape` or, for Conv, the weight's dims). */
export function windowGeometry(node: IrNode, x: readonly number[], kernelFromWeight?: readonly number[]): WindowGeometry {
  const spatial = x.slice(2);
  const n = spatial.length;
  const kernel = intsAttribute(node, 'kernel_shape', kernelFromWeight ?? []);
  if (kernel.length !== n) throw new DmlError('E_MODEL', `${describeNode(node)}: kernel_shape [${kernel.join(', ')}] does not match ${n} spatial dimensions`);
  const strides = intsAttribute(node, 'strides', new Array<number>(n).fill(1));
  const dilations = intsAttribute(node, 'dilations', new Array<number>(n).fill(1));
  const pads = spatialPads(node, spatial, kernel, strides, dilations);
  const ceil = intAttribute(node, 'ceil_mode', 0) === 1;
  const output = spatial.map((size, i) => {
    const span = ((kernel[i] as number) - 1) * (dilations[i] as number) + 1;
    const room = size + (pads[i] as number) + (pads[i + n] as number) - span;
    let out = (ceil ? Math.ceil(room / (strides[i] as number)) : Math.floor(room / (strides[i] as number))) + 1;
    // ceil_mode: the last window must start inside the input or the begin padding (PyTorch's rule).
    if (ceil && (out - 1) * (strides[i] as number) >= size + (pads[i] as number)) out -= 1;
    return out;
  });
  return { kernel, strides, dilations, pads, output };
}

const sameAsInput: ShapeFunction = (node, inputs) => [required(node, inputs, 0)];
const elementwise: ShapeFunction = (node, inputs) => {
  const first = required(node, inputs, 0);
  return [{ type: first.type, dims: broadcast(node, inputs.filter((s): s is ValueShape => s !== undefined).map((s) => s.dims)) }];
};
const comparison: ShapeFunction = (node, inputs) => [{ type: 'bool', dims: elementwise(node, inputs, () => undefined)[0]?.dims ?? [] }];
const reduce: ShapeFunction = (node, inputs, constant) => {
  const x = required(node, inputs, 0);
  const axes = reductionAxes(node, x.dims.length, constant);
  const keep = intAttribute(node, 'keepdims', 1) === 1;
  const dims = keep ? x.dims.map((d, i) => (axes.includes(i) ? 1 : d)) : x.dims.filter((_, i) => !axes.includes(i));
  return [{ type: x.type, dims }];
};
/** ArgMax and ArgMin: int64 indices, the `axis` attribute's axis removed or kept as 1 (`keepdims`). */
const argReduce: ShapeFunction = (node, inputs) => {
  const x = required(node, inputs, 0);
  const axis = normalizeAxis(node, intAttribute(node, 'axis', 0), x.dims.length);
  const keep = intAttribute(node, 'keepdims', 1) === 1;
  return [{ type: 'int64', dims: keep ? x.dims.map((d, i) => (i === axis ? 1 : d)) : x.dims.filter((_, i) => i !== axis) }];
};
const globalPool: ShapeFunction = (node, inputs) => {
  const x = required(node, inputs, 0);
  return [{ type: x.type, dims: x.dims.map((d, i) => (i < 2 ? d : 1)) }];
};

function reshapeTarget(node: IrNode, input: readonly number[], target: readonly number[]): number[] {
  const allowZero = intAttribute(node, 'allowzero', 0) === 1;
  const dims = target.map((d, i) => (d === 0 && !allowZero ? (input[i] as number) : d));
  const known = dims.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
  const total = elementCount(input);
  const out = dims.map((d) => (d === -1 ? total / known : d));
  if (elementCount(out) !== total || out.some((d) => !Number.isInteger(d))) {
    throw new DmlError('E_MODEL', `${describeNode(node)}: cannot reshape [${input.join(', ')}] to [${target.join(', ')}]`);
  }
  return out;
}

const SHAPE_FUNCTIONS: Readonly<Record<string, ShapeFunction>> = {
  Identity: sameAsInput, Relu: sameAsInput, Sigmoid: sameAsInput, Tanh: sameAsInput, Clip: sameAsInput, LeakyRelu: sameAsInput,
  Sqrt: sameAsInput, Exp: sameAsInput, Log: sameAsInput, Neg: sameAsInput, Reciprocal: sameAsInput, Softplus: sameAsInput,
  Erf: sameAsInput, Abs: sameAsInput, Sign: sameAsInput, LpNormalization: sameAsInput, Softmax: sameAsInput, LogSoftmax: sameAsInput, HardSigmoid: sameAsInput, HardSwish: sameAsInput, Elu: sameAsInput,
  Dropout: (node, inputs) => [required(node, inputs, 0), { type: 'bool', dims: required(node, inputs, 0).dims }],
  Add: elementwise, Sub: elementwise, Mul: elementwise, Div: elementwise, Pow: (node, inputs) => [{ type: required(node, inputs, 0).type, dims: elementwise(node, inputs, () => undefined)[0]?.dims ?? [] }],
  Max: elementwise, Min: elementwise, Sum: elementwise,
  Where: (node, inputs) => [{ type: required(node, inputs, 1).type, dims: elementwise(node, inputs, () => undefined)[0]?.dims ?? [] }],
  Equal: comparison, Greater: comparison, Less: comparison, GreaterOrEqual: comparison, LessOrEqual: comparison, Not: comparison, And: comparison, Or: comparison,
  Cast: (node, inputs) => {
    const to = intAttribute(node, 'to', 1);
    const type = ({ 1: 'float32', 11: 'float64', 7: 'int64', 6: 'int32', 9: 'bool' } as Record<number, IrElementType>)[to];
    if (!type) throw new DmlError('E_MODEL', `${describeNode(node)}: casts to ONNX type ${to}; the graph trainer handles float32, float64, int64, int32 and bool`);
    return [{ type, dims: required(node, inputs, 0).dims }];
  },
  ReduceMean: reduce, ReduceMax: reduce, ReduceMin: reduce, ReduceSum: reduce, ReduceL2: reduce, ReduceProd: reduce,
  GlobalAveragePool: globalPool, GlobalMaxPool: globalPool,
  Conv: (node, inputs) => {
    const x = required(node, inputs, 0);
    const w = required(node, inputs, 1);
    const g = windowGeometry(node, x.dims, w.dims.slice(2));
    return [{ type: 'float32', dims: [x.dims[0] as number, w.dims[0] as number, ...g.output] }];
  },
  MaxPool: (node, inputs) => {
    const x = required(node, inputs, 0);
    const dims = [x.dims[0] as number, x.dims[1] as number, ...windowGeometry(node, x.dims).output];
    return [{ type: x.type, dims }, { type: 'int64', dims }];
  },
  AveragePool: (node, inputs) => {
    const x = required(node, inputs, 0);
    return [{ type: x.type, dims: [x.dims[0] as number, x.dims[1] as number, ...windowGeometry(node, x.dims).output] }];
  },
  BatchNormalization: (node, inputs) => {
    const x = required(node, inputs, 0);
    const c = [x.dims[1] as number];
    return [x, { type: 'float32', dims: c }, { type: 'float32', dims: c }];
  },
  LayerNormalization: (node, inputs) => {
    const x = required(node, inputs, 0);
    const rawAxis = intAttribute(node, 'axis', -1);
    const axis = rawAxis < 0 ? rawAxis + x.dims.length : rawAxis;
    const statistics = { type: 'float32' as const, dims: x.dims.map((d, i) => (i < axis ? d : 1)) };
    return [x, statistics, statistics];
  },
  Gemm: (node, inputs) => {
    const a = required(node, inputs, 0).dims;
    const b = required(node, inputs, 1).dims;
    const m = intAttribute(node, 'transA', 0) ? a[1] : a[0];
    const n = intAttribute(node, 'transB', 0) ? b[0] : b[1];
    return [{ type: 'float32', dims: [m as number, n as number] }];
  },
  MatMul: (node, inputs) => {
    const a = required(node, inputs, 0).dims;
    const b = required(node, inputs, 1).dims;
    if (a.length < 2 || b.length < 2) throw new DmlError('E_MODEL', `${describeNode(node)}: MatMul of rank-1 operands is not supported by the graph trainer (shapes [${a.join(', ')}] and [${b.join(', ')}])`);
    if (a[a.length - 1] !== b[b.length - 2]) throw new DmlError('E_MODEL', `${describeNode(node)}: cannot multiply [${a.join(', ')}] by [${b.join(', ')}]`);
    const batch = broadcast(node, [a.slice(0, -2), b.slice(0, -2)]);
    return [{ type: 'float32', dims: [...batch, a[a.length - 2] as number, b[b.length - 1] as number] }];
  },
  Flatten: (node, inputs) => {
    const x = required(node, inputs, 0);
    const axis = normalizeAxis(node, intAttribute(node, 'axis', 1), x.dims.length + 1);
    return [{ type: x.type, dims: [elementCount(x.dims.slice(0, axis)), elementCount(x.dims.slice(axis))] }];
  },
  Reshape: (node, inputs, constant) => {
    const x = required(node, inputs, 0);
    return [{ type: x.type, dims: reshapeTarget(node, x.dims, constantInts(node, constant, 1, 'target shape')) }];
  },
  Transpose: (node, inputs) => {
    const x = required(node, inputs, 0);
    const perm = intsAttribute(node, 'perm', x.dims.map((_, i) => x.dims.length - 1 - i));
    return [{ type: x.type, dims: perm.map((p) => x.dims[p] as number) }];
  },
  Concat: (node, inputs) => {
    const first = required(node, inputs, 0);
    const axis = normalizeAxis(node, intAttribute(node, 'axis', 0), first.dims.length);
    const dims = [...first.dims];
    dims[axis] = inputs.reduce((sum, s) => sum + ((s?.dims[axis] as number | undefined) ?? 0), 0);
    return [{ type: first.type, dims }];
  },
  Split: (node, inputs, constant) => {
    const x = required(node, inputs, 0);
    const axis = normalizeAxis(node, intAttribute(node, 'axis', 0), x.dims.length);
    const sizes = splitSizes(node, x.dims[axis] as number, constant);
    return sizes.map((size) => ({ type: x.type, dims: x.dims.map((d, i) => (i === axis ? size : d)) }));
  },
  Squeeze: (node, inputs, constant) => {
    const x = required(node, inputs, 0);
    const axes = node.inputs[1] ? constantInts(node, constant, 1, 'axes').map((a) => normalizeAxis(node, a, x.dims.length)) : x.dims.flatMap((d, i) => (d === 1 ? [i] : []));
    return [{ type: x.type, dims: x.dims.filter((_, i) => !axes.includes(i)) }];
  },
  Unsqueeze: (node, inputs, constant) => {
    const x = required(node, inputs, 0);
    const rank = x.dims.length + constantInts(node, constant, 1, 'axes').length;
    const axes = constantInts(node, constant, 1, 'axes').map((a) => normalizeAxis(node, a, rank));
    const dims: number[] = [];
    let source = 0;
    for (let i = 0; i < rank; i++) dims.push(axes.includes(i) ? 1 : (x.dims[source++] as number));
    return [{ type: x.type, dims }];
  },
  ArgMax: argReduce,
  ArgMin: argReduce,
  Size: () => [{ type: 'int64', dims: [] }],
  Shape: (node, inputs) => {
    const rank = required(node, inputs, 0).dims.length;
    const start = intAttribute(node, 'start', 0);
    const end = intAttribute(node, 'end', rank);
    const clamp = (v: number): number => Math.min(rank, Math.max(0, v < 0 ? v + rank : v));
    return [{ type: 'int64', dims: [Math.max(0, clamp(end) - clamp(start))] }];
  },
  Gather: (node, inputs) => {
    const data = required(node, inputs, 0);
    const indices = required(node, inputs, 1);
    const axis = normalizeAxis(node, intAttribute(node, 'axis', 0), data.dims.length);
    return [{ type: data.type, dims: [...data.dims.slice(0, axis), ...indices.dims, ...data.dims.slice(axis + 1)] }];
  },
  Expand: (node, inputs, constant) => {
    const x = required(node, inputs, 0);
    return [{ type: x.type, dims: broadcast(node, [x.dims, constantInts(node, constant, 1, 'shape')]) }];
  },
  Slice: (node, inputs, constant) => {
    const x = required(node, inputs, 0);
    return [{ type: x.type, dims: sliceGeometry(node, x.dims, constant).dims }];
  },
  Pad: (node, inputs, constant) => {
    const x = required(node, inputs, 0);
    const pads = constantInts(node, constant, 1, 'pads');
    const n = x.dims.length;
    return [{ type: x.type, dims: x.dims.map((d, i) => d + (pads[i] as number) + (pads[i + n] as number)) }];
  },
  ConstantOfShape: (node, _inputs, constant) => {
    const value = node.attributes.get('value');
    return [{ type: value && 't' in value ? value.t.type : 'float32', dims: constantInts(node, constant, 0, 'shape') }];
  },
  Range: (node, _inputs, constant) => {
    const [start, limit, delta] = [0, 1, 2].map((i) => constantInts(node, constant, i, 'range bound')[0] as number);
    const type = constant(0)?.type ?? 'int64';
    return [{ type, dims: [Math.max(0, Math.ceil(((limit as number) - (start as number)) / (delta as number)))] }];
  },
};

/** The sizes a Split node cuts its axis of length `length` into. */
export function splitSizes(node: IrNode, length: number, constant: (i: number) => IrTensor | undefined): number[] {
  if (node.inputs[1]) return constantInts(node, constant, 1, 'split sizes');
  const parts = node.outputs.length;
  if (length % parts !== 0) throw new DmlError('E_MODEL', `${describeNode(node)}: cannot split ${length} into ${parts} equal parts`);
  return new Array<number>(parts).fill(length / parts);
}

/** Per-axis start, step and length of a Slice node over an input of `dims`. */
export function sliceGeometry(node: IrNode, dims: readonly number[], constant: (i: number) => IrTensor | undefined): { starts: number[]; steps: number[]; dims: number[] } {
  const startsIn = constantInts(node, constant, 1, 'starts');
  const endsIn = constantInts(node, constant, 2, 'ends');
  const axes = node.inputs[3] ? constantInts(node, constant, 3, 'axes') : startsIn.map((_, i) => i);
  const stepsIn = node.inputs[4] ? constantInts(node, constant, 4, 'steps') : startsIn.map(() => 1);
  const starts = dims.map(() => 0);
  const steps = dims.map(() => 1);
  const out = [...dims];
  axes.forEach((a, k) => {
    const axis = normalizeAxis(node, a, dims.length);
    const size = dims[axis] as number;
    const step = stepsIn[k] as number;
    const clampIndex = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v < 0 ? v + size : v));
    const start = step > 0 ? clampIndex(startsIn[k] as number, 0, size) : clampIndex(startsIn[k] as number, 0, size - 1);
    const end = step > 0 ? clampIndex(endsIn[k] as number, 0, size) : clampIndex(endsIn[k] as number, -1, size - 1);
    starts[axis] = start;
    steps[axis] = step;
    out[axis] = Math.max(0, Math.ceil((end - start) / step));
  });
  return { starts, steps, dims: out };
}

// ---- constant folding ----

function strides(dims: readonly number[]): number[] {
  const s = new Array<number>(dims.length).fill(1);
  for (let i = dims.length - 2; i >= 0; i--) s[i] = (s[i + 1] as number) * (dims[i + 1] as number);
  return s;
}

function broadcastRead(t: IrTensor, outDims: readonly number[], flat: number): number {
  const rank = outDims.length;
  const inStrides = strides(t.dims);
  let index = 0;
  let rest = flat;
  for (let axis = rank - 1; axis >= 0; axis--) {
    const size = outDims[axis] as number;
    const coordinate = rest % size;
    rest = Math.floor(rest / size);
    const inAxis = axis - (rank - t.dims.length);
    if (inAxis >= 0 && (t.dims[inAxis] as number) !== 1) index += coordinate * (inStrides[inAxis] as number);
  }
  return t.data[index] as number;
}

function tensorOf(type: IrElementType, dims: readonly number[], values: ArrayLike<number>): IrTensor {
  const data = type === 'float32' ? Float32Array.from(values) : Float64Array.from(values);
  return { type, dims: [...dims], data };
}

type FoldFunction = (node: IrNode, inputs: readonly IrTensor[], out: readonly ValueShape[]) => IrTensor[];

const binaryFold = (f: (a: number, b: number, integer: boolean) => number): FoldFunction => (_node, [a, b], [out]) => {
  const dims = (out as ValueShape).dims;
  const integer = !['float32', 'float64'].includes((a as IrTensor).type);
  const values = Array.from({ length: elementCount(dims) }, (_, i) => f(broadcastRead(a as IrTensor, dims, i), broadcastRead(b as IrTensor, dims, i), integer));
  return [tensorOf((out as ValueShape).type, dims, values)];
};

const FOLDS: Readonly<Record<string, FoldFunction>> = {
  Identity: (_n, [x]) => [x as IrTensor],
  Cast: (_n, [x], [out]) => [tensorOf((out as ValueShape).type, (x as IrTensor).dims, ['float32', 'float64'].includes((out as ValueShape).type) ? (x as IrTensor).data : Array.from((x as IrTensor).data, (v) => ((out as ValueShape).type === 'bool' ? (v !== 0 ? 1 : 0) : Math.trunc(v))))],
  Reshape: (_n, [x], [out]) => [tensorOf((x as IrTensor).type, (out as ValueShape).dims, (x as IrTensor).data)],
  Squeeze: (_n, [x], [out]) => [tensorOf((x as IrTensor).type, (out as ValueShape).dims, (x as IrTensor).data)],
  Unsqueeze: (_n, [x], [out]) => [tensorOf((x as IrTensor).type, (out as ValueShape).dims, (x as IrTensor).data)],
  Flatten: (_n, [x], [out]) => [tensorOf((x as IrTensor).type, (out as ValueShape).dims, (x as IrTensor).data)],
  Concat: (node, inputs, [out]) => {
    const dims = (out as ValueShape).dims;
    const axis = normalizeAxis(node, intAttribute(node, 'axis', 0), dims.length);
    const outer = elementCount(dims.slice(0, axis));
    const values: number[] = [];
    for (let o = 0; o < outer; o++) {
      for (const t of inputs) {
        const block = elementCount(t.dims.slice(axis));
        for (let k = 0; k < block; k++) values.push(t.data[o * block + k] as number);
      }
    }
    return [tensorOf((out as ValueShape).type, dims, values)];
  },
  Gather: (node, [data, indices], [out]) => {
    const d = data as IrTensor;
    const axis = normalizeAxis(node, intAttribute(node, 'axis', 0), d.dims.length);
    const outer = elementCount(d.dims.slice(0, axis));
    const size = d.dims[axis] as number;
    const inner = elementCount(d.dims.slice(axis + 1));
    const values: number[] = [];
    for (let o = 0; o < outer; o++) {
      for (const raw of (indices as IrTensor).data) {
        const index = raw < 0 ? raw + size : raw;
        for (let k = 0; k < inner; k++) values.push(d.data[(o * size + index) * inner + k] as number);
      }
    }
    return [tensorOf(d.type, (out as ValueShape).dims, values)];
  },
  Slice: (node, [x, ...rest], [out]) => {
    const t = x as IrTensor;
    const geometry = sliceGeometry(node, t.dims, (i) => rest[i - 1]);
    const inStrides = strides(t.dims);
    const dims = (out as ValueShape).dims;
    const values = Array.from({ length: elementCount(dims) }, (_, flat) => {
      let rem = flat;
      let index = 0;
      for (let axis = dims.length - 1; axis >= 0; axis--) {
        const c = rem % (dims[axis] as number);
        rem = Math.floor(rem / (dims[axis] as number));
        index += ((geometry.starts[axis] as number) + c * (geometry.steps[axis] as number)) * (inStrides[axis] as number);
      }
      return t.data[index] as number;
    });
    return [tensorOf(t.type, dims, values)];
  },
  ConstantOfShape: (node, _inputs, [out]) => {
    const value = node.attributes.get('value');
    const v = value && 't' in value ? (value.t.data[0] ?? 0) : 0;
    return [tensorOf((out as ValueShape).type, (out as ValueShape).dims, new Array<number>(elementCount((out as ValueShape).dims)).fill(v))];
  },
  Range: (_n, [start, , delta], [out]) => [tensorOf((out as ValueShape).type, (out as ValueShape).dims, Array.from({ length: elementCount((out as ValueShape).dims) }, (_, i) => ((start as IrTensor).data[0] as number) + i * ((delta as IrTensor).data[0] as number)))],
  Add: binaryFold((a, b) => a + b),
  Sub: binaryFold((a, b) => a - b),
  Mul: binaryFold((a, b) => a * b),
  Div: binaryFold((a, b, integer) => (integer ? Math.trunc(a / b) : a / b)),
  Equal: binaryFold((a, b) => (a === b ? 1 : 0)),
  Where: (_n, [c, a, b], [out]) => {
    const dims = (out as ValueShape).dims;
    return [tensorOf((out as ValueShape).type, dims, Array.from({ length: elementCount(dims) }, (_, i) => (broadcastRead(c as IrTensor, dims, i) ? broadcastRead(a as IrTensor, dims, i) : broadcastRead(b as IrTensor, dims, i))))];
  },
};

/** Operator types {@link inferShapes} can give shapes to. */
export function hasShapeFunction(opType: string): boolean {
  return opType in SHAPE_FUNCTIONS;
}

/**
 * Shapes of every value of `graph` with its data inputs fixed to `inputDims`, folding shape
 * computations into constants. `trained` names the initializers that are weights (never folded).
 * Throws E_MODEL naming the first node whose operator has no shape function or whose shapes do not fit.
 */
export function inferShapes(graph: IrGraph, inputDims: ReadonlyMap<string, readonly number[]>, trained: ReadonlySet<string>): ShapedGraph {
  const shapes = new Map<string, ValueShape>();
  const constants = new Map<string, IrTensor>();
  for (const input of graph.inputs) {
    const dims = inputDims.get(input.name);
    if (!dims) throw new DmlError('E_MODEL', `graph input ${input.name} was given no size`);
    shapes.set(input.name, { type: input.type, dims });
  }
  for (const [name, t] of graph.initializers) {
    shapes.set(name, { type: t.type, dims: t.dims });
    if (!trained.has(name)) constants.set(name, t);
  }
  const nodes: IrNode[] = [];
  for (const node of graph.nodes) {
    const shapeFunction = SHAPE_FUNCTIONS[node.opType];
    if (!shapeFunction) throw new DmlError('E_MODEL', `${describeNode(node)}: the graph trainer has no rule for ${node.opType}`);
    const inputs = node.inputs.map((name) => (name ? shapes.get(name) : undefined));
    node.inputs.forEach((name, i) => {
      if (name && !inputs[i]) throw new DmlError('E_MODEL', `${describeNode(node)}: input ${name} is produced by no earlier node`);
    });
    const constant = (i: number): IrTensor | undefined => {
      const name = node.inputs[i];
      return name ? constants.get(name) : undefined;
    };
    const outShapes = shapeFunction(node, inputs, constant);
    node.outputs.forEach((name, i) => {
      const s = outShapes[i];
      if (name && s) shapes.set(name, s);
    });
    const fold = FOLDS[node.opType];
    const present = node.inputs.filter((name) => name !== '');
    const foldable = fold !== undefined && present.length > 0 && present.every((name) => constants.has(name)) && outShapes.every((s) => elementCount(s.dims) <= MAX_FOLDED_ELEMENTS);
    if (node.opType === 'Shape') {
      // A shape is known at a fixed input size, whether or not the tensor itself is.
      const dims = (inputs[0] as ValueShape).dims;
      const rank = dims.length;
      const clamp = (v: number): number => Math.min(rank, Math.max(0, v < 0 ? v + rank : v));
      constants.set(node.outputs[0] as string, tensorOf('int64', (outShapes[0] as ValueShape).dims, dims.slice(clamp(intAttribute(node, 'start', 0)), clamp(intAttribute(node, 'end', rank)))));
    } else if (foldable) {
      const values = fold(node, node.inputs.map((name) => (name ? constants.get(name) : undefined) as IrTensor), outShapes);
      node.outputs.forEach((name, i) => {
        const v = values[i];
        if (name && v) constants.set(name, v);
      });
    } else {
      nodes.push(node);
    }
  }
  return { shapes, constants, nodes };
}
