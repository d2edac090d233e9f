/**
 * @file A small ONNX graph builder over onnx-proto (ONNX 1.10 schema, protobufjs 6).
 *
 * It covers what dmlkit writes itself: float32 and int64 initializers (as little-endian `raw_data`),
 * graph inputs/outputs with fixed or symbolic dimensions, nodes with explicitly typed attributes, and
 * a model pinned to {@link ONNX_OPSET_VERSION} / {@link ONNX_IR_VERSION} (unless the spec names other
 * operator sets, as a model merged with someone else's graph must) carrying `metadata_props` and the
 * producer name {@link ONNX_PRODUCER_NAME}; and decoding a model for graph surgery (lib/export/compose.ts).
 * Everything else in dmlkit goes through these helpers, so the protobuf package behind them can be
 * swapped without touching the callers.
 *
 * Attribute types are never inferred: a JavaScript number cannot tell `1` from `1.0`, and a Gemm whose
 * `alpha` was written as INT is rejected by onnxruntime. Callers say `{ f: 1 }` or `{ i: 1 }`.
 */
import os from 'node:os';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import { DmlError, invalidParameterError } from '../errors.js';

const { onnx } = onnxProto;

/** The default-domain operator set every dmlkit model imports. */
export const ONNX_OPSET_VERSION = 17;

/** The ONNX IR version every dmlkit model declares (IR 8 goes with opset 17). */
export const ONNX_IR_VERSION = 8;

/** The `producer_name` written into every dmlkit model. */
export const ONNX_PRODUCER_NAME = 'dmlkit';

/** A tensor in ONNX protobuf form (an initializer or an attribute value). */
export type TensorProto = OnnxTypes.ITensorProto;

/** A named, typed graph value (input, output or intermediate `value_info`). */
export type ValueInfoProto = OnnxTypes.IValueInfoProto;

/** One operator invocation in a graph. */
export type NodeProto = OnnxTypes.INodeProto;

/** A node attribute in protobuf form (as decoded; may hold subgraphs). */
export type AttributeProto = OnnxTypes.IAttributeProto;

/** A graph in protobuf form (as decoded). */
export type GraphProto = OnnxTypes.IGraphProto;

/** A whole model in protobuf form (as decoded). int64 fields hold numbers or protobufjs `Long`s. */
export type ModelProto = OnnxTypes.IModelProto;

/** An operator set a model imports; `domain` `''` is the default ONNX domain. */
export interface OperatorSetId {
  domain: string;
  version: number;
}

/** Element types the builder can declare for graph values and initializers. */
export type ElementType = 'float32' | 'int64' | 'int32' | 'uint8';

/**
 * One tensor dimension: a non-negative integer is a fixed size (`dim_value`), a string is a symbolic
 * size (`dim_param`, e.g. `'batch'`) that onnxruntime resolves at run time.
 */
export type Dim = number | string;

/**
 * A node attribute with its ONNX type stated by the key:
 * `f` FLOAT, `i` INT, `s` STRING, `floats` FLOATS, `ints` INTS, `strings` STRINGS.
 */
export type AttributeValue =
  | { readonly f: number }
  | { readonly i: number }
  | { readonly s: string }
  | { readonly floats: readonly number[] }
  | { readonly ints: readonly number[] }
  | { readonly strings: readonly string[] };

/** Everything needed to write one single-graph model. */
export interface ModelProtoSpec {
  /** Graph name (shown by Netron; no semantic meaning). */
  graphName: string;
  /** Graph inputs, in order. */
  inputs: readonly ValueInfoProto[];
  /** Graph outputs, in order. */
  outputs: readonly ValueInfoProto[];
  /** Nodes in topological order. */
  nodes: readonly NodeProto[];
  /** Constant tensors (weights, shapes, `K` of TopK). */
  initializers?: readonly TensorProto[];
  /** Types of intermediate values; optional, helps shape inference and viewers. */
  valueInfo?: readonly ValueInfoProto[];
  /** `metadata_props` key/value pairs, written in insertion order. */
  metadata?: Readonly<Record<string, string>>;
  /** `producer_version`, e.g. the dmlkit package version. Empty when omitted. */
  producerVersion?: string;
  /** `doc_string` of the model. */
  docString?: string;
  /** Operator sets imported; default: the default domain at {@link ONNX_OPSET_VERSION}. */
  opsetImports?: readonly OperatorSetId[];
  /** IR version; default {@link ONNX_IR_VERSION}. */
  irVersion?: number;
}

/** ONNX's TensorProto.DataType of bool. */
const BOOL_TYPE_CODE = 9;

const ELEMENT_TYPE_CODES: Readonly<Record<ElementType, number>> = {
  float32: onnx.TensorProto.DataType.FLOAT,
  int64: onnx.TensorProto.DataType.INT64,
  int32: onnx.TensorProto.DataType.INT32,
  uint8: onnx.TensorProto.DataType.UINT8,
};

