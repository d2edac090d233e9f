/**
 * @file A WebAssembly kernel module instantiated from its bytes, with a scratch memory that grows on
 * demand: the kernels of this folder copy their operands into the memory, run, and copy the results
 * out (tensor data lives in JavaScript arrays, outside any WebAssembly memory). Operands larger than
 * {@link CHUNK_ELEMENTS} go through in chunks, so a module's memory (which never shrinks) stays within
 * a few chunks whatever the tensor sizes.
 */

/** The part of the WebAssembly JS API used here (TypeScript's ES libraries do not declare it; the DOM library does). */
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: Record<string, unknown> };
};

/** A WebAssembly memory: its current buffer, grown in 64 KiB pages. */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

const PAGE_BYTES = 65536;

/** Elements of one operand per kernel call (32 MiB of float32; a multiple of 4). */
export const CHUNK_ELEMENTS = 1 << 23;

/** `n` rounded up to whole SIMD vectors of four lanes (padding lanes are computed and never read back). */
export function roundUpToLanes(n: number): number {
  return Math.ceil(n / 4) * 4;
}

/** Calls `visit(start, end)` for consecutive ranges of at most `chunk` of the `length` items. */
export function forEachChunk(length: number, chunk: number, visit: (start: number, end: number) => void): void {
  for (let start = 0; start < length; start += chunk) visit(start, Math.min(length, start + chunk));
}

/** One instance of a kernel module that exports its memory as `memory`. */
export class WasmInstance<Exports extends object> {
  readonly exports: Exports;
  readonly #memory: WasmMemory;

  /** Instantiates the module whose .wasm bytes are `base64`. */
  constructor(base64: string) {
    const instance = new WebAssembly.Instance(new WebAssembly.Module(Buffer.from(base64, 'base64')));
    this.exports = instance.exports as Exports;
    this.#memory = instance.exports['memory'] as WasmMemory;
  }

  /** Grows the memory to at least `bytes` and returns its buffer (views of an older buffer are stale after growth). */
  reserve(bytes: number): ArrayBuffer {
    const have = this.#memory.buffer.byteLength;
    if (have < bytes) this.#memory.grow(Math.ceil((bytes - have) / PAGE_BYTES));
    return this.#memory.buffer;
  }
}

/** A getter that instantiates the module of `base64` on first use and returns that one instance after. */
export function lazyWasmInstance<Exports extends object>(base64: string): () => WasmInstance<Exports> {
  let instance: WasmInstance<Exports> | undefined;
  return () => (instance ??= new WasmInstance<Exports>(base64));
}
