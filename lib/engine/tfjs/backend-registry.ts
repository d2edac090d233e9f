/**
 * @file The TensorFlow.js backends dmlkit can train on, in one registry: for each, the name tfjs
 * registers it under and the package that provides it; `auto` tries them in
 * {@link TFJS_BACKEND_ORDER}. backend.ts loads them (with the fallback of lib/util/fallback.ts); the
 * training config and `dml train --backend` take these names plus `onnx`, the graph trainer
 * (`TRAINING_BACKENDS`, lib/train/training-backends.ts). Adding a backend is its name in the order and its entry in
 * {@link TFJS_BACKENDS}. No TensorFlow.js here: the config and the command's help read this file
 * without loading it.
 */

/** The TensorFlow.js backends `auto` tries, fastest first; each has its entry in {@link TFJS_BACKENDS}. */
export const TFJS_BACKEND_ORDER = ['tfjs-node-gpu', 'tfjs-node', 'ort-cpu', 'wasm', 'cpu'] as const;

/** A concrete TensorFlow.js backend. */
export type BackendChoice = (typeof TFJS_BACKEND_ORDER)[number];

/** What the user asks for: a backend, or `auto`. */
export type BackendPreference = 'auto' | BackendChoice;

/** How to load one TensorFlow.js backend (see {@link TFJS_BACKENDS}). */
export interface TfjsBackend {
  /** The name tfjs registers it under: what `tf.getBackend()` returns. */
  readonly tfBackend: string;
  /** The package whose import registers it; absent for the backends @tensorflow/tfjs and dmlkit provide. */
  readonly package?: string;
}

/** The TensorFlow.js backends by name. */
export const TFJS_BACKENDS: Readonly<Record<BackendChoice, TfjsBackend>> = {
  'tfjs-node-gpu': { tfBackend: 'tensorflow', package: '@tensorflow/tfjs-node-gpu' },
  'tfjs-node': { tfBackend: 'tensorflow', package: '@tensorflow/tfjs-node' },
  // dmlkit's own: tfjs's cpu backend with matrix products and convolutions run by onnxruntime (ort-cpu/).
  'ort-cpu': { tfBackend: 'ort-cpu' },
  wasm: { tfBackend: 'wasm', package: '@tensorflow/tfjs-backend-wasm' },
  cpu: { tfBackend: 'cpu' },
};

/** Every backend preference, `auto` first. */
export const BACKEND_PREFERENCES: readonly [BackendPreference, ...BackendPreference[]] = ['auto', ...TFJS_BACKEND_ORDER];