const HOST_IS_LITTLE_ENDIAN = os.endianness() === 'LE';

/** `raw_data` must be little-endian; typed arrays are host-endian. Checked once per process. */
function assertLittleEndianHost(): void {
  if (!HOST_IS_LITTLE_ENDIAN) {
    throw new DmlError('E_MODEL', 'Cannot write ONNX raw_data on a big-endian host; dmlkit supports little-endian hosts only');
  }
}

function validateDims(name: string, dims: readonly number[], elementCount: number): void {
  let size = 1;
  for (const d of dims) {
    if (!Number.isSafeInteger(d) || d < 0) {
      throw invalidParameterError(`dims of ${name}`, 'non-negative integers', d);
    }
    size *= d;
  }
  if (size !== elementCount) {
    throw invalidParameterError(`values of ${name}`, `${size} elements for dims [${dims.join(', ')}]`, elementCount);
  }
}

function bytesOf(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** A float32 initializer named `name` with shape `dims`, stored as little-endian `raw_data`. */
export function floatTensor(name: string, dims: readonly number[], values: Float32Array | readonly number[]): TensorProto {
  assertLittleEndianHost();
  const data = values instanceof Float32Array ? values : Float32Array.from(values);
  validateDims(name, dims, data.length);
  return { name, dims: [...dims], dataType: ELEMENT_TYPE_CODES.float32, rawData: bytesOf(data) };
}

/**
 * An int64 initializer named `name` with shape `dims`, stored as little-endian `raw_data`.
 * Every value must be a safe integer (|v| < 2^53).
 */
export function int64Tensor(name: string, dims: readonly number[], values: readonly number[]): TensorProto {
  assertLittleEndianHost();
  validateDims(name, dims, values.length);
  const data = new BigInt64Array(values.length);
  values.forEach((v, i) => {
    if (!Number.isSafeInteger(v)) throw invalidParameterError(`values[${i}] of ${name}`, 'a safe integer', v);
    data[i] = BigInt(v);
  });
  return { name, dims: [...dims], dataType: ELEMENT_TYPE_CODES.int64, rawData: bytesOf(data) };
}

/** An int32 initializer named `name` with shape `dims`, stored as little-endian `raw_data`; every value must be an int32. */
export function int32Tensor(name: string, dims: readonly number[], values: readonly number[]): TensorProto {
  assertLittleEndianHost();
  validateDims(name, dims, values.length);
  values.forEach((v, i) => {
    if (!Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) throw invalidParameterError(`values[${i}] of ${name}`, 'an int32', v);
  });
  return { name, dims: [...dims], dataType: ELEMENT_TYPE_CODES.int32, rawData: bytesOf(Int32Array.from(values)) };
}

/** A bool initializer named `name` with shape `dims`, one byte per value in `raw_data` (ONNX's bool storage). */
export function boolTensor(name: string, dims: readonly number[], values: ArrayLike<boolean | number>): TensorProto {
  validateDims(name, dims, values.length);
  return { name, dims: [...dims], dataType: BOOL_TYPE_CODE, rawData: Uint8Array.from(Array.from(values, (v) => (v ? 1 : 0))) };
}

/** A graph value `name` of `elementType` with shape `dims` (numbers fixed, strings symbolic). */
export function tensorValueInfo(name: string, elementType: ElementType, dims: readonly Dim[]): ValueInfoProto {
  const elemType = ELEMENT_TYPE_CODES[elementType];
  if (elemType === undefined) throw invalidParameterError(`elementType of ${name}`, `one of ${Object.keys(ELEMENT_TYPE_CODES).map((t) => `'${t}'`).join(', ')}`, elementType);
  const dim = dims.map((d) => {
    if (typeof d === 'string' && d.length > 0) return { dimParam: d };
    if (typeof d === 'number' && Number.isSafeInteger(d) && d >= 0) return { dimValue: d };
    throw invalidParameterError(`dims of ${name}`, 'non-negative integers or non-empty symbolic names', d);
  });
  return { name, type: { tensorType: { elemType, shape: { dim } } } };
}

const AttributeType = onnx.AttributeProto.AttributeType;

function checkedNumbers(label: string, values: readonly number[], integers: boolean): number[] {
  return values.map((v, i) => {
    if (integers ? !Number.isSafeInteger(v) : typeof v !== 'number') {
      throw invalidParameterError(`${label}[${i}]`, integers ? 'a safe integer' : 'a number', v);
    }
    return v;
  });
}

function attribute(opType: string, name: string, value: AttributeValue): OnnxTypes.IAttributeProto {
  const label = `attribute ${name} of ${opType}`;
  if ('f' in value) {
    if (typeof value.f !== 'number') throw invalidParameterError(label, 'a number', value.f);
    return { name, type: AttributeType.FLOAT, f: value.f };
  }
  if ('i' in value) {
    if (!Number.isSafeInteger(value.i)) throw invalidParameterError(label, 'a safe integer', value.i);
    return { name, type: AttributeType.INT, i: value.i };
  }
  if ('s' in value) {
    if (typeof value.s !== 'string') throw invalidParameterError(label, 'a string', value.s);
    return { name, type: AttributeType.STRING, s: new TextEncoder().encode(value.s) };
  }
  if ('floats' in value) return { name, type: AttributeType.FLOATS, floats: checkedNumbers(label, value.floats, false) };
  if ('ints' in value) return { name, type: AttributeType.INTS, ints: checkedNumbers(label, value.ints, true) };
  if ('strings' in value) {
    return { name, type: AttributeType.STRINGS, strings: value.strings.map((s) => new TextEncoder().encode(s)) };
  }
  throw invalidParameterError(label, 'one of { f }, { i }, { s }, { floats }, { ints }, { strings }', value);
}

/**
 * A node running `opType` (default ONNX domain) from `inputs` to `outputs`. Attributes are written in
 * the order of `attributes`' keys; an empty input name means an omitted optional input.
 */
export function node(
  opType: string,
  inputs: readonly string[],
  outputs: readonly string[],
  attributes: Readonly<Record<string, AttributeValue>> = {},
  name: string = outputs[0] ?? opType,
): NodeProto {
  return {
    opType,
    name,
    input: [...inputs],
    output: [...outputs],
    attribute: Object.entries(attributes).map(([key, value]) => attribute(opType, key, value)),
  };
}

/**
 * Serialises `spec` as an ONNX ModelProto: IR {@link ONNX_IR_VERSION} and default-domain opset
 * {@link ONNX_OPSET_VERSION} unless `spec` says otherwise, producer {@link ONNX_PRODUCER_NAME}.
 * Throws E_MODEL when onnx-proto's structural check rejects the message.
 */
export function encodeModel(spec: ModelProtoSpec): Uint8Array {
  const irVersion = spec.irVersion ?? ONNX_IR_VERSION;
  if (!Number.isSafeInteger(irVersion) || irVersion < 1) throw invalidParameterError('irVersion', 'a positive integer', irVersion);
  const opsetImports = spec.opsetImports ?? [{ domain: '', version: ONNX_OPSET_VERSION }];
  for (const [i, opset] of opsetImports.entries()) {
    if (typeof opset.domain !== 'string' || !Number.isSafeInteger(opset.version) || opset.version < 1) {
      throw invalidParameterError(`opsetImports[${i}]`, '{ domain: string, version: positive integer }', opset);
    }
  }
  const model: OnnxTypes.IModelProto = {
    irVersion,
    opsetImport: opsetImports.map((o) => ({ domain: o.domain, version: o.version })),
    producerName: ONNX_PRODUCER_NAME,
    producerVersion: spec.producerVersion ?? '',
    docString: spec.docString ?? '',
    graph: {
      name: spec.graphName,
      input: [...spec.inputs],
      output: [...spec.outputs],
      node: [...spec.nodes],
      initializer: [...(spec.initializers ?? [])],
      valueInfo: [...(spec.valueInfo ?? [])],
    },
    metadataProps: Object.entries(spec.metadata ?? {}).map(([key, value]) => ({ key, value })),
  };
  const problem = onnx.ModelProto.verify(model);
  if (problem !== null) throw new DmlError('E_MODEL', `Cannot encode ONNX model ${spec.graphName}: ${problem}`);
  return onnx.ModelProto.encode(model).finish();
}

/**
 * Decodes a serialised ONNX model (`name` names it in errors). Weights stay in place as views of
 * `bytes`; int64 fields come back as numbers or protobufjs `Long`s (read them with {@link int64Value}).
 * Throws E_MODEL when the bytes are not a ModelProto.
 */
export function decodeModel(bytes: Uint8Array, name: string): ModelProto {
  try {
    return onnx.ModelProto.decode(bytes);
  } catch (err) {
    throw new DmlError('E_MODEL', `${name} is not a readable ONNX model: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
}

/** An int64 field of a decoded message (a number or a protobufjs `Long`) as a number; undefined when unset. */
export function int64Value(value: number | { toNumber(): number } | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  return typeof value === 'number' ? value : value.toNumber();
}

/** Element type and dimensions of a (decoded or built) tensor value; undefined parts are undeclared. */
export function describeValueInfo(info: ValueInfoProto): { elementType: ElementType | 'other' | undefined; dims: Dim[] | undefined } {
  const tensorType = info.type?.tensorType;
  if (!tensorType) return { elementType: undefined, dims: undefined };
  const code = tensorType.elemType;
  const elementType = (Object.keys(ELEMENT_TYPE_CODES) as ElementType[]).find((k) => ELEMENT_TYPE_CODES[k] === code) ?? (code ? 'other' : undefined);
  const dims = tensorType.shape?.dim?.map((d): Dim => (d.dimParam ? d.dimParam : (int64Value(d.dimValue) ?? '?')));
  return { elementType, dims };
}
