/**
 * @file In-memory training and validation data for the trainer: the items of a manifest decoded once
 * into one Float32 tensor (NHWC, as TensorFlow.js wants it) with integer label codes, or precomputed
 * feature vectors. Preloading bounds the per-step cost to the model itself; a set larger than
 * `maxBytes` is refused with a message pointing to the feature (backbone + head) recipe.
 */
import type { ManifestItem } from '../data/manifest.js';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import { DmlError } from '../errors.js';
import { loadImageBatch } from '../image/batch-loader.js';
import { RESAMPLE_FILTERS, RESIZE_MODES, type CropRounding, type Preprocessing, type ResampleFilter, type ResizeMode } from '../image/preprocessing.js';
import { validatePreprocessing } from '../image/validate.js';
import { definedFields } from '../util/defined-fields.js';
import { z } from 'zod';
import { positiveIntegerField } from '../util/zod-fields.js';

/** Rows of inputs with labels. */
export interface TrainingData {
  /** Row-major inputs: count x prod(inputShape). */
  inputs: Float32Array;
  /** Shape of one input, e.g. [28, 28, 1] for images, [2048] for features. */
  inputShape: number[];
  count: number;
  /** Label code per row (index into `labelNames`). */
  labels: Int32Array;
  labelNames: string[];
  /** Item id per row. */
  ids: string[];
  /**
   * Further views of the same rows in the same layout as `inputs` (augmented backbone features);
   * empty for images. A step draws per row one of `inputs` and these.
   */
  augmentedViews: Float32Array[];
}

/** Default cap on preloaded inputs: 4 GiB of float32. */
export const DEFAULT_MAX_PRELOAD_BYTES = 4 * 2 ** 30;

/** Label codes in sorted label order (deterministic whatever the item order). */
export function encodeTrainingLabels(labels: readonly string[]): { codes: Int32Array; names: string[] } {
  const names = [...new Set(labels)].sort();
  const codeOf = new Map(names.map((n, i) => [n, i]));
  return { codes: Int32Array.from(labels, (l) => codeOf.get(l) as number), names };
}

/**
 * The `data.image` part of a training config: size and normalisation of the training images, and
 * optionally how they are resized and cropped ({@link Preprocessing}'s fields of the same names).
 * Size and channels may be left out when the model's input fixes them; a `model.kind: "onnx"` run
 * fills every field left out from the backbone (lib/train/backbone-preprocessing.ts).
 */
export interface TrainingImageSpec {
  height?: number | undefined;
  width?: number | undefined;
  channels?: 1 | 3 | undefined;
  resizeShorter?: number | undefined;
  mean?: number[] | undefined;
  std?: number[] | undefined;
  resizeMode?: ResizeMode | undefined;
  resizeLonger?: number | undefined;
  resizeWidth?: number | undefined;
  resizeHeight?: number | undefined;
  resample?: ResampleFilter | undefined;
  cropRounding?: CropRounding | undefined;
  rescale?: number | undefined;
}

/** The optional resize, crop and rescale fields {@link TrainingImageSpec} shares with {@link Preprocessing}. */
const RESIZE_FIELDS = ['resizeMode', 'resizeLonger', 'resizeWidth', 'resizeHeight', 'resample', 'cropRounding', 'rescale'] as const;

/**
 * How the trainer turns an image into input of a model whose input shape is `shape` (batch first, e.g. a
 * tfjs model's `inputs[0].shape`): size and channels from `image` (the config's `data.image`) or else
 * from that NHWC shape (undefined when neither gives them); resize of the shorter side to
 * `image.resizeShorter` (default max(height, width), i.e. no crop margin) or as `image.resizeMode`
 * says, centre crop, mean 0 and std 1 unless given, layout NHWC. The exporter writes the same into the
 * ONNX metadata. Errors: E_ARG when a size contradicts the model's input, and for an invalid field
 * (validatePreprocessing, named `data.image`).
 */
export function trainingImagePreprocessing(image: TrainingImageSpec | undefined, shape: readonly (number | null)[]): Preprocessing | undefined {
  const fields = ['height', 'width', 'channels'] as const;
  const fromShape = (i: number): number | undefined => (shape.length === 4 && typeof shape[i + 1] === 'number' ? (shape[i + 1] as number) : undefined);
  // A model on image maps must take exactly these images: anything else trains on scrambled pixels.
  fields.forEach((field, i) => {
    const d = fromShape(i);
    const given = image?.[field];
    if (d !== undefined && given !== undefined && d !== given) {
      throw new DmlError('E_ARG', `data.image.${field}: expected ${d}, as the model's input [${shape.map((x) => x ?? 'batch').join(', ')}] (height, width, channels) says, but received ${given}; make data.image and the model's input shape agree`);
    }
  });
  const [height, width, channels] = fields.map((field, i) => image?.[field] ?? fromShape(i));
  if (height === undefined || width === undefined || channels === undefined) return undefined;
  if (channels !== 1 && channels !== 3) throw new DmlError('E_ARG', `data.image.channels: expected 1 or 3 but the model takes ${channels}`);
  const preprocessing: Preprocessing = {
    height,
    width,
    channels,
    resizeShorter: image?.resizeShorter ?? Math.max(height, width),
    layout: 'NHWC',
    mean: image?.mean ?? new Array<number>(channels).fill(0),
    std: image?.std ?? new Array<number>(channels).fill(1),
    ...definedFields(Object.fromEntries(RESIZE_FIELDS.map((key) => [key, image?.[key]]))),
  };
  validatePreprocessing(preprocessing, 'data.image');
  return preprocessing;
}

