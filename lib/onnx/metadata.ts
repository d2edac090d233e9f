/**
 * @file Reads an ONNX model's header fields and `metadata_props` without decoding its graph.
 *
 * onnxruntime's JavaScript binding exposes no model metadata, and a full protobuf decode of a
 * backbone materialises every weight. This reader walks the top-level fields of `ModelProto` with a
 * hand-written protobuf wire-format scanner and decodes only:
 *
 * | field | name | type |
 * |---|---|---|
 * | 1 | `ir_version` | int64 |
 * | 2 | `producer_name` | string |
 * | 3 | `producer_version` | string |
 * | 8 | `opset_import` | repeated `OperatorSetIdProto { 1 domain: string, 2 version: int64 }` |
 * | 14 | `metadata_props` | repeated `StringStringEntryProto { 1 key: string, 2 value: string }` |
 *
 * Field 7 (`graph`) and every other field are skipped by length by {@link readModelMetadata};
 * {@link readExternalDataLocations} walks the graph instead, for the files holding tensors stored
 * outside the model (`TensorProto.external_data`, field 13, key `location`): initializers (graph
 * field 5), sparse initializers (15: values 1, indices 2) and node attributes (node 1 -> attribute 5:
 * `t` 5, `tensors` 10, subgraphs `g` 6 and `graphs` 11), skipping tensor data by length.
 */
import { DmlError } from '../errors.js';

/** What {@link readModelMetadata} finds in a model. */
export interface ModelMetadata {
  /** `ir_version` (e.g. 8). */
  irVersion: number;
  /** `producer_name` (e.g. `'dmlkit'`, `'pytorch'`); empty when absent. */
  producerName: string;
  /** `producer_version`; empty when absent. */
  producerVersion: string;
  /** Version of the default-domain (`''` or `'ai.onnx'`) operator set; absent when not imported. */
  opsetVersion?: number;
  /** `metadata_props` as a record; a repeated key keeps its last value. */
  metadataProps: Record<string, string>;
}

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH_DELIMITED = 2;
const WIRE_FIXED32 = 5;

const FIELD_IR_VERSION = 1;
const FIELD_PRODUCER_NAME = 2;
const FIELD_PRODUCER_VERSION = 3;
const FIELD_GRAPH = 7;
const FIELD_OPSET_IMPORT = 8;
const FIELD_METADATA_PROPS = 14;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A cursor over one protobuf message (a byte range of the model). */
class WireReader {
  constructor(
    private readonly bytes: Uint8Array,
    private pos: number,
    private readonly end: number,
    /** What the range holds, for error messages (`ModelProto`, `metadata_props[2]`). */
    private readonly what: string,
    /** The model file (or other source) named in error messages; undefined for anonymous bytes. */
    private readonly source?: string,
  ) {}

  get done(): boolean {
    return this.pos >= this.end;
  }

  fail(problem: string): DmlError {
    const subject = this.source === undefined ? 'Malformed ONNX model' : `${this.source} is not a valid ONNX model`;
    return new DmlError('E_MODEL', `${subject}: ${problem} in ${this.what} at byte ${this.pos}`);
  }

  /** An unsigned varint of up to 10 bytes; values above 2^53 lose precision (only lengths and versions are read). */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw this.fail('truncated varint');
      const byte = this.bytes[this.pos++] as number;
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) return value;
      scale *= 128;
    }
    throw this.fail('varint longer than 10 bytes');
  }

  /** A field key: `[fieldNumber, wireType]`. */
  key(): [number, number] {
    const key = this.varint();
    const field = Math.floor(key / 8);
    if (field === 0) throw this.fail('field number 0');
    return [field, key % 8];
  }

  /** The byte range of a length-delimited value, as a reader over it; advances past it. */
  nested(what: string): WireReader {
    const length = this.varint();
    if (length > this.end - this.pos) {
      throw this.fail(`length-delimited field of ${length} bytes running past the end (${this.end - this.pos} left)`);
    }
    const reader = new WireReader(this.bytes, this.pos, this.pos + length, what, this.source);
    this.pos += length;
    return reader;
  }

  /** A length-delimited UTF-8 string. */
  string(what: string): string {
    const range = this.nested(what);
    try {
      return utf8.decode(this.bytes.subarray(range.pos, range.end));
    } catch {
      throw range.fail('invalid UTF-8');
    }
  }

  /** Skips one value of `wireType`. */
  skip(wireType: number): void {
    switch (wireType) {
      case WIRE_VARINT:
        this.varint();
        return;
      case WIRE_FIXED64:
        this.advance(8);
        return;
      case WIRE_LENGTH_DELIMITED:
        this.nested(this.what);
        return;
      case WIRE_FIXED32:
        this.advance(4);
        return;
      default:
        throw this.fail(`unsupported wire type ${wireType}`);
    }
  }

  /** Fails unless the field just keyed has `wireType`. */
  expect(field: number, wireType: number, expected: number): void {
    if (wireType !== expected) throw this.fail(`field ${field} has wire type ${wireType}; expected ${expected}`);
  }

  private advance(n: number): void {
    if (n > this.end - this.pos) throw this.fail(`fixed-width field running past the end`);
    this.pos += n;
  }
}

