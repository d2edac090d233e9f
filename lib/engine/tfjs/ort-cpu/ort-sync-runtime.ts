/**
 * @file Synchronous onnxruntime sessions for TensorFlow.js kernels: the one module that touches
 * onnxruntime-node's native binding.
 *
 * tfjs kernels are synchronous functions, and onnxruntime-node's public `InferenceSession.run()` is
 * async (it defers the native call with `setImmediate`). The package's native binding, which that
 * public API wraps, runs synchronously: `new binding.InferenceSession()`, `loadModel(buffer, offset,
 * length, options)`, `run(feeds, fetches, runOptions)`. That binding is **not public API**, so:
 * - the onnxruntime-node version is pinned exactly in package.json ({@link PINNED_ORT_VERSION});
 * - every access goes through this module;
 * - {@link loadOrtSyncRuntime} self-tests the binding (a 2x3 by 3x2 MatMul checked against
 *   JavaScript) and throws one clear error when anything differs, so the backend picker can fall back
 *   to tfjs's `cpu` backend instead of crashing mid-training.
 *
 * Sessions are built from small ONNX graphs (one op plus layout transposes, see op-models.ts) and
 * cached by a signature string (op, attributes, input shapes) in a bounded LRU map: a training run
 * repeats the same few shapes every step, so after the first step no session is created.
 */
import { createRequire } from 'node:module';
import ort from '../../../onnx/ort.js';
import { quietOrtLogging } from '../../../onnx/session.js';
import { DmlError } from '../../../errors.js';
import { encodeModel, node, tensorValueInfo } from '../../../onnx/builder.js';
import { uninitialisedFloat32Array } from './output-arrays.js';

/** The onnxruntime-node version whose native binding this module was written and tested against. */
export const PINNED_ORT_VERSION = '1.30.0';

/** The parts of the native binding's session that are used (onnxruntime-node dist/binding.d.ts). */
interface NativeSession {
  loadModel(buffer: ArrayBuffer, byteOffset: number, byteLength: number, options: ort.InferenceSession.SessionOptions): void;
  readonly inputMetadata: ReadonlyArray<{ name: string }>;
  readonly outputMetadata: ReadonlyArray<{ name: string }>;
  run(feeds: Record<string, ort.Tensor>, fetches: Record<string, ort.Tensor | null>, options: ort.InferenceSession.RunOptions): Record<string, ort.Tensor>;
  dispose(): void;
}

/** What `onnxruntime-node/dist/binding` exports (the parts used). */
export interface NativeBindingModule {
  binding: { InferenceSession: new () => NativeSession };
  initOrt: () => void;
}

/** Loads the native binding module; replaceable in tests to simulate a changed or missing binding. */
export type NativeBindingLoader = () => NativeBindingModule;

const requireFromHere = createRequire(import.meta.url);

/** The default loader: onnxruntime-node's own binding module (shared with its public API). */
export const loadNativeBinding: NativeBindingLoader = () => requireFromHere('onnxruntime-node/dist/binding') as NativeBindingModule;

/** A float32 input or output of a synchronous run. */
export interface FloatArray {
  data: Float32Array;
  dims: readonly number[];
}

/** One compiled single-purpose graph with named float32 inputs and outputs. */
export class OrtSyncSession {
  readonly #session: NativeSession;
  readonly #outputNames: string[];

  constructor(session: NativeSession) {
    this.#session = session;
    this.#outputNames = session.outputMetadata.map((m) => m.name);
  }

  /**
   * Runs the graph synchronously; returns the outputs in graph order. With `outputDims` (one shape
   * per output, in graph order) the output arrays are allocated here and onnxruntime writes into them
   * (the binding takes pre-allocated output tensors), which saves copying each output out of
   * onnxruntime's memory; without it onnxruntime allocates and the binding copies.
   */
  run(feeds: Readonly<Record<string, FloatArray>>, outputDims?: ReadonlyArray<readonly number[]>): FloatArray[] {
    const tensors: Record<string, ort.Tensor> = {};
    for (const [name, value] of Object.entries(feeds)) tensors[name] = new ort.Tensor('float32', value.data, value.dims as number[]);
    if (outputDims !== undefined && outputDims.length !== this.#outputNames.length) {
      throw new DmlError('E_MODEL', `the graph has ${this.#outputNames.length} outputs, ${outputDims.length} output shapes were given`);
    }
    // onnxruntime writes every element of an output, so the arrays need no zero-fill.
    const allocated = outputDims?.map((dims) => ({ data: uninitialisedFloat32Array(dims.reduce((p, d) => p * d, 1)), dims }));
    const fetches: Record<string, ort.Tensor | null> = {};
    this.#outputNames.forEach((name, i) => {
      const out = allocated?.[i];
      fetches[name] = out ? new ort.Tensor('float32', out.data, out.dims as number[]) : null;
    });
    const results = this.#session.run(tensors, fetches, {});
    return this.#outputNames.map((name, i) => {
      const out = allocated?.[i];
      if (out) return out;
      const t = results[name];
      if (!t || !(t.data instanceof Float32Array)) throw new DmlError('E_MODEL', `onnxruntime returned no float32 output '${name}'`);
      return { data: t.data, dims: t.dims };
    });
  }

  dispose(): void {
    this.#session.dispose();
  }
}

/** Options of {@link loadOrtSyncRuntime}. */
export interface OrtSyncRuntimeOptions {
  /** onnxruntime intra-op threads per session; default: every core (`os.availableParallelism()`). */
  threads: number;
  /** Most sessions kept; the least recently used is disposed beyond it. Default 256. */
  maxSessions?: number;
  /** Replaces the binding loader (tests simulate a broken binding with it). */
  loadBinding?: NativeBindingLoader;
}

