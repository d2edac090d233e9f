/**
 * @file Reader and writer for NumPy's `.npy` format (versions 1.0-3.0), so embeddings and labels
 * move between dmlkit and Python without conversion.
 *
 * Supported element types: float32/float64, int8/16/32/64, uint8/16/32/64, bool, and fixed-width
 * unicode strings (`<U<n>`, read only). Little-endian (or byte-order-free) C-order arrays only;
 * a Fortran-order or big-endian file is rejected with a message that says how to convert it.
 */
import { readRegularFile } from '../util/regular-file.js';
import { DmlError } from '../errors.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { halfToFloat } from '../util/half-float.js';

/** A decoded `.npy` array. Integer types of 64 bits come back as BigInt64Array / BigUint64Array. */
export interface NpyArray {
  /** NumPy dtype string as stored, e.g. `<f4`. */
  dtype: string;
  shape: number[];
  data:
    | Float32Array
    | Float64Array
    | Int8Array
    | Int16Array
    | Int32Array
    | BigInt64Array
    | Uint8Array
    | Uint16Array
    | Uint32Array
    | BigUint64Array
    | string[];
}

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

type NumericCtor =
  | Float32ArrayConstructor
  | Float64ArrayConstructor
  | Int8ArrayConstructor
  | Int16ArrayConstructor
  | Int32ArrayConstructor
  | BigInt64ArrayConstructor
  | Uint8ArrayConstructor
  | Uint16ArrayConstructor
  | Uint32ArrayConstructor
  | BigUint64ArrayConstructor;

const NUMERIC: Record<string, NumericCtor> = {
  f4: Float32Array,
  f8: Float64Array,
  i1: Int8Array,
  i2: Int16Array,
  i4: Int32Array,
  i8: BigInt64Array,
  u1: Uint8Array,
  b1: Uint8Array,
  u2: Uint16Array,
  u4: Uint32Array,
  u8: BigUint64Array,
};