function readOpsetImport(reader: WireReader): { domain: string; version: number | undefined } {
  let domain = '';
  let version: number | undefined;
  while (!reader.done) {
    const [field, wireType] = reader.key();
    if (field === 1) {
      reader.expect(field, wireType, WIRE_LENGTH_DELIMITED);
      domain = reader.string('opset_import.domain');
    } else if (field === 2) {
      reader.expect(field, wireType, WIRE_VARINT);
      version = reader.varint();
    } else {
      reader.skip(wireType);
    }
  }
  return { domain, version };
}

function readStringStringEntry(reader: WireReader, index: number): [string, string] {
  let key = '';
  let value = '';
  while (!reader.done) {
    const [field, wireType] = reader.key();
    if (field === 1 || field === 2) {
      reader.expect(field, wireType, WIRE_LENGTH_DELIMITED);
      const text = reader.string(`metadata_props[${index}].${field === 1 ? 'key' : 'value'}`);
      if (field === 1) key = text;
      else value = text;
    } else {
      reader.skip(wireType);
    }
  }
  return [key, value];
}

/**
 * Reads the header fields and `metadata_props` of a serialised ONNX `ModelProto`.
 * Throws DmlError E_MODEL naming the problem and byte offset when the bytes are not a well-formed
 * protobuf message, or when they lack `ir_version` or `graph` (every loadable model has both); with
 * `source` (the model's path), the message names it: `<source> is not a valid ONNX model: <problem>`.
 */
export function readModelMetadata(bytes: Uint8Array, source?: string): ModelMetadata {
  const reader = new WireReader(bytes, 0, bytes.length, 'ModelProto', source);
  let irVersion: number | undefined;
  let producerName = '';
  let producerVersion = '';
  let opsetVersion: number | undefined;
  let hasGraph = false;
  const props = new Map<string, string>();
  let propIndex = 0;
  while (!reader.done) {
    const [field, wireType] = reader.key();
    switch (field) {
      case FIELD_IR_VERSION:
        reader.expect(field, wireType, WIRE_VARINT);
        irVersion = reader.varint();
        break;
      case FIELD_PRODUCER_NAME:
        reader.expect(field, wireType, WIRE_LENGTH_DELIMITED);
        producerName = reader.string('producer_name');
        break;
      case FIELD_PRODUCER_VERSION:
        reader.expect(field, wireType, WIRE_LENGTH_DELIMITED);
        producerVersion = reader.string('producer_version');
        break;
      case FIELD_GRAPH:
        reader.expect(field, wireType, WIRE_LENGTH_DELIMITED);
        reader.nested('graph');
        hasGraph = true;
        break;
      case FIELD_OPSET_IMPORT: {
        reader.expect(field, wireType, WIRE_LENGTH_DELIMITED);
        const opset = readOpsetImport(reader.nested('opset_import'));
        if ((opset.domain === '' || opset.domain === 'ai.onnx') && opset.version !== undefined) opsetVersion = opset.version;
        break;
      }
      case FIELD_METADATA_PROPS: {
        reader.expect(field, wireType, WIRE_LENGTH_DELIMITED);
        const [key, value] = readStringStringEntry(reader.nested(`metadata_props[${propIndex}]`), propIndex);
        props.set(key, value);
        propIndex++;
        break;
      }
      default:
        reader.skip(wireType);
    }
  }
  if (irVersion === undefined) throw reader.fail('no ir_version field (not an ONNX model?)');
  if (!hasGraph) throw reader.fail('no graph field (not an ONNX model?)');
  return {
    irVersion,
    producerName,
    producerVersion,
    ...(opsetVersion !== undefined ? { opsetVersion } : {}),
    metadataProps: Object.fromEntries(props),
  };
}

const FIELD_GRAPH_NODE = 1;
const FIELD_GRAPH_INITIALIZER = 5;
const FIELD_GRAPH_SPARSE_INITIALIZER = 15;
const FIELD_NODE_ATTRIBUTE = 5;
const FIELD_ATTRIBUTE_TENSOR = 5;
const FIELD_ATTRIBUTE_GRAPH = 6;
const FIELD_ATTRIBUTE_TENSORS = 10;
const FIELD_ATTRIBUTE_GRAPHS = 11;
const FIELD_TENSOR_EXTERNAL_DATA = 13;
/** Subgraphs nested deeper than this are refused (a malformed or hostile model). */
const MAX_GRAPH_DEPTH = 32;

/** Where one tensor keeps its data outside the model: its name, the file (`location`) and the byte range (`offset`, `length`; undefined when not given: the whole rest of the file). */
export interface ExternalTensorRange {
  tensor: string;
  location: string;
  offset: number;
  length: number | undefined;
}

const FIELD_TENSOR_NAME = 8;