/** Sessions by signature, built on demand, least recently used dropped beyond a bound. */
export class OrtSyncRuntime {
  readonly threads: number;
  readonly #module: NativeBindingModule;
  readonly #maxSessions: number;
  readonly #sessions = new Map<string, OrtSyncSession>();

  constructor(module: NativeBindingModule, threads: number, maxSessions: number) {
    this.#module = module;
    this.threads = threads;
    this.#maxSessions = maxSessions;
  }

  /** Compiles a serialised ONNX model into a synchronous session (not cached). */
  compile(modelBytes: Uint8Array): OrtSyncSession {
    const session = new this.#module.binding.InferenceSession();
    const buffer = modelBytes.buffer as ArrayBuffer;
    session.loadModel(buffer, modelBytes.byteOffset, modelBytes.byteLength, {
      intraOpNumThreads: this.threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
      executionMode: 'sequential',
      // onnxruntime's pool threads spin after each run by default; between kernels the JavaScript
      // work then competes with a spinning thread for the cores (measured: head step 129 -> ~30 ms
      // with spinning off).
      extra: { session: { intra_op: { allow_spinning: '0' } } },
    });
    return new OrtSyncSession(session);
  }

  /** The cached session for `signature`, compiling `build()` on a miss. */
  session(signature: string, build: () => Uint8Array): OrtSyncSession {
    const hit = this.#sessions.get(signature);
    if (hit) {
      this.#sessions.delete(signature);
      this.#sessions.set(signature, hit);
      return hit;
    }
    const created = this.compile(build());
    this.#sessions.set(signature, created);
    if (this.#sessions.size > this.#maxSessions) {
      const [oldest, session] = this.#sessions.entries().next().value as [string, OrtSyncSession];
      this.#sessions.delete(oldest);
      session.dispose();
    }
    return created;
  }

  /** Number of cached sessions. */
  get cachedSessions(): number {
    return this.#sessions.size;
  }

  /** Signatures of the cached sessions, least recently used first (which graph served which op). */
  get cachedSignatures(): string[] {
    return [...this.#sessions.keys()];
  }

  /** Disposes every cached session. */
  dispose(): void {
    for (const s of this.#sessions.values()) s.dispose();
    this.#sessions.clear();
  }
}

function installedOrtVersion(): string {
  try {
    return (requireFromHere('onnxruntime-node/package.json') as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/**
 * Loads the native binding, checks the installed onnxruntime-node version against
 * {@link PINNED_ORT_VERSION} and runs the self-test (a MatMul, returned and into a pre-allocated
 * output, compared with JavaScript to 1e-6).
 * Throws E_MODEL with one line naming what failed; never returns a runtime that has not passed.
 */
export function loadOrtSyncRuntime(options: OrtSyncRuntimeOptions): OrtSyncRuntime {
  const version = installedOrtVersion();
  if (options.loadBinding === undefined && version !== PINNED_ORT_VERSION) {
    throw new DmlError('E_MODEL', `the ort-cpu backend needs onnxruntime-node ${PINNED_ORT_VERSION} (its native binding is not public API), found ${version}`);
  }
  let runtime: OrtSyncRuntime;
  try {
    const module = (options.loadBinding ?? loadNativeBinding)();
    if (typeof module?.binding?.InferenceSession !== 'function' || typeof module.initOrt !== 'function') {
      throw new Error('the module has no binding.InferenceSession or initOrt');
    }
    quietOrtLogging(); // a later GPU attempt of the onnx training backend must not print onnxruntime's error line
    module.initOrt();
    runtime = new OrtSyncRuntime(module, options.threads, options.maxSessions ?? 256);
    selfTest(runtime);
  } catch (err) {
    const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw new DmlError('E_MODEL', `onnxruntime-node ${version}: the synchronous native binding failed its self-test (${reason})`, { cause: err });
  }
  return runtime;
}

/** A [2,3] x [3,2] MatMul through the binding (both output paths), compared with the product computed here. */
function selfTest(runtime: OrtSyncRuntime): void {
  const bytes = encodeModel({
    graphName: 'ort_cpu_self_test',
    inputs: [tensorValueInfo('a', 'float32', [2, 3]), tensorValueInfo('b', 'float32', [3, 2])],
    outputs: [tensorValueInfo('y', 'float32', [2, 2])],
    nodes: [node('MatMul', ['a', 'b'], ['y'])],
  });
  const a = Float32Array.from([1, 2, 3, 4, 5, 6]);
  const b = Float32Array.from([0.5, -1, 2, 0.25, -3, 4]);
  const session = runtime.compile(bytes);
  try {
    // Both ways of getting outputs: arrays the binding returns, and arrays given to it to write into
    // (how the kernels run).
    for (const outputDims of [undefined, [[2, 2]]]) {
      const [y] = session.run({ a: { data: a, dims: [2, 3] }, b: { data: b, dims: [3, 2] } }, outputDims);
      const expected = [1 * 0.5 + 2 * 2 + 3 * -3, 1 * -1 + 2 * 0.25 + 3 * 4, 4 * 0.5 + 5 * 2 + 6 * -3, 4 * -1 + 5 * 0.25 + 6 * 4];
      if (!y || y.dims.join(',') !== '2,2' || expected.some((v, i) => Math.abs((y.data[i] ?? Number.NaN) - v) > 1e-6)) {
        const into = outputDims ? ' into a pre-allocated output' : '';
        throw new Error(`MatMul${into} gave ${y ? `[${Array.from(y.data).join(', ')}] of shape [${y.dims.join(', ')}]` : 'nothing'}, expected [${expected.join(', ')}]`);
      }
    }
  } finally {
    session.dispose();
  }
}
