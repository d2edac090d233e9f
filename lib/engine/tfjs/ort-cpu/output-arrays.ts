/**
 * @file Output arrays for the ort-cpu backend's kernels: allocated without zero-filling, and reused
 * once the tensor that held one is disposed.
 *
 * `new Float32Array(n)` zero-fills its memory, which for an activation map of [128, 28, 28, 32]
 * (12.8 MB) costs about as much as a kernel's own pass over it (a ReLU loop into a fresh zeroed array
 * 13-16 ms, into an uninitialised one 7-8 ms). Every kernel output is written in full before it is
 * returned, so the zero-fill is wasted work.
 *
 * A training step allocates its activations and gradients afresh (some 300 MB for the convnet), and
 * V8 collects garbage several times per step because of it. {@link OutputArrayPool} hands a disposed
 * tensor's array to the next kernel output of the same length instead (convnet step about 11% faster,
 * see docs/benchmarks.md). An array goes back to the pool only when nothing else can see it:
 * - the backend reports every tensor-data entry it creates or deletes ({@link OutputArrayPool.register},
 *   {@link OutputArrayPool.release}), and an array returns to the pool only when no entry holds it or
 *   a view of its buffer (tfjs's cpu `Slice` returns a `subarray` of its input as its output);
 * - reads hand out copies of pooled arrays ({@link OutputArrayPool.readable}), so values a program
 *   keeps after disposing the tensor (`const v = t.dataSync(); t.dispose()`) stay as they were;
 * - arrays taken but never registered as tensor data (scratch arrays of a kernel) are simply left to
 *   the garbage collector.
 */
import { Buffer } from 'node:buffer';

/** Below this many elements a zero-filled array costs nothing worth saving (and is not pooled). */
const UNINITIALISED_MIN_LENGTH = 4096;

/** Most bytes {@link outputArrays} keeps in free arrays; beyond it released arrays are left to the garbage collector. */
export const POOL_MAX_FREE_BYTES = 512 * 1024 * 1024;

function isTypedArray(value: unknown): value is ArrayBufferView {
  return ArrayBuffer.isView(value) && !(value instanceof DataView);
}

/** Float32 arrays of at least 4,096 elements, reused after their tensors are disposed (see the file comment). */
export class OutputArrayPool {
  readonly #free = new Map<number, Float32Array[]>();
  /** Every array this pool allocated, by its buffer (each owns a whole buffer). */
  readonly #byBuffer = new WeakMap<ArrayBufferLike, Float32Array>();
  /** Tensor-data entries whose values are the array or a view of its buffer. */
  readonly #entries = new WeakMap<Float32Array, number>();
  /** Arrays released more often than registered (ownership unknown): never reused. */
  readonly #untracked = new WeakSet<Float32Array>();
  #freeBytes = 0;
  readonly #maxFreeBytes: number;

  /** A pool keeping at most `maxFreeBytes` in free arrays. */
  constructor(maxFreeBytes: number = POOL_MAX_FREE_BYTES) {
    this.#maxFreeBytes = maxFreeBytes;
  }

  /** A float32 array of `length` elements with arbitrary contents (the caller overwrites it entirely). */
  take(length: number): Float32Array {
    if (length < UNINITIALISED_MIN_LENGTH) return new Float32Array(length);
    const reused = this.#free.get(length)?.pop();
    if (reused) {
      this.#freeBytes -= reused.byteLength;
      return reused;
    }
    const bytes = Buffer.allocUnsafeSlow(length * Float32Array.BYTES_PER_ELEMENT);
    const array = new Float32Array(bytes.buffer, bytes.byteOffset, length);
    if (bytes.byteOffset === 0 && bytes.buffer.byteLength === array.byteLength) this.#byBuffer.set(array.buffer, array);
    return array;
  }

  /** The array of this pool whose buffer `values` lies in, if any. */
  #owner(values: unknown): Float32Array | undefined {
    return isTypedArray(values) ? this.#byBuffer.get(values.buffer) : undefined;
  }

  /** A tensor-data entry now holds `values` (a pooled array or a view of one). */
  register(values: unknown): void {
    const owner = this.#owner(values);
    if (owner) this.#entries.set(owner, (this.#entries.get(owner) ?? 0) + 1);
  }

  /** A tensor-data entry that held `values` is gone; the array is reused once no entry holds it. */
  release(values: unknown): void {
    const owner = this.#owner(values);
    if (!owner) return;
    const entries = (this.#entries.get(owner) ?? 0) - 1;
    this.#entries.set(owner, entries);
    if (entries < 0) this.#untracked.add(owner);
    if (entries !== 0 || this.#untracked.has(owner) || this.#freeBytes + owner.byteLength > this.#maxFreeBytes) return;
    let list = this.#free.get(owner.length);
    if (!list) this.#free.set(owner.length, (list = []));
    list.push(owner);
    this.#freeBytes += owner.byteLength;
  }

  /** `values` as a reader may keep it: a copy when the array is this pool's (it may be reused later). */
  readable<T>(values: T): T {
    return this.#owner(values) && isTypedArray(values) ? ((values as unknown as Float32Array).slice() as unknown as T) : values;
  }

  /** Bytes held in free arrays. */
  get freeBytes(): number {
    return this.#freeBytes;
  }

  /** Drops every free array. */
  clear(): void {
    this.#free.clear();
    this.#freeBytes = 0;
  }
}

/** The pool of the ort-cpu backend's kernel outputs. */
export const outputArrays = new OutputArrayPool();

/**
 * A float32 array of `length` elements whose contents are arbitrary (not zeroed) from 4,096 elements
 * on, from {@link outputArrays}: only for arrays the caller overwrites entirely.
 */
export function uninitialisedFloat32Array(length: number): Float32Array {
  return outputArrays.take(length);
}