/** Decodes the bytes of a `.npy` file (float16 is widened to float32). `name` is used in error messages. */
export function parseNpy(bytes: Uint8Array, name: string): NpyArray {
  const bad = (what: string): DmlError => new DmlError('E_DATASET', `${name} is not a readable .npy file: ${what}`);
  if (bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 3 && bytes[3] === 4) {
    throw new DmlError('E_DATASET', `${name} is a NumPy .npz archive, which dmlkit does not read: save each array as its own .npy file (numpy.save('queries.npy', array)) and pass those`);
  }
  if (bytes.length < 10 || MAGIC.some((b, i) => bytes[i] !== b)) throw bad('missing the \\x93NUMPY magic');
  const major = bytes[6] as number;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let headerLength: number;
  let headerStart: number;
  if (major === 1) {
    headerLength = view.getUint16(8, true);
    headerStart = 10;
  } else if (major === 2 || major === 3) {
    if (bytes.length < 12) throw bad('truncated header');
    headerLength = view.getUint32(8, true);
    headerStart = 12;
  } else {
    throw bad(`unsupported format version ${major}`);
  }
  const dataStart = headerStart + headerLength;
  if (dataStart > bytes.length) throw bad('truncated header');
  const header = new TextDecoder(major === 3 ? 'utf-8' : 'latin1').decode(bytes.subarray(headerStart, dataStart));
  const descr = /'descr'\s*:\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header)?.[1];
  const shapeText = /'shape'\s*:\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr === undefined || fortran === undefined || shapeText === undefined) throw bad(`unparseable header ${header.trim()}`);
  if (fortran === 'True') throw bad('Fortran-order arrays are not supported (save with np.ascontiguousarray)');
  const shape = shapeText
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map(Number);
  if (shape.some((d) => !Number.isInteger(d) || d < 0)) throw bad(`invalid shape (${shapeText})`);
  const count = shape.reduce((a, b) => a * b, 1);
  const order = descr[0];
  const kind = descr.slice(1);
  if (order === '>') throw bad(`big-endian dtype ${descr} is not supported (save with arr.astype('<${kind}'))`);

  if (kind.startsWith('U')) {
    const width = Number(kind.slice(1));
    if (!Number.isInteger(width) || width <= 0) throw bad(`invalid dtype ${descr}`);
    if (dataStart + count * width * 4 > bytes.length) throw bad(`data truncated: expected ${count} strings of ${width} chars`);
    const strings: string[] = new Array<string>(count);
    for (let i = 0; i < count; i++) {
      let s = '';
      for (let j = 0; j < width; j++) {
        const cp = view.getUint32(dataStart + (i * width + j) * 4, true);
        if (cp === 0) break;
        s += String.fromCodePoint(cp);
      }
      strings[i] = s;
    }
    return { dtype: descr, shape, data: strings };
  }
  if (kind === 'f2') {
    // float16 (common for stored embeddings): widened to float32, which holds every half value exactly.
    if (dataStart + count * 2 > bytes.length) {
      throw bad(`data truncated: header says shape (${shape.join(', ')}) of ${descr}, ${count * 2} bytes, file has ${bytes.length - dataStart}`);
    }
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = halfToFloat(view.getUint16(dataStart + 2 * i, true));
    return { dtype: descr, shape, data: out };
  }
  const Ctor = NUMERIC[kind];
  if (!Ctor) throw bad(`unsupported dtype ${descr} (supported: float16/32/64, (u)int8-64, bool, unicode)`);
  const byteLength = count * Ctor.BYTES_PER_ELEMENT;
  if (dataStart + byteLength > bytes.length) {
    throw bad(`data truncated: header says shape (${shape.join(', ')}) of ${descr}, ${byteLength} bytes, file has ${bytes.length - dataStart}`);
  }
  // Copy into a fresh, aligned buffer: the file offset need not be a multiple of the element size.
  // (Buffer#slice would return a view, so copy explicitly.)
  const copy = new Uint8Array(byteLength);
  copy.set(bytes.subarray(dataStart, dataStart + byteLength));
  return { dtype: descr, shape, data: new Ctor(copy.buffer, 0, count) };
}

/** Reads a `.npy` file. */
export async function readNpy(file: string): Promise<NpyArray> {
  return parseNpy(await readRegularFile(file, '.npy file'), file);
}

const DESCR_OF = new Map<unknown, string>([
  [Float32Array, '<f4'],
  [Float64Array, '<f8'],
  [Int8Array, '|i1'],
  [Int16Array, '<i2'],
  [Int32Array, '<i4'],
  [BigInt64Array, '<i8'],
  [Uint8Array, '|u1'],
  [Uint16Array, '<u2'],
  [Uint32Array, '<u4'],
  [BigUint64Array, '<u8'],
]);

/** Encodes a numeric typed array as a version-1.0 `.npy` file (header padded to 64 bytes). */
export function encodeNpy(data: Exclude<NpyArray['data'], string[]>, shape: number[]): Uint8Array[] {
  const descr = DESCR_OF.get(data.constructor);
  if (!descr) throw new TypeError(`Cannot encode ${data.constructor.name} as .npy`);
  const count = shape.reduce((a, b) => a * b, 1);
  if (count !== data.length) {
    throw new RangeError(`Expected ${count} elements for shape (${shape.join(', ')}) but received ${data.length}`);
  }
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const prefix = new Uint8Array(10 + header.length);
  prefix.set(MAGIC, 0);
  prefix[6] = 1;
  prefix[7] = 0;
  new DataView(prefix.buffer).setUint16(8, header.length, true);
  for (let i = 0; i < header.length; i++) prefix[10 + i] = header.charCodeAt(i);
  return [prefix, new Uint8Array(data.buffer, data.byteOffset, data.byteLength)];
}

/** Writes a numeric typed array to a `.npy` file atomically. */
export async function writeNpy(file: string, data: Exclude<NpyArray['data'], string[]>, shape: number[]): Promise<void> {
  await writeFileAtomic(file, encodeNpy(data, shape));
}
