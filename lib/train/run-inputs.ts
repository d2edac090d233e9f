/**
 * @file The inputs of a training run, loaded before the first step: the seeded samples of training and
 * held-out items, the training and validation sets preloaded as model inputs (decoded images, or
 * features of a frozen ONNX backbone for recipe (c)), their batch tensors, and the embedding of a
 * whole set with the model being trained (for validation and the scatter diagram).
 */
import * as tf from '@tensorflow/tfjs';
import type { Manifest, ManifestItem } from '../data/manifest.js';
import { applyClassSplit, parseClassList } from '../data/class-split.js';
import { manifestHash, openDataset } from '../data/open-dataset.js';
import { DmlError } from '../errors.js';
import { OnnxEmbedder } from '../embed/embedder.js';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import type { Preprocessing } from '../image/preprocessing.js';
import { concatFloat32 } from '../util/concat.js';
import { definedFields } from '../util/defined-fields.js';
import { createProgress } from '../util/progress.js';
import { Rng } from '../util/rng.js';
import type { FeaturesSpec, TrainConfig } from './config.js';
import { computeBackboneFeatures } from './models/backbone-features.js';
import { featureTrainingData, preloadImages, trainingImagePreprocessing, type TrainingData } from './training-data.js';

/**
 * Image preprocessing for a model on pixels: {@link trainingImagePreprocessing}, required, and for an
 * `mlp` on flattened pixels an inputDim equal to the pixel count.
 */
function imagePreprocessing(config: TrainConfig, inputShape: readonly (number | null)[]): Preprocessing {
  const preprocessing = trainingImagePreprocessing(config.data.image, inputShape);
  if (preprocessing === undefined) {
    throw new DmlError('E_ARG', `data.image: a ${config.model.kind} model on images needs data.image { height, width, channels } (the model input is [${inputShape.join(', ')}])`);
  }
  const { height, width, channels } = preprocessing;
  if (config.model.kind === 'mlp' && config.model.inputDim !== height * width * channels) {
    throw new DmlError('E_ARG', `model.inputDim: expected ${height * width * channels} (= ${height} x ${width} x ${channels} image pixels) but received ${config.model.inputDim}`);
  }
  return preprocessing;
}

/** A seeded sample of at most `max` items, in manifest order. */
export function sampleItems(items: ManifestItem[], max: number, seed: number): ManifestItem[] {
  if (items.length <= max) return items;
  const picked = new Rng(seed).shuffle(items.map((_, i) => i)).slice(0, max).sort((a, b) => a - b);
  return picked.map((i) => items[i] as ManifestItem);
}

/** The items of a run: its dataset (class split applied), every training item, and the seeded samples it trains and validates on. */
export interface RunItems {
  manifest: Manifest;
  allTrainItems: ManifestItem[];
  trainItems: ManifestItem[];
  validationItems: ManifestItem[];
}

/**
 * Opens `config.data.dataset`, applies `data.trainClasses`, and samples the training items
 * (`data.maxTrainItems`, seed + 1) and the held-out validation items (`validation.maxItems`, seed),
 * as every run of this config does.
 */
export async function selectRunItems(config: TrainConfig, warn: (message: string) => void): Promise<RunItems> {
  let manifest = await openDataset(config.data.dataset, { warn });
  if (config.data.trainClasses !== undefined) {
    manifest = applyClassSplit(manifest, parseClassList(config.data.trainClasses, 'data.trainClasses'), 'data.trainClasses');
  }
  const allTrainItems = manifest.items.filter((it) => it.split === 'train');
  if (allTrainItems.length === 0) throw new DmlError('E_EMPTY', `${config.data.dataset}: no items with split "train" to train on`);
  const trainItems = sampleItems(allTrainItems, config.data.maxTrainItems ?? allTrainItems.length, config.seed + 1);
  const heldOut = manifest.items.filter((it) => it.split !== 'train' && (it.isQuery || it.isGallery));
  const validationItems = sampleItems(heldOut, config.validation.maxItems, config.seed);
  return { manifest, allTrainItems, trainItems, validationItems };
}

/**
 * Rows `rows` of `data` as a batch tensor [rows.length, ...inputShape]; `views[i]` picks the view of
 * row i (0 = `data.inputs`, v = `data.augmentedViews[v - 1]`), all plain when absent.
 */
export function batchTensor(data: TrainingData, rows: ArrayLike<number>, inputShape: number[], views?: Int32Array): tf.Tensor {
  const per = inputShape.reduce((a, b) => a * b, 1);
  const out = new Float32Array(rows.length * per);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i] as number;
    const view = views?.[i] ?? 0;
    const source = view === 0 ? data.inputs : (data.augmentedViews[view - 1] as Float32Array);
    out.set(source.subarray(r * per, (r + 1) * per), i * per);
  }
  return tf.tensor(out, [rows.length, ...inputShape]);
}

