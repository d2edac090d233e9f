/**
 * @file Reader for IDX files, the format of MNIST and Fashion-MNIST (`*-idx3-ubyte` images,
 * `*-idx1-ubyte` labels), raw or gzip-compressed.
 *
 * Format (big-endian): two zero bytes, a type byte (0x08 = uint8), a rank byte, then one uint32 per
 * dimension, then the data in row-major order. Only uint8 data is supported (all MNIST-family files).
 */
import { fileReadError, readRegular } from '../util/regular-file.js';
import { gunzipSync } from 'node:zlib';
import { DmlError } from '../errors.js';

/** A decoded IDX file. */
export interface IdxArray {
  /** Dimensions, e.g. [60000, 28, 28] for an image file, [60000] for a label file. */
  dims: number[];
  /** Row-major uint8 values; length = product of dims. */
  data: Uint8Array;
}

/** Decodes an IDX buffer (already gunzipped or not; gzip is detected by its magic bytes). */
export function parseIdx(buffer: Uint8Array, name: string): IdxArray {
  let bytes = buffer;
  if (bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      bytes = gunzipSync(bytes);
    } catch (err) {
      throw new DmlError('E_DATASET', `IDX file ${name} is not valid gzip: ${(err as Error).message}`, { cause: err });
    }
  }
  if (bytes.length < 4 || bytes[0] !== 0 || bytes[1] !== 0) {
    throw new DmlError('E_DATASET', `IDX file ${name} does not start with the IDX magic (0x00 0x00 type rank)`);
  }
  const type = bytes[2] as number;
  const rank = bytes[3] as number;
  if (type !== 0x08) {
    throw new DmlError('E_DATASET', `IDX file ${name} has data type 0x${type.toString(16)}; expected 0x08 (uint8)`);
  }
  if (rank < 1 || bytes.length < 4 + 4 * rank) {
    throw new DmlError('E_DATASET', `IDX file ${name} has a truncated header (rank ${rank}, ${bytes.length} bytes)`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dims: number[] = [];
  let size = 1;
  for (let i = 0; i < rank; i++) {
    const d = view.getUint32(4 + 4 * i, false);
    dims.push(d);
    size *= d;
  }
  const start = 4 + 4 * rank;
  if (bytes.length !== start + size) {
    throw new DmlError(
      'E_DATASET',
      `IDX file ${name} holds ${bytes.length - start} data bytes; its header (dims ${dims.join('x')}) says ${size}`,
    );
  }
  return { dims, data: bytes.subarray(start, start + size) };
}

const cache = new Map<string, Promise<IdxArray>>();

/**
 * Reads and decodes an IDX file. Results are memoised per path for the life of the process (an image
 * pipeline reading 70,000 items from one file decodes it once).
 */
export function readIdxFile(file: string): Promise<IdxArray> {
  let pending = cache.get(file);
  if (!pending) {
    pending = readRegular(file, 'IDX file').then(
      (buf) => parseIdx(buf, file),
      (err: unknown) => {
        throw fileReadError('IDX file', file, err);
      },
    );
    pending.catch(() => cache.delete(file));
    cache.set(file, pending);
  }
  return pending;
}
