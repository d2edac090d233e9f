/**
 * @file An ONNX forward graph as plain data, the form the graph trainer compiles from: nodes with
 * decoded attributes, initializers as typed arrays, graph inputs and outputs with their shapes.
 *
 * {@link readOnnxGraph} decodes a model file's bytes (through lib/onnx/builder.ts's protobuf layer);
 * `Constant` nodes and PyTorch's initializer aliases become initializers of their own
 * (constant-initializers.ts), so every constant of the graph is in one map. What the
 * compiler cannot handle is refused here with one line naming it: external tensor data, a subgraph
 * attribute (If, Loop), a tensor type other than float32, int64, int32 or bool, a default-domain
 * operator set outside 13-17.
 */
import { DmlError } from '../../errors.js';
import { decodeModel, int64Value, type AttributeProto, type AttributeValue, type TensorProto } from '../../onnx/builder.js';
import { withConstantInitializers } from './constant-initializers.js';

/** Element types the compiler handles. */
export type IrElementType = 'float32' | 'float64' | 'int64' | 'int32' | 'bool';

/** A constant tensor: an initializer, a folded shape computation or a `Constant` node's value. */
export interface IrTensor {
  readonly type: IrElementType;
  readonly dims: readonly number[];
  /** Row-major values; int64 values are numbers (every value the compiler folds is a safe integer). */
  readonly data: Float32Array | Float64Array;
}

/** A decoded node attribute: the builder's typed values (lists of strings aside) or a tensor. */
export type IrAttribute = Exclude<AttributeValue, { readonly strings: readonly string[] }> | { readonly t: IrTensor };

/** One operator invocation. An empty input name is an omitted optional input. */
export interface IrNode {
  readonly name: string;
  readonly opType: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly attributes: ReadonlyMap<string, IrAttribute>;
}

/** A graph input or output: name, element type and dimensions (a string is a symbolic size). */
export interface IrValue {
  readonly name: string;
  readonly type: IrElementType;
  readonly dims: readonly (number | string)[];
}

/** A whole forward graph. */
export interface IrGraph {
  /** The model's default-domain operator set. */
  readonly opset: number;
  readonly nodes: readonly IrNode[];
  readonly initializers: ReadonlyMap<string, IrTensor>;
  /** Graph inputs that are not initializers. */
  readonly inputs: readonly IrValue[];
  readonly outputs: readonly IrValue[];
  /** The model's metadata_props. */
  readonly metadata: ReadonlyMap<string, string>;
}

/** The default-domain operator sets the compiler reads (ops changed meaning below 13: axes attributes). */
export const SUPPORTED_OPSETS = { min: 13, max: 17 } as const;

const DATA_TYPES: Readonly<Record<number, IrElementType>> = { 1: 'float32', 11: 'float64', 7: 'int64', 6: 'int32', 9: 'bool' };

/** The number of elements of a tensor of `dims`. */
export function elementCount(dims: readonly number[]): number {
  return dims.reduce((a, b) => a * b, 1);
}

function tensorFromProto(proto: TensorProto, where: string): IrTensor {
  const type = DATA_TYPES[proto.dataType ?? 0];
  const name = proto.name ?? '(unnamed)';
  if (!type) throw new DmlError('E_MODEL', `${where}: tensor ${name} has ONNX data type ${proto.dataType}; the graph trainer reads float32, float64, int64, int32 and bool tensors`);
  if (proto.dataLocation === 1) throw new DmlError('E_MODEL', `${where}: tensor ${name} keeps its data in an external file; the graph trainer reads models with the weights inside the .onnx file`);
  const dims = (proto.dims ?? []).map((d) => int64Value(d) ?? 0);
  if (dims.some((d) => !Number.isSafeInteger(d) || d < 0)) throw new DmlError('E_MODEL', `${where}: tensor ${name} has dims [${dims.join(', ')}]; expected non-negative integers`);
  const count = elementCount(dims);
  const raw = proto.rawData && proto.rawData.length > 0 ? proto.rawData : undefined;
  const values: readonly (number | { toNumber(): number })[] =
    type === 'float32' ? (proto.floatData ?? []) : type === 'float64' ? (proto.doubleData ?? []) : type === 'int64' ? (proto.int64Data ?? []) : (proto.int32Data ?? []);
  // The data must match the dims before anything of the dims' size is allocated.
  const width = { float32: 4, float64: 8, int64: 8, int32: 4, bool: 1 }[type];
  if (raw ? raw.byteLength !== count * width : values.length !== count) {
    const held = raw ? `${raw.byteLength} bytes` : `${values.length} values`;
    throw new DmlError('E_MODEL', `${where}: tensor ${name} holds ${held}, expected ${raw ? `${count * width} bytes` : count} for dims [${dims.join(', ')}]`);
  }
  const data = type === 'float32' ? new Float32Array(count) : new Float64Array(count);
  if (raw) {
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    for (let i = 0; i < count; i++) {
      if (type === 'float32') data[i] = view.getFloat32(4 * i, true);
      else if (type === 'float64') data[i] = view.getFloat64(8 * i, true);
      else if (type === 'int64') data[i] = Number(view.getBigInt64(8 * i, true));
      else if (type === 'int32') data[i] = view.getInt32(4 * i, true);
      else data[i] = view.getUint8(i);
    }
  } else {
    values.forEach((v, i) => (data[i] = int64Value(v) ?? 0));
  }
  return { type, dims, data };
}

