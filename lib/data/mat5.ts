/**
 * @file A minimal reader for MATLAB level-5 MAT-files (the `-v6`/`-v7` format written by MATLAB and by
 * `scipy.io.savemat`), enough for dataset annotation files such as Cars196's `cars_annos.mat`.
 *
 * File structure: a 128-byte header (116 bytes of text such as `MATLAB 5.0 MAT-file, Platform: ...`,
 * 8 bytes of subsystem offset, a uint16 version 0x0100 and the endian indicator `IM` (little-endian)
 * or `MI` (big-endian)), then data elements. Each element has an 8-byte tag (uint32 type, uint32 byte
 * count) and data padded to 8 bytes, or the 4-byte "small element" form (type and count packed in
 * one uint32, up to 4 data bytes). A top-level element is `miMATRIX` (one variable) or
 * `miCOMPRESSED` (a zlib stream holding one `miMATRIX`, not padded).
 *
 * An `miMATRIX` holds: array flags (class, complex/logical bits), dimensions, the name, then by class:
 * numeric data (stored in any integer or float type, converted to float64 here), char data (UTF-8,
 * UTF-16 or UTF-32 code units, column-major), N nested `miMATRIX` for a cell array, or the field
 * name length, the field names and one `miMATRIX` per element and field for a struct array.
 * Column-major order is kept: element `k` of an `r x c` array is row `k % r`, column `floor(k / r)`.
 *
 * Supported: numeric (double, single, int8..uint64, logical), char, cell and struct arrays, both
 * byte orders, compressed or not. Rejected with an E_DATASET error naming the file and variable:
 * MAT 7.3 files (HDF5; resave with `save -v7` or convert to CSV), MAT 4 files, complex and sparse
 * arrays, MATLAB objects and function handles, truncated or corrupt data. int64/uint64 values beyond
 * 2^53 lose precision in the float64 conversion.
 *
 * ```
 * >> load cars_annos.mat      % annotations: 1x16185 struct (relative_im_path, bbox_x1, bbox_y1,
 * >> annotations(1)           %   bbox_x2, bbox_y2, class, test); class_names: 1x196 cell
 *    relative_im_path: 'car_ims/000001.jpg'   class: 1   test: 0   ...
 * ```
 */
import { readRegular } from '../util/regular-file.js';
import { inflateSync } from 'node:zlib';
import { DmlError } from '../errors.js';
import { fileSystemError } from './layout-support.js';

/** MATLAB numeric array classes. */
export type MatNumericClass = 'double' | 'single' | 'int8' | 'uint8' | 'int16' | 'uint16' | 'int32' | 'uint32' | 'int64' | 'uint64';

/** A decoded MATLAB array. `dims` are MATLAB's (at least 2, e.g. [1, 16185]); data is column-major. */
export type MatValue =
  | { kind: 'numeric'; class: MatNumericClass; logical: boolean; dims: number[]; data: Float64Array }
  /** A char array: one string per row (a 1xN char array is `rows: [text]`). */
  | { kind: 'char'; dims: number[]; rows: string[] }
  | { kind: 'cell'; dims: number[]; cells: MatValue[] }
  /** A struct array: one map from field name to value per element. */
  | { kind: 'struct'; dims: number[]; fieldNames: string[]; elements: Array<Map<string, MatValue>> };

/** A decoded MAT-file. */
export interface MatFile {
  /** The header text, e.g. `MATLAB 5.0 MAT-file, Platform: GLNXA64, Created on: ...`. */
  header: string;
  /** Variables by name, in file order. */
  variables: Map<string, MatValue>;
}

// Data element types (MAT-file format, table 1-1).
const miINT8 = 1;
const miUINT8 = 2;
const miINT16 = 3;
const miUINT16 = 4;
const miINT32 = 5;
const miUINT32 = 6;
const miSINGLE = 7;
const miDOUBLE = 9;
const miINT64 = 12;
const miUINT64 = 13;
const miMATRIX = 14;
const miCOMPRESSED = 15;
const miUTF8 = 16;
const miUTF16 = 17;
const miUTF32 = 18;

/** Bytes per value of each numeric data element type. */
const ELEMENT_SIZES = new Map<number, number>([
  [miINT8, 1], [miUINT8, 1], [miINT16, 2], [miUINT16, 2], [miINT32, 4], [miUINT32, 4],
  [miSINGLE, 4], [miDOUBLE, 8], [miINT64, 8], [miUINT64, 8],
]);

