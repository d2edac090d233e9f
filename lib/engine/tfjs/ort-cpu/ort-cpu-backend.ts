/**
 * @file The `ort-cpu` TensorFlow.js backend: tfjs's pure-JavaScript `cpu` backend with its heavy
 * kernels (matrix products, convolutions and their gradients) run by onnxruntime's multithreaded CPU
 * kernels, and its hot element-wise, reduction, max-pooling and batch-normalisation kernels replaced
 * by tight typed-array loops or WebAssembly SIMD kernels (../wasm/) that compute exactly what the cpu
 * kernels compute. tfjs's autodiff, layers and optimisers work unchanged, since gradients are
 * registered per kernel name, not per backend.
 *
 * The backend object is a `MathBackendCPU` (tensor storage in JavaScript typed arrays) that also holds
 * the {@link OrtSyncRuntime}; every kernel of the `cpu` backend is registered for `ort-cpu` too, and
 * those of {@link HEAVY_KERNELS}, {@link ELEMENTWISE_KERNELS}, {@link REDUCTION_KERNELS},
 * {@link POOL_KERNELS} and {@link BATCH_NORM_KERNELS} are replaced. Two fused training kernels are
 * added, each used through ../ops/: batch normalisation in training with its closed-form gradient
 * (lib/train/models/training-batch-norm.ts uses it) and ReLU's gradient in one pass (registering the backend
 * replaces tfjs's gradient of `Relu` by one that uses the kernel on ort-cpu and tfjs's own expression
 * on every other backend). Results equal the `cpu` backend's up to float32 summation order (the
 * trainer's parity spec checks 20 training steps).
 */
import os from 'node:os';
import * as tf from '@tensorflow/tfjs';
import { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import { BATCH_NORM_KERNELS } from './batch-norm-kernels.js';
import { ELEMENTWISE_KERNELS } from './elementwise-kernels.js';
import { HEAVY_KERNELS, type OrtKernelBackend } from './heavy-kernels.js';
import { outputArrays } from './output-arrays.js';
import { POOL_KERNELS } from './pool-kernels.js';
import { REDUCTION_KERNELS } from './reduction-kernels.js';
import { useFusedReluGradient } from '../ops/relu-gradient.js';
import { loadOrtSyncRuntime, type NativeBindingLoader, type OrtSyncRuntime } from './ort-sync-runtime.js';
import { TFJS_BACKENDS } from '../backend-registry.js';

/** The name the backend is registered under (what `tf.getBackend()` returns). */
export const ORT_CPU_BACKEND_NAME = TFJS_BACKENDS['ort-cpu'].tfBackend;

/** Environment variable with the onnxruntime thread count (default: every core). */
export const ORT_CPU_THREADS_ENV = 'DML_ORT_CPU_THREADS';

class OrtCpuBackend extends MathBackendCPU implements OrtKernelBackend {
  readonly runtime: OrtSyncRuntime;

  constructor(runtime: OrtSyncRuntime) {
    super();
    this.runtime = runtime;
    // Every tensor-data entry is reported to the output-array pool as it is created, replaced or
    // deleted, so that an array is reused only when no entry holds or views it (output-arrays.ts).
    const storage = this.data;
    const set = storage.set.bind(storage);
    const remove = storage.delete.bind(storage);
    storage.set = (dataId, value) => {
      const previous = storage.has(dataId) ? storage.get(dataId).values : undefined;
      set(dataId, value);
      if (previous === value.values) return;
      outputArrays.register(value.values);
      if (previous !== undefined) outputArrays.release(previous);
    };
    storage.delete = (dataId) => {
      const previous = storage.has(dataId) ? storage.get(dataId).values : undefined;
      const deleted = remove(dataId);
      if (previous !== undefined) outputArrays.release(previous);
      return deleted;
    };
  }

  /** The values, copied when they are a pooled kernel output (which may be reused once the tensor is disposed). */
  override readSync(dataId: object): tf.backend_util.BackendValues {
    return outputArrays.readable(super.readSync(dataId));
  }

  override async read(dataId: object): Promise<tf.backend_util.BackendValues> {
    return this.readSync(dataId);
  }

  override dispose(): void {
    this.runtime.dispose();
    super.dispose();
    outputArrays.clear();
  }
}

/** Options of {@link registerOrtCpuBackend}. */
export interface OrtCpuBackendOptions {
  /** onnxruntime threads; default: $DML_ORT_CPU_THREADS, else every core. */
  threads?: number;
  /** Replaces the native-binding loader (tests simulate a broken binding with it). */
  loadBinding?: NativeBindingLoader;
}

function threadCount(requested: number | undefined): number {
  const fromEnv = process.env[ORT_CPU_THREADS_ENV];
  const value = requested ?? (fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) : os.availableParallelism());
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new Error(`${requested !== undefined ? 'threads' : ORT_CPU_THREADS_ENV} must be a positive integer, got ${String(requested ?? fromEnv)}`);
  }
  return value;
}

let registeredRuntime: OrtSyncRuntime | undefined;

/**
 * Loads and self-tests onnxruntime's synchronous binding, then registers the `ort-cpu` backend and
 * its kernels (once per process; later calls re-run the self-test and keep the registration).
 * Throws (E_MODEL, one line) when the binding is missing, of another version or fails the self-test;
 * nothing is registered then.
 */
export function registerOrtCpuBackend(options: OrtCpuBackendOptions = {}): void {
  const runtime = loadOrtSyncRuntime({ threads: threadCount(options.threads), ...(options.loadBinding ? { loadBinding: options.loadBinding } : {}) });
  if (registeredRuntime !== undefined && tf.findBackendFactory(ORT_CPU_BACKEND_NAME) != null) {
    runtime.dispose();
    return;
  }
  registeredRuntime = runtime;
  // Priority 0: never chosen as tfjs's default; the picker sets it explicitly.
  tf.registerBackend(ORT_CPU_BACKEND_NAME, () => new OrtCpuBackend(runtime), 0);
  const replaced: Record<string, tf.KernelFunc> = { ...ELEMENTWISE_KERNELS, ...REDUCTION_KERNELS, ...POOL_KERNELS, ...BATCH_NORM_KERNELS, ...HEAVY_KERNELS };
  for (const kernel of tf.getKernelsForBackend('cpu')) {
    const kernelFunc = replaced[kernel.kernelName] ?? kernel.kernelFunc;
    tf.registerKernel({ ...kernel, backendName: ORT_CPU_BACKEND_NAME, kernelFunc });
  }
  for (const [kernelName, kernelFunc] of Object.entries(replaced)) {
    if (tf.getKernel(kernelName, ORT_CPU_BACKEND_NAME) === undefined) tf.registerKernel({ kernelName, backendName: ORT_CPU_BACKEND_NAME, kernelFunc });
  }
  useFusedReluGradient();
}
