/**
 * @file TensorFlow.js backend selection with explicit fallback, and the check that the chosen backend
 * can run the kernels a piece of work needs.
 *
 * `auto` tries, in order: `@tensorflow/tfjs-node-gpu` (TensorFlow's C library with CUDA),
 * `@tensorflow/tfjs-node` (TensorFlow's C library on the CPU), `ort-cpu` (tfjs's `cpu` backend with
 * matrix products and convolutions run by onnxruntime, see ort-cpu/ort-cpu-backend.ts),
 * `@tensorflow/tfjs-backend-wasm` (XNNPACK, SIMD, one thread in Node) and tfjs's pure-JavaScript `cpu`
 * backend. Each attempt and why it failed is recorded, so a run can report which backend actually ran.
 * A forced backend that cannot be loaded is an error naming the reason; it never falls back silently,
 * with one exception: a forced `ort-cpu` whose onnxruntime binding fails its self-test falls back to
 * `cpu` (same results, slower) and says so in {@link SelectedBackend.warning}.
 *
 * The two tfjs-node packages are optional peer dependencies of dmlkit, installed by the user who wants
 * them (their install downloads libtensorflow; as optionalDependencies a failed download left
 * TensorFlow.js itself behind in every consumer's node_modules). Both register a backend named
 * `tensorflow`. Those two paths are written to the packages' documented behaviour (importing the package
 * registers and selects the backend; the GPU build reports whether TensorFlow found a GPU through the
 * backend's `isUsingGpuDevice`) but are **untested here**: the development machines cannot install them.
 * The tests cover the fallback chain (auto ends on wasm) and the forced-failure error.
 *
 * Kernel coverage differs between backends: wasm has no `Conv2DBackpropFilter` and no depthwise
 * convolution gradients, so convolutional models cannot be trained on it. {@link ensureBackendSupports}
 * finds the kernels a model needs and switches to `cpu` with a warning line when the current backend
 * lacks one; it never lets work run on a backend that would fail halfway.
 */
import * as tf from '@tensorflow/tfjs';
import { DmlError, invalidParameterError } from '../../errors.js';
import { registerOrtCpuBackend } from './ort-cpu/ort-cpu-backend.js';
import type { NativeBindingLoader } from './ort-cpu/ort-sync-runtime.js';
import { FallbackExhausted, firstWorking } from '../../util/fallback.js';
import { BACKEND_PREFERENCES, TFJS_BACKEND_ORDER, TFJS_BACKENDS, type BackendChoice, type BackendPreference } from './backend-registry.js';

/** One try at loading a backend. */
export interface BackendAttempt {
  backend: BackendChoice;
  /** Why it failed (one line); absent for the attempt that succeeded. */
  error?: string;
}

/** The backend in use after {@link selectBackend}. */
export interface SelectedBackend {
  /** The choice that loaded. */
  name: BackendChoice;
  /** The name tfjs registers it under (`tensorflow`, `ort-cpu`, `wasm` or `cpu`): what `tf.getBackend()` returns. */
  tfBackend: string;
  /** Every attempt in order; the last one succeeded. */
  attempts: BackendAttempt[];
  /** A remark worth recording, e.g. that tfjs-node-gpu loaded but TensorFlow saw no GPU. */
  note?: string;
  /** One line to show the user when the forced `ort-cpu` fell back to `cpu`. */
  warning?: string;
}

/** Options of {@link selectBackend}. */
export interface SelectBackendOptions {
  /** onnxruntime threads of the ort-cpu backend (default: $DML_ORT_CPU_THREADS, else every core). */
  ortThreads?: number;
  /** Replaces onnxruntime's native-binding loader (tests simulate a broken binding with it). @internal */
  ortBindingLoader?: NativeBindingLoader;
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]?.trim() ?? '';
}

