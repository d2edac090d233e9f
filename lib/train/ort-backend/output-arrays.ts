/**
 * @file Output arrays for the ort-cpu backend's kernels, allocated without zero-filling.
 *
 * `new Float32Array(n)` zero-fills its memory, which for an activation map of [128, 28, 28, 32]
 * (12.8 MB) costs about as much as a kernel's own pass over it (a ReLU loop into a fresh zeroed array
 * 13-16 ms, into an uninitialised one 7-8 ms). Every kernel output is written in full before it is
 * returned, so the zero-fill is wasted work.
 */
import { Buffer } from 'node:buffer';

/** Below this many elements a zero-filled array costs nothing worth saving. */
const UNINITIALISED_MIN_LENGTH = 4096;

/**
 * A float32 array of `length` elements whose contents are arbitrary (not zeroed) from
 * {@link UNINITIALISED_MIN_LENGTH} elements on: only for arrays the caller overwrites entirely. It
 * owns its whole ArrayBuffer (offset 0, never a slice of a shared pool).
 */
export function uninitialisedFloat32Array(length: number): Float32Array {
  if (length < UNINITIALISED_MIN_LENGTH) return new Float32Array(length);
  const bytes = Buffer.allocUnsafeSlow(length * Float32Array.BYTES_PER_ELEMENT);
  return new Float32Array(bytes.buffer, bytes.byteOffset, length);
}