function attributeFromProto(attribute: AttributeProto, where: string): IrAttribute {
  const name = attribute.name ?? '';
  switch (attribute.type) {
    case 1: return { f: attribute.f ?? 0 };
    case 2: return { i: int64Value(attribute.i) ?? 0 };
    case 3: return { s: new TextDecoder().decode(attribute.s ?? new Uint8Array()) };
    case 4: return { t: tensorFromProto(attribute.t ?? {}, where) };
    case 6: return { floats: [...(attribute.floats ?? [])] };
    case 7: return { ints: (attribute.ints ?? []).map((v) => int64Value(v) ?? 0) };
    default:
      throw new DmlError('E_MODEL', `${where}: attribute ${name} has ONNX attribute type ${attribute.type} (a subgraph or list of tensors); the graph trainer supports graphs without control flow`);
  }
}

function valueFromProto(info: { name?: string | null; type?: { tensorType?: { elemType?: number | null; shape?: { dim?: { dimValue?: number | { toNumber(): number } | null; dimParam?: string | null }[] | null } | null } | null } | null }, where: string): IrValue {
  const name = info.name ?? '';
  const type = DATA_TYPES[info.type?.tensorType?.elemType ?? 0];
  if (!type) throw new DmlError('E_MODEL', `${where}: graph value ${name} is not a float32, float64, int64, int32 or bool tensor`);
  const dims = (info.type?.tensorType?.shape?.dim ?? []).map((d) => (d.dimParam ? d.dimParam : (int64Value(d.dimValue) ?? '?')));
  return { name, type, dims };
}

/**
 * Decodes the ONNX model in `bytes` (`where` names it in errors: a path or a description).
 * Throws E_MODEL for a model the compiler cannot read (see the file comment).
 */
export function readOnnxGraph(bytes: Uint8Array, where: string): IrGraph {
  const model = decodeModel(bytes, where);
  const graph = model.graph;
  if (!graph) throw new DmlError('E_MODEL', `${where} holds no graph`);
  const defaultOpset = (model.opsetImport ?? []).find((o) => !o.domain || o.domain === 'ai.onnx');
  const opset = int64Value(defaultOpset?.version) ?? 0;
  if (opset < SUPPORTED_OPSETS.min || opset > SUPPORTED_OPSETS.max) {
    throw new DmlError('E_MODEL', `${where} uses ONNX operator set ${opset}; the graph trainer reads operator sets ${SUPPORTED_OPSETS.min}-${SUPPORTED_OPSETS.max} (re-export with opset_version=17)`);
  }
  // Constant nodes and PyTorch's initializer aliases become initializers of their own (constant-initializers.ts).
  const constants = withConstantInitializers(graph, where).graph;
  const initializers = new Map<string, IrTensor>();
  for (const t of constants.initializer ?? []) initializers.set(t.name ?? '', tensorFromProto(t, where));
  const nodes: IrNode[] = [];
  for (const [index, n] of (constants.node ?? []).entries()) {
    const name = n.name || `${n.opType}_${index}`;
    if (n.domain && n.domain !== 'ai.onnx') throw new DmlError('E_MODEL', `${where}: node ${name} runs ${n.domain}.${n.opType}; the graph trainer supports default-domain ONNX operators only`);
    if (n.opType === 'Constant') throw new DmlError('E_MODEL', `${where}: Constant node ${name} has no tensor 'value' attribute (value_float, value_ints ... are not read)`);
    const attributes = new Map<string, IrAttribute>();
    for (const a of n.attribute ?? []) attributes.set(a.name ?? '', attributeFromProto(a, `${where}: node ${name}`));
    nodes.push({ name, opType: n.opType ?? '', inputs: [...(n.input ?? [])], outputs: [...(n.output ?? [])], attributes });
  }
  const inputs = (graph.input ?? []).filter((i) => !initializers.has(i.name ?? '')).map((i) => valueFromProto(i, where));
  const outputs = (graph.output ?? []).map((o) => valueFromProto(o, where));
  const metadata = new Map((model.metadataProps ?? []).map((p) => [p.key ?? '', p.value ?? '']));
  return { opset, nodes, initializers, inputs, outputs, metadata };
}

/** Reads attribute `name` of `node` as an integer, or `fallback` when absent. */
export function intAttribute(node: IrNode, name: string, fallback: number): number {
  const a = node.attributes.get(name);
  if (a === undefined) return fallback;
  if (!('i' in a)) throw attributeTypeError(node, name, 'an integer');
  return a.i;
}

/** Reads attribute `name` of `node` as a float, or `fallback` when absent. */
export function floatAttribute(node: IrNode, name: string, fallback: number): number {
  const a = node.attributes.get(name);
  if (a === undefined) return fallback;
  if (!('f' in a)) throw attributeTypeError(node, name, 'a float');
  return a.f;
}

/** Reads attribute `name` of `node` as a list of integers, or `fallback` when absent. */
export function intsAttribute(node: IrNode, name: string, fallback: readonly number[]): readonly number[] {
  const a = node.attributes.get(name);
  if (a === undefined) return fallback;
  if (!('ints' in a)) throw attributeTypeError(node, name, 'a list of integers');
  return a.ints;
}

/** Reads attribute `name` of `node` as a string, or `fallback` when absent. */
export function stringAttribute(node: IrNode, name: string, fallback: string): string {
  const a = node.attributes.get(name);
  if (a === undefined) return fallback;
  if (!('s' in a)) throw attributeTypeError(node, name, 'a string');
  return a.s;
}

function attributeTypeError(node: IrNode, name: string, expected: string): DmlError {
  return new DmlError('E_MODEL', `node ${node.name} (${node.opType}): attribute ${name} must be ${expected}`);
}

/** One line naming a node for errors: `node 'stage1_conv1' (Conv)`. */
export function describeNode(node: IrNode): string {
  return `node '${node.name}' (${node.opType})`;
}