/** Imports the package of `choice` (registering its backend) and makes it the active backend. */
async function activate(choice: BackendChoice, options: SelectBackendOptions): Promise<string | undefined> {
  const { tfBackend: tfName, package: provider } = TFJS_BACKENDS[choice];
  if (choice === 'ort-cpu') {
    registerOrtCpuBackend({
      ...(options.ortThreads !== undefined ? { threads: options.ortThreads } : {}),
      ...(options.ortBindingLoader ? { loadBinding: options.ortBindingLoader } : {}),
    });
  }
  // A variable specifier keeps TypeScript from resolving the optional packages at compile time.
  const specifier: string = provider ?? '@tensorflow/tfjs';
  if (provider !== undefined) {
    try {
      await import(specifier);
    } catch (err) {
      // Only a failure to find the package itself means "not installed"; a missing native binding
      // inside an installed package is reported with its own message.
      const code = (err as NodeJS.ErrnoException).code;
      const notInstalled = (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && firstLine(err).includes(`'${specifier}'`);
      throw new Error(notInstalled ? `${specifier} is not installed` : firstLine(err), { cause: err });
    }
  }
  if (tf.findBackendFactory(tfName) == null) {
    // The package loaded but registered its backend with another copy of @tensorflow/tfjs-core.
    throw new Error(`${specifier} loaded but registered no '${tfName}' backend with this @tensorflow/tfjs (version mismatch?)`);
  }
  const ok = await tf.setBackend(tfName);
  if (!ok) throw new Error(`tf.setBackend('${tfName}') failed: the backend did not initialise`);
  await tf.ready();
  if (choice === 'tfjs-node-gpu') {
    const usingGpu = (tf.backend() as unknown as { isUsingGpuDevice?: boolean }).isUsingGpuDevice;
    if (usingGpu === false) return 'tfjs-node-gpu loaded, but TensorFlow found no usable GPU and runs on the CPU';
  }
  return undefined;
}

/**
 * Loads and activates a backend per `preference` (see the file comment for the `auto` order).
 * Errors: E_ARG for an unknown preference, or when a forced backend cannot be loaded (the message
 * names the package and the reason).
 */
export async function selectBackend(preference: BackendPreference, options: SelectBackendOptions = {}): Promise<SelectedBackend> {
  if (!BACKEND_PREFERENCES.includes(preference)) {
    throw invalidParameterError('backend', `one of ${BACKEND_PREFERENCES.map((p) => `'${p}'`).join(', ')}`, preference);
  }
  const order: readonly BackendChoice[] = preference === 'auto' ? TFJS_BACKEND_ORDER : preference === 'ort-cpu' ? ['ort-cpu', 'cpu'] : [preference];
  try {
    const chosen = await firstWorking(order, async (choice) => ({ value: await activate(choice, options) }), firstLine);
    const attempts = chosen.attempts.map(({ name, error }): BackendAttempt => ({ backend: name, ...(error !== undefined ? { error } : {}) }));
    const note = chosen.value;
    const fellBack = preference === 'ort-cpu' && chosen.chosen === 'cpu';
    return {
      name: chosen.chosen,
      tfBackend: TFJS_BACKENDS[chosen.chosen].tfBackend,
      attempts,
      ...(note !== undefined ? { note } : {}),
      ...(fellBack ? { warning: `backend ort-cpu unavailable (${attempts[0]?.error ?? ''}); using the cpu backend instead (same results, slower)` } : {}),
    };
  } catch (err) {
    if (!(err instanceof FallbackExhausted)) throw err;
    throw new DmlError('E_ARG', `Cannot use TensorFlow.js backend '${preference}' — ${err.message}`, { cause: err.cause });
  }
}

/** The kernels of `kernelNames` that `backend` (default: the active one) has no implementation for. */
export function missingKernels(kernelNames: Iterable<string>, backend: string = tf.getBackend()): string[] {
  const missing = new Set<string>();
  for (const name of kernelNames) if (tf.getKernel(name, backend) === undefined) missing.add(name);
  return [...missing].sort();
}

/**
 * Kernels that a layer class needs beyond the elementwise and matrix kernels every backend has: its
 * forward kernel and, for training, the kernels of its gradient. Only layer classes whose needs differ
 * between tfjs backends are listed (convolutions, pooling, embedding lookups); others need nothing
 * special.
 */
const LAYER_KERNELS: Readonly<Record<string, { forward: readonly string[]; backward: readonly string[] }>> = {
  Conv1D: { forward: ['Conv2D'], backward: ['Conv2DBackpropInput', 'Conv2DBackpropFilter'] },
  Conv2D: { forward: ['Conv2D'], backward: ['Conv2DBackpropInput', 'Conv2DBackpropFilter'] },
  Conv2DTranspose: { forward: ['Conv2DBackpropInput'], backward: ['Conv2D', 'Conv2DBackpropFilter'] },
  Conv3D: { forward: ['Conv3D'], backward: ['Conv3DBackpropInputV2', 'Conv3DBackpropFilterV2'] },
  DepthwiseConv2D: {
    forward: ['DepthwiseConv2dNative'],
    backward: ['DepthwiseConv2dNativeBackpropInput', 'DepthwiseConv2dNativeBackpropFilter'],
  },
  SeparableConv2D: {
    forward: ['DepthwiseConv2dNative', 'Conv2D'],
    backward: ['DepthwiseConv2dNativeBackpropInput', 'DepthwiseConv2dNativeBackpropFilter', 'Conv2DBackpropInput', 'Conv2DBackpropFilter'],
  },
  MaxPooling2D: { forward: ['MaxPool'], backward: ['MaxPoolGrad'] },
  AveragePooling2D: { forward: ['AvgPool'], backward: ['AvgPoolGrad'] },
  Embedding: { forward: ['GatherV2'], backward: ['UnsortedSegmentSum'] },
};

interface LayerLike {
  getClassName(): string;
  layers?: LayerLike[];
}

function collectLayerClasses(layers: readonly LayerLike[], into: Set<string>): void {
  for (const layer of layers) {
    into.add(layer.getClassName());
    if (Array.isArray(layer.layers)) collectLayerClasses(layer.layers, into);
  }
}

/**
 * The backend-sensitive kernels running `model` needs (see {@link LAYER_KERNELS}); with `training`,
 * also those of its gradients. Nested models are searched too.
 */
export function modelKernels(model: tf.LayersModel, training: boolean): string[] {
  const classes = new Set<string>();
  collectLayerClasses(model.layers as unknown as LayerLike[], classes);
  const kernels = new Set<string>();
  for (const cls of classes) {
    const entry = LAYER_KERNELS[cls];
    if (!entry) continue;
    for (const k of entry.forward) kernels.add(k);
    if (training) for (const k of entry.backward) kernels.add(k);
  }
  return [...kernels].sort();
}

/** What {@link ensureBackendSupports} decided. */
export interface BackendCheck {
  /** The backend that is active now and will run the work. */
  backend: string;
  /** The backend that was active before, when the check switched away from it. */
  switchedFrom?: string;
  /** Kernels the previous backend lacked (empty when no switch was needed). */
  missing: string[];
  /** One line to show the user when a switch happened. */
  warning?: string;
}

/** Options of {@link ensureBackendSupports}. */
export interface EnsureBackendOptions {
  /** Whether the model will be trained (gradient kernels needed) or only run. */
  training: boolean;
  /** Further kernels the work needs, e.g. those of the loss (find them with `tf.profile`). */
  extraKernels?: readonly string[];
}

/**
 * Makes sure the active backend can run `model` (and `extraKernels`): when it lacks a kernel, switches
 * to `cpu`, which implements every kernel tfjs has, and returns a warning line naming the missing
 * kernels. Call it before training starts; weights already created move to the new backend when next
 * read. Errors: E_MODEL when even `cpu` lacks a needed kernel.
 */
export async function ensureBackendSupports(model: tf.LayersModel, options: EnsureBackendOptions): Promise<BackendCheck> {
  const needed = [...modelKernels(model, options.training), ...(options.extraKernels ?? [])];
  const current = tf.getBackend();
  const missing = missingKernels(needed, current);
  if (missing.length === 0) return { backend: current, missing: [] };
  const missingOnCpu = missingKernels(needed, 'cpu');
  if (missingOnCpu.length > 0) {
    throw new DmlError('E_MODEL', `${model.name}: no TensorFlow.js backend implements ${missingOnCpu.join(', ')}`);
  }
  const ok = await tf.setBackend('cpu');
  if (!ok) throw new DmlError('E_MODEL', `${model.name}: backend '${current}' lacks ${missing.join(', ')} and the cpu backend did not initialise`);
  await tf.ready();
  const work = options.training ? 'Training' : 'Running';
  return {
    backend: 'cpu',
    switchedFrom: current,
    missing,
    warning: `${work} ${model.name} needs ${missing.join(', ')}, which the ${current} backend lacks; using the cpu backend instead (slower)`,
  };
}
