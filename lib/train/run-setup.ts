/**
 * @file Everything a run needs before its first step, and everything that can fail does so here,
 * before the run folder changes: the loss, the TensorFlow.js backend, the dataset and class split,
 * the coarse training labels (`data.trainLabelGroups`), a `model.kind: "onnx"` backbone's
 * preprocessing (or a resumed run's, from its checkpoint) and the folded-BatchNorm check, the model,
 * the engine (training-engine.ts), the preloaded training and validation inputs, the sampler and the
 * resolved configuration config.json records. The trainer (trainer.ts) runs the steps on it.
 */
import * as tf from '@tensorflow/tfjs';
import { DmlError } from '../errors.js';
import type { PreprocessingSources } from '../embed/model-signature.js';
import { readOnnxGraph } from '../engine/graph/onnx-ir.js';
import { ensureBackendSupports, selectBackend, type SelectedBackend } from '../engine/tfjs/backend.js';
import type { Preprocessing } from '../image/preprocessing.js';
import { readModelBytes } from '../onnx/model-files.js';
import { definedFields } from '../util/defined-fields.js';
import { backboneImageSpec } from './backbone-preprocessing.js';
import { checkAugmentationFitsImage, validateBatchAugmentation } from './batch-augmentation.js';
import { loadOnnxCheckpoint, readCheckpointState } from './checkpoint-io.js';
import type { TrainConfig } from './config.js';
import type { EpochRecord } from './epoch-record.js';
import { foldedBatchNormWarning } from './folded-batch-norm.js';
import { resolveLabelGroups, type LabelGroups } from './label-groups.js';
import type { MetricLoss } from './losses/metric-loss.js';
import { createLoss } from './losses/registry.js';
import { buildModel } from './models/build-model.js';
import { specEmbeddingDim, type ModelSpec, type OnnxModelSpec } from './models/model-spec.js';
import { loadFeatureData, loadImageData, selectRunItems } from './run-inputs.js';
import { createSampler, type BatchSampler } from './samplers/sampler.js';
import { relabelTrainingData, type TrainingData, type TrainingImageSpec } from './training-data.js';
import { selectEngine, type EngineSelection } from './training-engine.js';

/** Where a run stands: the epoch (1-based) of the last step taken, the steps taken of it, the steps taken in all. */
export interface RunPosition {
  epoch: number;
  epochStep: number;
  globalStep: number;
}

/** The state saved with each checkpoint besides its {@link RunPosition}. */
export interface CheckpointState {
  epoch: number;
  history: EpochRecord[];
  configHash: string;
  /** The configuration the hash is of (run-identity.ts), so a refused resume can name the fields that differ. */
  identity?: Record<string, unknown>;
  /** The loss's parameters as older checkpoints kept them (now in the checkpoint's arrays, lib/train/loss-optimizer.ts). */
  lossVariables?: number[][];
  lossGenerator?: number[] | undefined;
  /** The graph trainer's optimiser steps (a run on the onnx backend); its slots are the checkpoint's arrays. */
  graphSteps?: number;
  /** The numbers of the loss's step state (a cross-batch memory; its arrays are the checkpoint's). */
  lossStepState?: number[];
  /** A `model.kind: "onnx"` run: its resolved `data.image` and where it came from, so that a resume needs no backbone file. */
  backbonePreprocessing?: { image: TrainingImageSpec; preprocessingSources: PreprocessingSources; preprocessorConfig?: string };
}

/** What {@link prepareRun} gives the trainer. */
export interface RunSetup {
  /** The configuration with a backbone's preprocessing filled into `data.image`. */
  readonly config: TrainConfig;
  /** What config.json records: the resolved loss, sampler and label groups too. */
  readonly resolvedConfig: Record<string, unknown>;
  readonly loss: MetricLoss;
  readonly backend: SelectedBackend;
  readonly engine: EngineSelection;
  /** The TensorFlow.js model (dmlkit's model kinds). */
  readonly model: tf.LayersModel | undefined;
  /** A `model.kind: "onnx"` run: its spec, and the backbone's bytes (absent for a resume, which trains on from its checkpoint's `onnx`). */
  readonly onnxNetwork: { readonly spec: OnnxModelSpec; readonly backbone: Uint8Array | undefined; readonly resumed: Uint8Array | undefined } | undefined;
  /** The model's input shape without the batch axis. */
  readonly inputShape: number[];
  readonly trainData: TrainingData;
  readonly validationData: TrainingData | undefined;
  readonly preprocessing: Preprocessing;
  readonly sampler: BatchSampler;
  readonly backbonePreprocessing: CheckpointState['backbonePreprocessing'];
  /** A resume: the checkpoint's state. */
  readonly resumedState: CheckpointState | undefined;
}

