/**
 * @file The names a run's `backend` takes (the training config, `dml train --backend`): the
 * TensorFlow.js backends with `auto` (lib/engine/tfjs/backend-registry.ts) and `onnx`, the graph trainer;
 * training-engine.ts says which engine `auto` picks. No TensorFlow.js here: the config and the
 * command's help read this file without loading it.
 */
import { BACKEND_PREFERENCES, type BackendPreference } from '../engine/tfjs/backend-registry.js';

/** Where a run trains: a TensorFlow.js backend preference, or `onnx` (the graph trainer on onnxruntime). */
export type TrainingBackend = BackendPreference | 'onnx';

/** Every training backend: the config's `backend` and `dml train --backend`. */
export const TRAINING_BACKENDS: readonly [TrainingBackend, ...TrainingBackend[]] = [...BACKEND_PREFERENCES, 'onnx'];