/** Array classes (mxCLASS ids) by number; 1 cell, 2 struct, 4 char, 6-15 numeric. */
const NUMERIC_CLASSES = new Map<number, MatNumericClass>([
  [6, 'double'], [7, 'single'], [8, 'int8'], [9, 'uint8'], [10, 'int16'], [11, 'uint16'],
  [12, 'int32'], [13, 'uint32'], [14, 'int64'], [15, 'uint64'],
]);
const UNSUPPORTED_CLASSES = new Map<number, string>([
  [3, 'a MATLAB object'], [5, 'a sparse array'], [16, 'a function handle'], [17, 'an opaque MATLAB object'],
]);
const mxCELL = 1;
const mxSTRUCT = 2;
const mxCHAR = 4;
const FLAG_COMPLEX = 0x0800;
const FLAG_LOGICAL = 0x0200;

/** One data element: its type and a view of its data bytes. */
interface Element {
  type: number;
  data: Uint8Array;
}

/** Walks data elements of one buffer (the file body, a decompressed stream, or an miMATRIX body). */
class ElementReader {
  private offset = 0;
  private readonly view: DataView;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly littleEndian: boolean,
    private readonly fail: (message: string) => DmlError,
    /** How positions are described in errors: where `bytes` starts, e.g. `file byte 128`. */
    private readonly origin: { label: string; offset: number } = { label: 'array data byte', offset: 0 },
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private position(at: number): string {
    return `${this.origin.label} ${this.origin.offset + at}`;
  }

  get atEnd(): boolean {
    return this.offset >= this.bytes.length;
  }

  next(): Element {
    const start = this.offset;
    if (start + 8 > this.bytes.length) {
      throw this.fail(`data element tag at ${this.position(start)} is truncated (${this.bytes.length - start} bytes left)`);
    }
    const first = this.view.getUint32(start, this.littleEndian);
    if (first >>> 16 !== 0) {
      const count = first >>> 16;
      if (count > 4) throw this.fail(`small data element at ${this.position(start)} claims ${count} bytes (at most 4)`);
      this.offset = start + 8;
      return { type: first & 0xffff, data: this.bytes.subarray(start + 4, start + 4 + count) };
    }
    const count = this.view.getUint32(start + 4, this.littleEndian);
    if (start + 8 + count > this.bytes.length) {
      throw this.fail(`data element at ${this.position(start)} claims ${count} bytes but only ${this.bytes.length - start - 8} remain (truncated file?)`);
    }
    // Compressed elements are not padded; all others are padded to a multiple of 8 bytes.
    const padded = first === miCOMPRESSED ? count : Math.ceil(count / 8) * 8;
    this.offset = Math.min(start + 8 + padded, this.bytes.length);
    return { type: first, data: this.bytes.subarray(start + 8, start + 8 + count) };
  }

  /** Reads an element and checks its type is one of `types`; `what` names it in errors. */
  expect(types: number[], what: string): Element {
    if (this.atEnd) throw this.fail(`${what} is missing (the array ends early)`);
    const element = this.next();
    if (!types.includes(element.type)) throw this.fail(`${what} has data type ${element.type}; expected ${types.join(' or ')}`);
    return element;
  }
}

/** Decodes the values of a numeric data element to float64. */
function numericValues(element: Element, littleEndian: boolean, fail: (m: string) => DmlError): Float64Array {
  const size = ELEMENT_SIZES.get(element.type);
  if (size === undefined) throw fail(`numeric data has data type ${element.type}, which is not a numeric type`);
  if (element.data.length % size !== 0) throw fail(`numeric data of ${element.data.length} bytes is not a whole number of ${size}-byte values`);
  const n = element.data.length / size;
  const view = new DataView(element.data.buffer, element.data.byteOffset, element.data.byteLength);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const at = i * size;
    switch (element.type) {
      case miINT8: out[i] = view.getInt8(at); break;
      case miUINT8: out[i] = view.getUint8(at); break;
      case miINT16: out[i] = view.getInt16(at, littleEndian); break;
      case miUINT16: out[i] = view.getUint16(at, littleEndian); break;
      case miINT32: out[i] = view.getInt32(at, littleEndian); break;
      case miUINT32: out[i] = view.getUint32(at, littleEndian); break;
      case miSINGLE: out[i] = view.getFloat32(at, littleEndian); break;
      case miDOUBLE: out[i] = view.getFloat64(at, littleEndian); break;
      case miINT64: out[i] = Number(view.getBigInt64(at, littleEndian)); break;
      default: out[i] = Number(view.getBigUint64(at, littleEndian)); break;
    }
  }
  return out;
}