/** Prepares a run of `config` (see the file comment). */
export async function prepareRun(
  config: TrainConfig,
  context: { readonly resume: boolean; readonly checkpointDir: string; readonly signal?: AbortSignal | undefined; readonly warn: (message: string) => void },
): Promise<RunSetup> {
  const loss: MetricLoss = createLoss(config.loss, { embeddingDim: specEmbeddingDim(config.model) });
  // The onnx backend trains through onnxruntime; TensorFlow.js (the fastest backend that loads) computes the loss and validates.
  const backend = await selectBackend(config.backend === 'onnx' ? 'auto' : config.backend);
  if (backend.warning) context.warn(backend.warning);
  const { manifest, allTrainItems, trainItems, validationItems } = await selectRunItems(config, context.warn);
  const labelGroups: LabelGroups | undefined =
    config.data.trainLabelGroups === undefined
      ? undefined
      : resolveLabelGroups(config.data.trainLabelGroups, new Set(manifest.items.map((it) => it.label)), new Set(allTrainItems.map((it) => it.label)));

  if (config.data.features && config.data.augmentation) {
    throw new DmlError('E_ARG', 'data.augmentation: augments images, but data.features trains on backbone features; use data.features.augmentedViews instead');
  }
  if (config.data.augmentation) validateBatchAugmentation(config.data.augmentation, 'data.augmentation');
  const modelSpec: ModelSpec = config.model;
  // A `model.kind: "onnx"` network has no TensorFlow.js model: the graph trainer trains it as ONNX (NHWC input, as the batches are).
  const onnxSpec = modelSpec.kind === 'onnx' ? modelSpec : undefined;
  // A resumed ONNX network comes from its checkpoint, with the preprocessing the run recorded: the backbone file is not read.
  const resumedOnnx = onnxSpec && context.resume ? await loadOnnxCheckpoint(context.checkpointDir) : undefined;
  let backbonePreprocessing = (resumedOnnx?.state as CheckpointState | undefined)?.backbonePreprocessing;
  let backboneBytes: Uint8Array | undefined;
  if (onnxSpec && backbonePreprocessing) {
    // data.image's fields as given now on top: a changed one is refused by the identity check below.
    config = { ...config, data: { ...config.data, image: { ...backbonePreprocessing.image, ...definedFields(config.data.image ?? {}) } } };
  } else if (onnxSpec) {
    // Its training images are preprocessed as the backbone says (data.image's fields override it); config.json records the result.
    backboneBytes = await readModelBytes(onnxSpec.path);
    const resolved = await backboneImageSpec(onnxSpec.path, backboneBytes, config.data.image, onnxSpec.preprocessorConfig);
    if (resolved.defaultsUsed.length > 0) {
      context.warn(`${onnxSpec.path} has no preprocessing metadata (dml.preprocessing) and no preprocessor_config.json; its training images use dmlkit's defaults: ${resolved.defaultsUsed.join(', ')}; set data.image or model.preprocessorConfig if the backbone was trained otherwise`);
    }
    const folded = foldedBatchNormWarning(readOnnxGraph(backboneBytes, onnxSpec.path), onnxSpec.path);
    if (folded) context.warn(folded);
    backbonePreprocessing = { image: resolved.image, preprocessingSources: resolved.sources, ...(resolved.preprocessorConfig !== undefined ? { preprocessorConfig: resolved.preprocessorConfig } : {}) };
    config = { ...config, data: { ...config.data, image: resolved.image } };
  }
  const model = onnxSpec ? undefined : await buildModel(modelSpec, config.seed);
  const resumedState = context.resume ? ((resumedOnnx?.state ?? (await readCheckpointState(context.checkpointDir))) as CheckpointState | undefined) : undefined;
  const engine = selectEngine(config, backend.name, resumedState ? (resumedState.graphSteps !== undefined ? 'onnx' : 'tfjs') : undefined, model);
  const image = config.data.image;
  const inputShape = model ? (model.inputs[0]?.shape.slice(1) as number[]) : [image?.height ?? 0, image?.width ?? 0, image?.channels ?? 0];
  const loaded = config.data.features
    ? await loadFeatureData(config, config.data.features, manifest, trainItems, validationItems, context.signal)
    : await loadImageData(config, [null, ...inputShape], trainItems, validationItems, context.signal);
  const { validationData, preprocessing } = loaded;
  if (config.data.augmentation) checkAugmentationFitsImage(config.data.augmentation, preprocessing.height, preprocessing.width, 'data.augmentation');
  // Coarse labels for training only (sampler, loss, scatter of the training set); validation keeps the fine ones.
  const trainData = labelGroups ? relabelTrainingData(loaded.trainData, labelGroups.groupOf) : loaded.trainData;
  loss.checkTrainingLabels?.(trainData.labelNames);
  const sampler = createSampler(config.sampler, trainData.labels, config.seed, trainData.labelNames);
  for (const message of sampler.warnings) context.warn(message);

  if (model) {
    const check = await ensureBackendSupports(model, { training: engine.engine !== 'onnx' });
    if (check.warning) context.warn(check.warning);
  }

  const resolvedConfig = {
    ...config,
    ...(labelGroups ? { data: { ...config.data, trainLabelGroups: labelGroups.groups } } : {}),
    loss: { name: loss.name, ...loss.config },
    sampler: sampler.describe(),
  };
  return {
    config,
    resolvedConfig,
    loss,
    backend,
    engine,
    model,
    onnxNetwork: onnxSpec ? { spec: onnxSpec, backbone: backboneBytes, resumed: resumedOnnx?.onnx } : undefined,
    inputShape,
    trainData,
    validationData,
    preprocessing,
    sampler,
    backbonePreprocessing,
    resumedState,
  };
}