/** The external data of one `TensorProto`, or undefined when it has none. */
function tensorExternalData(reader: WireReader): ExternalTensorRange | undefined {
  const fields = new Map<string, string>();
  let tensor = '';
  while (!reader.done) {
    const [field, wireType] = reader.key();
    if (field === FIELD_TENSOR_NAME && wireType === WIRE_LENGTH_DELIMITED) {
      tensor = reader.string('tensor.name');
    } else if (field === FIELD_TENSOR_EXTERNAL_DATA && wireType === WIRE_LENGTH_DELIMITED) {
      const entry = reader.nested('external_data');
      let key = '';
      let value = '';
      while (!entry.done) {
        const [f, w] = entry.key();
        if ((f === 1 || f === 2) && w === WIRE_LENGTH_DELIMITED) {
          const text = entry.string(`external_data.${f === 1 ? 'key' : 'value'}`);
          if (f === 1) key = text;
          else value = text;
        } else {
          entry.skip(w);
        }
      }
      fields.set(key, value);
    } else {
      reader.skip(wireType);
    }
  }
  const location = fields.get('location');
  if (location === undefined) return undefined;
  const length = fields.get('length');
  return { tensor, location, offset: Number(fields.get('offset') ?? 0), length: length === undefined ? undefined : Number(length) };
}

function collectGraphLocations(graph: WireReader, found: ExternalTensorRange[], depth: number): void {
  if (depth > MAX_GRAPH_DEPTH) throw graph.fail(`subgraphs nested more than ${MAX_GRAPH_DEPTH} deep`);
  const addTensor = (reader: WireReader): void => {
    const range = tensorExternalData(reader);
    if (range !== undefined) found.push(range);
  };
  while (!graph.done) {
    const [field, wireType] = graph.key();
    if (wireType !== WIRE_LENGTH_DELIMITED) {
      graph.skip(wireType);
    } else if (field === FIELD_GRAPH_INITIALIZER) {
      addTensor(graph.nested('initializer'));
    } else if (field === FIELD_GRAPH_SPARSE_INITIALIZER) {
      const sparse = graph.nested('sparse_initializer');
      while (!sparse.done) {
        const [f, w] = sparse.key();
        if ((f === 1 || f === 2) && w === WIRE_LENGTH_DELIMITED) addTensor(sparse.nested('sparse_initializer tensor'));
        else sparse.skip(w);
      }
    } else if (field === FIELD_GRAPH_NODE) {
      const nodeReader = graph.nested('node');
      while (!nodeReader.done) {
        const [f, w] = nodeReader.key();
        if (f !== FIELD_NODE_ATTRIBUTE || w !== WIRE_LENGTH_DELIMITED) {
          nodeReader.skip(w);
          continue;
        }
        const attribute = nodeReader.nested('attribute');
        while (!attribute.done) {
          const [af, aw] = attribute.key();
          if (aw !== WIRE_LENGTH_DELIMITED) attribute.skip(aw);
          else if (af === FIELD_ATTRIBUTE_TENSOR || af === FIELD_ATTRIBUTE_TENSORS) addTensor(attribute.nested('attribute tensor'));
          else if (af === FIELD_ATTRIBUTE_GRAPH || af === FIELD_ATTRIBUTE_GRAPHS) collectGraphLocations(attribute.nested('subgraph'), found, depth + 1);
          else attribute.skip(aw);
        }
      }
    } else {
      graph.skip(wireType);
    }
  }
}

/**
 * The files a serialised ONNX model keeps tensors in outside itself (`external_data` `location`s,
 * relative to the model's folder), each once, in order of first use; empty for a self-contained model.
 * Errors (E_MODEL, naming `source` when given): malformed bytes, and a location that is absolute or
 * leaves the model's folder (`..`), which onnxruntime refuses too and which no copy of the model could
 * carry along.
 */
export function readExternalDataLocations(bytes: Uint8Array, source?: string): string[] {
  return [...new Set(readExternalDataRanges(bytes, source).map((r) => r.location))];
}

/**
 * Every tensor a serialised ONNX model keeps outside itself, with its file and byte range, in graph
 * order. Errors as {@link readExternalDataLocations}.
 */
export function readExternalDataRanges(bytes: Uint8Array, source?: string): ExternalTensorRange[] {
  const reader = new WireReader(bytes, 0, bytes.length, 'ModelProto', source);
  const ranges: ExternalTensorRange[] = [];
  while (!reader.done) {
    const [field, wireType] = reader.key();
    if (field === FIELD_GRAPH && wireType === WIRE_LENGTH_DELIMITED) collectGraphLocations(reader.nested('graph'), ranges, 0);
    else reader.skip(wireType);
  }
  for (const location of new Set(ranges.map((r) => r.location))) {
    const parts = location.split(/[\\/]/);
    if (location === '' || location.startsWith('/') || /^[A-Za-z]:/.test(location) || parts.includes('..')) {
      const subject = source ?? 'The ONNX model';
      throw new DmlError('E_MODEL', `${subject}: external data location ${JSON.stringify(location)} is not a path inside the model's folder; expected a relative file name such as "model.onnx_data"`);
    }
  }
  return ranges;
}