/** Decodes char data to one string per code point (MATLAB chars are stored one unit each). */
function charCodes(element: Element, littleEndian: boolean, fail: (m: string) => DmlError): string[] {
  const { type, data } = element;
  if (type === miUTF8) return Array.from(new TextDecoder('utf-8').decode(data));
  if (type === miUINT8 || type === miINT8) return Array.from(data, (b) => String.fromCharCode(b));
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (type === miUINT16 || type === miUTF16 || type === miINT16) {
    return Array.from({ length: data.length >> 1 }, (_, i) => String.fromCharCode(view.getUint16(2 * i, littleEndian)));
  }
  if (type === miUTF32 || type === miUINT32 || type === miINT32) {
    return Array.from({ length: data.length >> 2 }, (_, i) => String.fromCodePoint(view.getUint32(4 * i, littleEndian)));
  }
  throw fail(`char data has data type ${type}; expected a UTF-8, UTF-16 or UTF-32 type`);
}

const product = (dims: number[]): number => dims.reduce((a, b) => a * b, 1);

/**
 * Decodes the body of an miMATRIX element. `path` names the array in errors: a nested array's place
 * (`annotations(3).class`, `class_names{2}`), or `#<n>` for the n-th top-level variable until its own
 * name has been read.
 */
function parseMatrix(body: Uint8Array, littleEndian: boolean, file: string, path: string, topLevel: boolean): { name: string; value: MatValue } {
  if (body.length === 0) {
    // MATLAB writes an empty miMATRIX for an unset struct field or cell: an empty double array.
    return { name: '', value: { kind: 'numeric', class: 'double', logical: false, dims: [0, 0], data: new Float64Array(0) } };
  }
  let here = path;
  const failHere = (message: string): DmlError => new DmlError('E_DATASET', `MAT-file ${file}: variable ${here}: ${message}`);
  const reader = new ElementReader(body, littleEndian, failHere);
  const flagsElement = reader.expect([miUINT32], 'array flags');
  if (flagsElement.data.length < 8) throw failHere('array flags are shorter than 8 bytes');
  const flags = new DataView(flagsElement.data.buffer, flagsElement.data.byteOffset, 8).getUint32(0, littleEndian);
  const classId = flags & 0xff;
  const dims = Array.from(numericValues(reader.expect([miINT32], 'dimensions'), littleEndian, failHere));
  const name = new TextDecoder('utf-8').decode(reader.expect([miINT8, miUINT8], 'array name').data);
  if (topLevel) here = name;
  if (dims.length < 2 || dims.some((d) => !Number.isInteger(d) || d < 0)) throw failHere(`invalid dimensions [${dims.join(', ')}]`);
  const count = product(dims);

  const unsupported = UNSUPPORTED_CLASSES.get(classId);
  if (unsupported) throw failHere(`is ${unsupported}; only numeric, char, cell and struct arrays are supported`);
  if (flags & FLAG_COMPLEX) throw failHere('is a complex array; only real arrays are supported');

  const numericClass = NUMERIC_CLASSES.get(classId);
  if (numericClass) {
    const data = count === 0 && reader.atEnd ? new Float64Array(0) : numericValues(reader.expect([...ELEMENT_SIZES.keys()], 'numeric data'), littleEndian, failHere);
    if (data.length !== count) throw failHere(`holds ${data.length} values; its dimensions [${dims.join(', ')}] say ${count}`);
    return { name, value: { kind: 'numeric', class: numericClass, logical: (flags & FLAG_LOGICAL) !== 0, dims, data } };
  }
  if (classId === mxCHAR) {
    const codes = count === 0 && reader.atEnd ? [] : charCodes(reader.expect([miUTF8, miUINT8, miINT8, miUINT16, miUTF16, miINT16, miUTF32, miUINT32, miINT32], 'char data'), littleEndian, failHere);
    if (codes.length !== count) throw failHere(`holds ${codes.length} characters; its dimensions [${dims.join(', ')}] say ${count}`);
    const rowCount = dims[0] ?? 0;
    const columns = count === 0 ? 0 : count / rowCount;
    const rows = Array.from({ length: rowCount }, (_, r) => Array.from({ length: columns }, (_, c) => codes[r + rowCount * c]).join(''));
    return { name, value: { kind: 'char', dims, rows } };
  }
  if (classId === mxCELL) {
    const cells: MatValue[] = [];
    for (let i = 0; i < count; i++) {
      const element = reader.expect([miMATRIX], `cell ${i + 1} of ${count}`);
      cells.push(parseMatrix(element.data, littleEndian, file, `${here}{${i + 1}}`, false).value);
    }
    return { name, value: { kind: 'cell', dims, cells } };
  }
  if (classId === mxSTRUCT) {
    const lengthElement = reader.expect([miINT32], 'field name length');
    const nameLength = numericValues(lengthElement, littleEndian, failHere)[0] ?? 0;
    const namesElement = reader.expect([miINT8, miUINT8], 'field names');
    if (namesElement.data.length > 0 && (nameLength <= 0 || namesElement.data.length % nameLength !== 0)) {
      throw failHere(`field names of ${namesElement.data.length} bytes do not divide into names of ${nameLength} bytes`);
    }
    const fieldNames: string[] = [];
    for (let at = 0; at < namesElement.data.length; at += nameLength) {
      const raw = namesElement.data.subarray(at, at + nameLength);
      const end = raw.indexOf(0);
      fieldNames.push(new TextDecoder('utf-8').decode(end < 0 ? raw : raw.subarray(0, end)));
    }
    const elements: Array<Map<string, MatValue>> = [];
    for (let i = 0; i < count; i++) {
      const fields = new Map<string, MatValue>();
      for (const field of fieldNames) {
        const element = reader.expect([miMATRIX], `field ${field} of element ${i + 1}`);
        fields.set(field, parseMatrix(element.data, littleEndian, file, `${here}(${i + 1}).${field}`, false).value);
      }
      elements.push(fields);
    }
    return { name, value: { kind: 'struct', dims, fieldNames, elements } };
  }
  throw failHere(`has unknown array class ${classId}`);
}

