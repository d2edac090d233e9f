/**
 * @file Which engine trains a run: the graph trainer (`onnx`: the network as ONNX graphs on
 * onnxruntime, lib/train/graph-network.ts) or TensorFlow.js on the backend selected for it.
 *
 * `backend: "onnx"` and a named TensorFlow.js backend decide it themselves. `backend: "auto"` picks:
 * 1. the engine of the checkpoint a resume continues (the other cannot continue its optimiser state);
 * 2. the graph trainer for what only it does: a `model.kind: "onnx"` network, `device`, `microBatch`;
 * 3. TensorFlow.js when its native backend loads (@tensorflow/tfjs-node or -gpu installed);
 * 4. otherwise the graph trainer, when it can convert the model: on the CPU it is the faster engine
 *    (docs/train.md, "Which engine trains") and the one checked step for step against PyTorch;
 * 5. else TensorFlow.js, with the reason.
 * The choice and its reason are in the run's report.json (`engineSelection`) and its log.
 */
import type * as tf from '@tensorflow/tfjs';
import { DmlError } from '../errors.js';
import type { BackendChoice } from '../engine/tfjs/backend-registry.js';
import { convertLayersModel } from '../engine/tfjs/tfjs-to-onnx.js';
import type { TrainConfig } from './config.js';

/** The engine of a run and why: report.json's `engineSelection`. */
export interface EngineSelection {
  /** The config's `backend`. */
  readonly requested: string;
  /** `onnx`: the graph trainer; `tfjs`: TensorFlow.js. */
  readonly engine: 'onnx' | 'tfjs';
  readonly reason: string;
}

/** TensorFlow.js backends that beat the graph trainer where they load (native TensorFlow). */
const NATIVE_TFJS_BACKENDS: ReadonlySet<BackendChoice> = new Set(['tfjs-node-gpu', 'tfjs-node']);

/**
 * The engine of a run of `config` (see the file comment): `tfjsBackend` is the TensorFlow.js backend
 * selected for it, `resumed` the engine of the checkpoint a resume continues, `model` the TensorFlow.js
 * model (none for `model.kind: "onnx"`), whose conversion is tried when `auto` would pick the graph trainer.
 */
export function selectEngine(
  config: Pick<TrainConfig, 'backend' | 'model' | 'device' | 'microBatch'>,
  tfjsBackend: BackendChoice,
  resumed: 'onnx' | 'tfjs' | undefined,
  model: tf.LayersModel | undefined,
): EngineSelection {
  const requested = config.backend;
  if (requested === 'onnx') return { requested, engine: 'onnx', reason: 'backend onnx' };
  if (requested !== 'auto') return { requested, engine: 'tfjs', reason: `backend ${requested}` };
  if (resumed) return { requested, engine: resumed, reason: `the checkpoint a resume continues was trained by ${resumed === 'onnx' ? 'the graph trainer' : 'TensorFlow.js'}` };
  if (config.model.kind === 'onnx') return { requested, engine: 'onnx', reason: 'model.kind "onnx" trains on the graph trainer' };
  const graphOnly = [config.device !== undefined ? 'device' : '', config.microBatch !== undefined ? 'microBatch' : ''].filter((f) => f !== '');
  if (graphOnly.length > 0) return { requested, engine: 'onnx', reason: `${graphOnly.join(' and ')} set: the graph trainer's settings` };
  if (NATIVE_TFJS_BACKENDS.has(tfjsBackend)) return { requested, engine: 'tfjs', reason: `TensorFlow.js's native backend loads (${tfjsBackend})` };
  try {
    if (model) convertLayersModel(model, { layout: 'NHWC', inputName: 'input' });
  } catch (err) {
    if (!(err instanceof DmlError)) throw err;
    return { requested, engine: 'tfjs', reason: `the graph trainer cannot take this model (${err.message}); TensorFlow.js on ${tfjsBackend}` };
  }
  return { requested, engine: 'onnx', reason: 'no TensorFlow.js native backend installed (@tensorflow/tfjs-node or -gpu): the graph trainer, faster on the CPU' };
}