/**
 * Decodes `items` with the eval transform of `preprocessing` (forced to NHWC) into memory.
 * `what` names the set in messages (e.g. "training set").
 */
export async function preloadImages(
  items: readonly ManifestItem[],
  preprocessing: Preprocessing,
  what: string,
  options: { maxBytes?: number; onProgress?: (done: number, total: number) => void; signal?: AbortSignal } = {},
): Promise<TrainingData> {
  if (items.length === 0) throw new DmlError('E_EMPTY', `The ${what} is empty`);
  const pre: Preprocessing = { ...preprocessing, layout: 'NHWC' };
  const per = pre.height * pre.width * pre.channels;
  const bytes = items.length * per * 4;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_PRELOAD_BYTES;
  if (bytes > maxBytes) {
    throw new DmlError(
      'E_ARG',
      `The ${what} needs ${(bytes / 2 ** 30).toFixed(1)} GiB as float32 images (${items.length} x ${pre.height}x${pre.width}x${pre.channels}), more than the ${(maxBytes / 2 ** 30).toFixed(1)} GiB limit; train a head on backbone features instead (data.features)`,
    );
  }
  const inputs = new Float32Array(items.length * per);
  const chunk = 512;
  for (let start = 0; start < items.length; start += chunk) {
    const slice = items.slice(start, start + chunk);
    const batch = await loadImageBatch(
      slice.map((it) => it.source),
      pre,
      options.signal !== undefined ? { signal: options.signal } : {},
    );
    inputs.set(batch.data, start * per);
    options.onProgress?.(Math.min(start + chunk, items.length), items.length);
  }
  const { codes, names } = encodeTrainingLabels(items.map((it) => it.label));
  return {
    inputs,
    inputShape: [pre.height, pre.width, pre.channels],
    count: items.length,
    labels: codes,
    labelNames: names,
    ids: items.map((it) => it.id),
    augmentedViews: [],
  };
}

/**
 * Training data from backbone features: `views[0]` (the plain view) becomes `inputs`, the other views
 * (same rows, same order, see models/backbone-features.ts) `augmentedViews`.
 */
export function featureTrainingData(views: readonly EmbeddingSet[], what: string): TrainingData {
  const plain = views[0];
  if (plain === undefined || plain.count === 0) throw new DmlError('E_EMPTY', `The ${what} has no features`);
  const { codes, names } = encodeTrainingLabels(plain.labels);
  return {
    inputs: plain.vectors,
    inputShape: [plain.dim],
    count: plain.count,
    labels: codes,
    labelNames: names,
    ids: plain.ids,
    augmentedViews: views.slice(1).map((v) => v.vectors),
  };
}

/**
 * `data` with every row's label replaced by `groupOf.get(label)` (the coarse training labels of
 * `data.trainLabelGroups`, see label-groups.ts), re-encoded as {@link encodeTrainingLabels} does (codes
 * in sorted group-name order). Inputs and ids are shared, not copied. A label without a group is an
 * E_ARG error (resolveLabelGroups rules that out before loading).
 */
export function relabelTrainingData(data: TrainingData, groupOf: ReadonlyMap<string, string>): TrainingData {
  const names = Array.from(data.labels, (code) => {
    const fine = data.labelNames[code] as string;
    const group = groupOf.get(fine);
    if (group === undefined) throw new DmlError('E_ARG', `data.trainLabelGroups: the training label "${fine}" is in no group`);
    return group;
  });
  const { codes, names: labelNames } = encodeTrainingLabels(names);
  return { ...data, labels: codes, labelNames };
}

/** `data.image` ({@link TrainingImageSpec}); {@link trainingImagePreprocessing} checks the values together. */
export const imageSpecSchema = z
  .object({
    height: positiveIntegerField.optional(),
    width: positiveIntegerField.optional(),
    channels: z.union([z.literal(1), z.literal(3)]).optional(),
    resizeShorter: positiveIntegerField.optional(),
    mean: z.array(z.number()).optional(),
    std: z.array(z.number()).optional(),
    resizeMode: z.enum(RESIZE_MODES).optional(),
    resizeLonger: positiveIntegerField.optional(),
    resizeWidth: positiveIntegerField.optional(),
    resizeHeight: positiveIntegerField.optional(),
    resample: z.enum(RESAMPLE_FILTERS).optional(),
    cropRounding: z.enum(['round', 'floor']).optional(),
    rescale: z.number().positive().optional(),
  })
  .strict();