/** Decodes a MAT v5 file held in memory; `file` names it in errors. */
export function parseMat5(bytes: Uint8Array, file: string): MatFile {
  const fail = (message: string): DmlError => new DmlError('E_DATASET', `MAT-file ${file}: ${message}`);
  const headerText = new TextDecoder('latin1').decode(bytes.subarray(0, Math.min(116, bytes.length)));
  if (headerText.startsWith('MATLAB 7.3')) {
    throw fail('is a MAT 7.3 (HDF5) file, which is not supported; resave it with `save(file, "-v7")` or convert it to CSV');
  }
  if (bytes.length < 128 || !headerText.startsWith('MATLAB')) {
    throw fail('does not start with a MAT v5 header ("MATLAB 5.0 MAT-file ..."); MAT 4 and other formats are not supported');
  }
  const indicator = String.fromCharCode(bytes[126] ?? 0, bytes[127] ?? 0);
  if (indicator !== 'IM' && indicator !== 'MI') {
    throw fail(`has endian indicator ${JSON.stringify(indicator)}; expected "IM" or "MI"`);
  }
  const littleEndian = indicator === 'IM';
  const header = headerText.replace(/[\0\s]+$/, '');
  const variables = new Map<string, MatValue>();
  const reader = new ElementReader(bytes.subarray(128), littleEndian, fail, { label: 'file byte', offset: 128 });
  let index = 0;
  while (!reader.atEnd) {
    index++;
    let element = reader.next();
    if (element.type === miCOMPRESSED) {
      let inflated: Uint8Array;
      try {
        inflated = inflateSync(element.data);
      } catch (err) {
        throw new DmlError('E_DATASET', `MAT-file ${file}: compressed variable ${index} is not a valid zlib stream: ${(err as Error).message}`, { cause: err });
      }
      element = new ElementReader(inflated, littleEndian, fail, { label: `compressed variable ${index}, decompressed byte`, offset: 0 }).next();
    }
    if (element.type !== miMATRIX) throw fail(`top-level data element ${index} has data type ${element.type}; expected an array (miMATRIX)`);
    const { name, value } = parseMatrix(element.data, littleEndian, file, `#${index}`, true);
    variables.set(name, value);
  }
  return { header, variables };
}

/** Reads and decodes a MAT v5 file. */
export async function readMat5File(file: string): Promise<MatFile> {
  let bytes: Uint8Array;
  try {
    bytes = await readRegular(file, 'MAT-file');
  } catch (err) {
    throw fileSystemError(err, `MAT-file ${file}`);
  }
  return parseMat5(bytes, file);
}