/** Embeds every row of `data` with `model` (batches of 256), as an EmbeddingSet. */
export function embedAll(model: tf.LayersModel, data: TrainingData, inputShape: number[]): EmbeddingSet {
  const chunks: Float32Array[] = [];
  let dim = 0;
  for (let start = 0; start < data.count; start += 256) {
    const rows = Array.from({ length: Math.min(256, data.count - start) }, (_, i) => start + i);
    const out = tf.tidy(() => model.predict(batchTensor(data, rows, inputShape)) as tf.Tensor2D);
    dim = out.shape[1];
    chunks.push(out.dataSync() as Float32Array);
    out.dispose();
  }
  return { vectors: concatFloat32(chunks), count: data.count, dim, ids: data.ids, labels: Array.from(data.labels, (c) => data.labelNames[c] as string) };
}

/** Preloaded training and validation inputs, and the image preprocessing that produced them. */
export interface LoadedData {
  trainData: TrainingData;
  validationData: TrainingData | undefined;
  /** How an image becomes model (or backbone) input; recorded in the report for export. */
  preprocessing: Preprocessing;
}

/** Decodes the training and validation images into memory (models on pixels; `inputShape`: the model's input, batch first). */
export async function loadImageData(
  config: TrainConfig,
  inputShape: readonly (number | null)[],
  trainItems: ManifestItem[],
  validationItems: ManifestItem[],
  signal: AbortSignal | undefined,
): Promise<LoadedData> {
  const preprocessing = imagePreprocessing(config, inputShape);
  const bar = createProgress('load images');
  const preloadOptions = {
    ...(config.data.maxPreloadBytes !== undefined ? { maxBytes: config.data.maxPreloadBytes } : {}),
    ...(signal !== undefined ? { signal } : {}),
    onProgress: (done: number, total: number) => bar.update(done, total),
  };
  try {
    const trainData = await preloadImages(trainItems, preprocessing, 'training set', preloadOptions);
    const validationData = validationItems.length > 0 ? await preloadImages(validationItems, preprocessing, 'validation set', preloadOptions) : undefined;
    return { trainData, validationData, preprocessing };
  } finally {
    bar.stop();
  }
}

/**
 * Recipe (c): features of the training (plain + augmented views) and validation images from the
 * frozen ONNX backbone of `features`, through the embedding cache. The model must be an `mlp` whose
 * inputDim is the backbone's embedding dimension.
 */
export async function loadFeatureData(
  config: TrainConfig,
  features: FeaturesSpec,
  manifest: Manifest,
  trainItems: ManifestItem[],
  validationItems: ManifestItem[],
  signal: AbortSignal | undefined,
): Promise<LoadedData> {
  if (config.model.kind !== 'mlp') {
    throw new DmlError('E_ARG', `model.kind: data.features trains a head on backbone features and needs model kind "mlp", but received "${config.model.kind}"`);
  }
  const inputDim = config.model.inputDim;
  const { data } = config;
  const embedder = await OnnxEmbedder.open(features.backbone, {
    device: features.device,
    batchSize: features.batchSize,
    ...(data.image !== undefined ? { preprocessing: definedFields(data.image) } : {}),
  });
  const bar = createProgress('backbone features');
  try {
    const checkDim = (dim: number | null): void => {
      if (dim !== null && dim !== inputDim) {
        throw new DmlError('E_ARG', `model.inputDim: expected ${dim}, the embedding dimension of the backbone ${features.backbone}, but received ${inputDim}`);
      }
    };
    checkDim(embedder.embeddingDim);
    const common = {
      cacheDir: features.cacheDir,
      seed: config.seed,
      onProgress: (done: number, total: number) => bar.update(done, total),
      ...(signal !== undefined ? { signal } : {}),
    };
    const hashOf = (items: ManifestItem[]): Promise<string> => manifestHash({ ...manifest, items }, signal !== undefined ? { signal } : {});
    const train = await computeBackboneFeatures(embedder, trainItems, await hashOf(trainItems), {
      ...common,
      augmentedViews: features.augmentedViews,
      augmentation: features.augmentation,
    });
    checkDim(train.views[0]?.dim ?? null);
    const validation = validationItems.length > 0 ? await computeBackboneFeatures(embedder, validationItems, await hashOf(validationItems), common) : undefined;
    return {
      trainData: featureTrainingData(train.views, 'training set'),
      validationData: validation ? featureTrainingData(validation.views, 'validation set') : undefined,
      preprocessing: embedder.preprocessing,
    };
  } finally {
    bar.stop();
    await embedder.release();
  }
}

