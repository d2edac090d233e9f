/**
 * @file Export orchestration, shared by `dml export` and the API: a trained TensorFlow.js embedder
 * (optionally on top of a frozen ONNX backbone) -> one ONNX file that maps images to L2-normalised
 * embeddings and says how to feed it.
 *
 * {@link exportEmbedder} converts (lib/engine/tfjs/tfjs-to-onnx.ts), composes with a backbone when there is one
 * (compose.ts), writes the `dml.*` metadata the evaluator reads back (lib/onnx/dml-metadata.ts), and
 * checks parity (parity.ts) before returning the bytes: a model whose onnxruntime output differs from
 * the reference by more than 1e-4 is an error and never reaches the disk. {@link exportCheckpoint}
 * reads a training run (or one of its checkpoints) and writes the file atomically.
 *
 * Which model is which: a model with an image input (rank 4, NHWC) exports as it is; a rank-2 model
 * becomes an image model when the run trained it on flattened pixels (`data.image`, an `mlp` on
 * images), and a head on backbone features when a backbone is named (`--backbone`, else the run's
 * `data.features.backbone`). Preprocessing metadata repeats exactly what training used: the run's
 * `data.image` (resize shorter side, default max(height, width); centre crop; mean 0 and std 1 per
 * channel unless given) with the export's layout, or for a composition the backbone's own
 * preprocessing, with which the features were computed.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { OnnxEmbedder } from '../embed/embedder.js';
import { DmlError, invalidParameterError } from '../errors.js';
import type { Preprocessing, TensorLayout } from '../image/preprocessing.js';
import { decodeModel, describeValueInfo, encodeModel, int64Value, node, ONNX_IR_VERSION, tensorValueInfo, type Dim, type ValueInfoProto } from '../onnx/builder.js';
import { DML_METADATA_KEYS } from '../onnx/dml-metadata.js';
import { collectVersions } from '../util/versions.js';
import { loadCheckpoint, loadOnnxCheckpoint } from '../train/checkpoint-io.js';
import { imageSpecSchema, trainingImagePreprocessing } from '../train/training-data.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { definedFields } from '../util/defined-fields.js';
import { canonicalJson, sha256 } from '../util/hash.js';
import { Rng } from '../util/rng.js';
import { composeBackboneAndHead } from './compose.js';
import { permuteArray } from '../util/permute-array.js';
import { assertParity, compareOutputs, randomImages, runOnnxModel, type ParityReport } from './parity.js';
import { convertLayersModel } from '../engine/tfjs/tfjs-to-onnx.js';
import { checkPositiveInteger } from '../util/check.js';
import { readRegular, readRegularFile } from '../util/regular-file.js';

/** Options of {@link exportEmbedder}. */
export interface EmbedderExportOptions {
  /**
   * Preprocessing of the training images (its `layout` is replaced by the export's). Required for
   * image models and models on flattened pixels; ignored with a backbone, whose own preprocessing is used.
   */
  preprocessing?: Preprocessing;
  /** Path of a frozen ONNX backbone whose features the model (a head) was trained on. */
  backbone?: string;
  /**
   * Preprocessing fields that override the backbone's own (metadata, input shape, defaults), as the
   * trainer's `data.image` does for `data.features`.
   */
  backbonePreprocessing?: Partial<Preprocessing>;
  /** Layout of the image input of a model exported without a backbone. Default NCHW. */
  layout?: TensorLayout;
  /** SHA-256 of the training configuration, recorded in the metadata. */
  trainingConfigHash?: string;
  /** Random inputs of the parity check (a backbone with a fixed batch size uses its own). Default 8. */
  parityInputs?: number;
  /** Seed of the parity inputs. Default 0. */
  seed?: number;
  /** The model's `doc_string`. */
  description?: string;
}

/** An exported model, not yet written. */
export interface ExportedEmbedder {
  bytes: Uint8Array;
  inputName: string;
  /** ONNX dims of the input; the batch axis is `batch` unless a backbone fixes it. */
  inputDims: Dim[];
  outputName: string;
  embeddingDim: number;
  /** Preprocessing written into the metadata. */
  preprocessing: Preprocessing;
  /** The `metadata_props` written. */
  metadata: Record<string, string>;
  parity: ParityReport;
  /** TensorFlow.js layer calls converted. */
  layerCount: number;
  /** The backbone composed in, if any. */
  backbone?: { path: string; sha256: string };
}

/** Options of {@link exportCheckpoint}. */
export interface CheckpointExportOptions {
  /** The ONNX file to write. */
  out: string;
  /** Backbone path; default the run config's `data.features.backbone`, if any. */
  backbone?: string;
  /** Image input layout (models without a backbone). Default NCHW. */
  layout?: TensorLayout;
  /** Progress lines. */
  log?: (line: string) => void;
}

/** What {@link exportCheckpoint} wrote. */
export interface CheckpointExport extends ExportedEmbedder {
  out: string;
  /** The checkpoint folder read. */
  checkpoint: string;
}

const DEFAULT_PARITY_INPUTS = 8;

function embeddingDimOf(dims: readonly Dim[], what: string): number {
  const dim = dims[1];
  if (dims.length !== 2 || typeof dim !== 'number') {
    throw new DmlError('E_MODEL', `${what}: the output has shape [${dims.join(', ')}]; expected embeddings [batch, D] with a fixed D`);
  }
  return dim;
}

function metadataOf(preprocessing: Preprocessing, embeddingDim: number, trainingConfigHash: string | undefined): Record<string, string> {
  // The resize, crop and rescale fields too (a fine-tuned Hub backbone's bicubic resize, floor-rounded crop, ...).
  const { height, width, resizeShorter, channels, layout, mean, std, ...resize } = preprocessing;
  return {
    [DML_METADATA_KEYS.preprocessing]: JSON.stringify({ height, width, resizeShorter, channels, layout, mean, std, ...resize }),
    [DML_METADATA_KEYS.embeddingDim]: String(embeddingDim),
    [DML_METADATA_KEYS.distance]: 'cosine',
    ...(trainingConfigHash !== undefined ? { [DML_METADATA_KEYS.trainingConfigHash]: trainingConfigHash } : {}),
    [DML_METADATA_KEYS.version]: collectVersions()['dmlkit'] ?? 'unknown',
  };
}

/** `model`'s output on `data` (shape `shape`), as a flat array. */
function predict(model: tf.LayersModel, data: Float32Array, shape: number[]): Float32Array {
  return tf.tidy(() => Float32Array.from((model.predict(tf.tensor(data, shape)) as tf.Tensor).dataSync() as Float32Array));
}

/** Export of a model with its own image input (or flattened-pixel input). */
async function exportImageModel(model: tf.LayersModel, options: EmbedderExportOptions, rows: number): Promise<ExportedEmbedder> {
  const shape = model.inputs[0]?.shape ?? [];
  const pre = options.preprocessing;
  if (pre === undefined) {
    const what = shape.length === 4 ? 'an image model' : `a model on feature vectors [${shape.join(', ')}]`;
    throw invalidParameterError('preprocessing', `the training preprocessing (or a backbone) to export ${what}`, pre);
  }
  const layout = options.layout ?? 'NCHW';
  if (shape.length === 4) {
    const declared = { height: shape[1], width: shape[2], channels: shape[3] };
    for (const key of ['height', 'width', 'channels'] as const) {
      const d = declared[key];
      if (d !== null && d !== undefined && d !== pre[key]) {
        throw invalidParameterError(`preprocessing.${key}`, `${d} (the model's input is [${shape.join(', ')}])`, pre[key]);
      }
    }
  }
  const converted = convertLayersModel(model, { layout, ...(shape.length === 4 ? {} : { flatImage: pre }) });
  const embeddingDim = embeddingDimOf(converted.outputDims, model.name);
  const preprocessing: Preprocessing = { ...pre, layout };
  const metadata = metadataOf(preprocessing, embeddingDim, options.trainingConfigHash);
  const bytes = encodeModel({
    graphName: model.name,
    ...converted,
    metadata,
    producerVersion: metadata[DML_METADATA_KEYS.version] as string,
    docString: options.description ?? `${model.name}, exported from TensorFlow.js by dmlkit`,
  });

  const { height, width, channels } = pre;
  const images = randomImages(new Rng(options.seed ?? 0), rows, pre, pre.mean, pre.std);
  const expected = predict(model, images, shape.length === 4 ? [rows, height, width, channels] : [rows, height * width * channels]);
  const onnxInput =
    layout === 'NCHW'
      ? { data: permuteArray(images, [rows, height, width, channels], [0, 3, 1, 2]), dims: [rows, channels, height, width] }
      : { data: images, dims: [rows, height, width, channels] };
  const actual = await runOnnxModel(bytes, { name: converted.inputName, ...onnxInput }, converted.outputName);
  const parity = compareOutputs(actual, expected, rows);
  assertParity(parity, model.name);
  return {
    bytes,
    inputName: converted.inputName,
    inputDims: converted.inputDims,
    outputName: converted.outputName,
    embeddingDim,
    preprocessing,
    metadata,
    parity,
    layerCount: converted.layerCount,
  };
}

/** Export of a head on `backbone`'s features as one image -> embedding model. */
async function exportComposed(model: tf.LayersModel, backbone: string, options: EmbedderExportOptions, rows: number): Promise<ExportedEmbedder> {
  const shape = model.inputs[0]?.shape ?? [];
  if (shape.length !== 2 || typeof shape[1] !== 'number') {
    throw new DmlError('E_MODEL', `${model.name} takes [${shape.join(', ')}]; only a head on feature vectors [batch, D] can be composed with backbone ${backbone}`);
  }
  const backboneBytes = await readRegularFile(backbone, 'backbone');
  const embedder = await OnnxEmbedder.open(backbone, {
    device: 'cpu',
    batchSize: rows,
    ...(options.backbonePreprocessing !== undefined ? { preprocessing: options.backbonePreprocessing } : {}),
  });
  try {
    const head = convertLayersModel(model, { inputName: 'features' });
    const composed = composeBackboneAndHead({ backbone: decodeModel(backboneBytes, backbone), backboneName: backbone, backboneOutput: embedder.signature.outputName, head });
    const embeddingDim = embeddingDimOf(head.outputDims, model.name);
    const preprocessing = embedder.preprocessing;
    const metadata = metadataOf(preprocessing, embeddingDim, options.trainingConfigHash);
    const bytes = encodeModel({
      graphName: `${model.name}_on_${path.basename(backbone, '.onnx')}`,
      ...composed,
      metadata,
      producerVersion: metadata[DML_METADATA_KEYS.version] as string,
      docString: options.description ?? `${model.name} on the features of ${path.basename(backbone)} (L2-normalised), composed by dmlkit`,
    });

    // Reference: the trainer's pipeline, i.e. the backbone in onnxruntime, normalised rows, the head in tfjs.
    const n = embedder.signature.fixedBatch ?? rows;
    const { height, width, channels, layout } = preprocessing;
    const nhwc = randomImages(new Rng(options.seed ?? 0), n, preprocessing, preprocessing.mean, preprocessing.std);
    const batch = layout === 'NCHW' ? permuteArray(nhwc, [n, height, width, channels], [0, 3, 1, 2]) : nhwc;
    const features = await embedder.embedTensor(batch, n);
    const featureDim = features.length / n;
    if (featureDim !== shape[1]) {
      throw new DmlError('E_MODEL', `Cannot compose backbone ${backbone} with the head: the backbone computes ${featureDim} features but the head takes ${shape[1]}`);
    }
    const expected = predict(model, features, [n, featureDim]);
    const dims = layout === 'NCHW' ? [n, channels, height, width] : [n, height, width, channels];
    const actual = await runOnnxModel(bytes, { name: composed.inputName, data: batch, dims }, composed.outputName);
    const parity = compareOutputs(actual, expected, n);
    assertParity(parity, `${model.name} on ${backbone}`);
    return {
      bytes,
      inputName: composed.inputName,
      inputDims: composed.inputDims,
      outputName: composed.outputName,
      embeddingDim,
      preprocessing,
      metadata,
      parity,
      layerCount: head.layerCount,
      backbone: { path: backbone, sha256: sha256(backboneBytes) },
    };
  } finally {
    await embedder.release();
  }
}

/**
 * Exports `model` (a TensorFlow.js embedder ending in L2 normalisation, or a head on backbone
 * features with `options.backbone`) to ONNX bytes with dmlkit metadata, after checking parity.
 * Errors: E_ARG for bad options; E_MODEL for a layer or configuration without ONNX form, a backbone
 * that does not fit the head, or failed parity; E_NOT_FOUND / E_IO for an unreadable backbone.
 */
export async function exportEmbedder(model: tf.LayersModel, options: EmbedderExportOptions = {}): Promise<ExportedEmbedder> {
  if (!(model instanceof tf.LayersModel)) throw invalidParameterError('model', 'a tf.LayersModel', model);
  const rows = options.parityInputs ?? DEFAULT_PARITY_INPUTS;
  checkPositiveInteger('parityInputs', rows);
  if (options.backbone !== undefined) return exportComposed(model, options.backbone, options, rows);
  return exportImageModel(model, options, rows);
}

/** The parts of a run's config.json that export reads (the trainer writes the resolved config there). */
const runConfigSchema = z
  .object({
    data: z
      .object({
        image: imageSpecSchema.optional(),
        features: z.object({ backbone: z.string().min(1) }).loose().optional(),
      })
      .loose(),
  })
  .loose();

type RunConfig = z.output<typeof runConfigSchema>;

async function isFile(file: string): Promise<boolean> {
  return stat(file).then(
    (s) => s.isFile(),
    () => false,
  );
}

/**
 * Export of a checkpoint holding an ONNX network (`model.kind: "onnx"`, trained by the graph trainer):
 * the trained graph itself with dmlkit's metadata. Its image input is NCHW by default, as the backbone
 * it was fine-tuned from takes images (a Transpose to the NHWC input it was trained with goes in front,
 * which onnxruntime folds into the network's own), or NHWC as trained with `layout: 'NHWC'`. Parity: the
 * written file against the checkpoint's graph on random images.
 */
async function exportOnnxCheckpoint(checkpoint: string, config: RunConfig, hash: string, options: CheckpointExportOptions): Promise<CheckpointExport> {
  if (options.backbone !== undefined) throw invalidParameterError('backbone', 'none: an ONNX network run (model.kind "onnx") has no separate backbone', options.backbone);
  const layout = options.layout ?? 'NCHW';
  if (layout !== 'NCHW' && layout !== 'NHWC') throw invalidParameterError('layout', "'NCHW' or 'NHWC'", layout);
  const loaded = await loadOnnxCheckpoint(checkpoint);
  const state = loaded.state as { configHash?: unknown } | undefined;
  // The trainer records the complete data.image (the backbone's preprocessing filled in) in config.json.
  const trained = trainingImagePreprocessing(config.data.image, []);
  if (!trained) throw new DmlError('E_MODEL', `Cannot export ${checkpoint}: its run config has no data.image with height, width and channels`);
  const preprocessing: Preprocessing = { ...trained, layout };
  const model = decodeModel(loaded.onnx, checkpoint);
  const graph = model.graph ?? {};
  const input = graph.input?.[0];
  const output = graph.output?.[0];
  const inputName = input?.name ?? 'input';
  const outputDims = output ? (describeValueInfo(output).dims ?? []) : [];
  const embeddingDim = embeddingDimOf(outputDims, checkpoint);
  const metadata = metadataOf(preprocessing, embeddingDim, typeof state?.configHash === 'string' ? state.configHash : hash);
  options.log?.(`exporting ${checkpoint} (an ONNX network trained by the graph trainer), ${layout} input`);
  const nhwcDims = input ? (describeValueInfo(input).dims ?? []) : [];
  // NCHW: the graph input becomes [batch, C, H, W], transposed to the trained network's NHWC input (renamed).
  const trainedInput = `${inputName}/nhwc`;
  const nodes =
    layout === 'NCHW'
      ? [node('Transpose', [inputName], [trainedInput], { perm: { ints: [0, 2, 3, 1] } }), ...(graph.node ?? []).map((n) => ({ ...n, input: (n.input ?? []).map((v) => (v === inputName ? trainedInput : v)) }))]
      : (graph.node ?? []);
  const inputs = layout === 'NCHW' ? [tensorValueInfo(inputName, 'float32', [nhwcDims[0] ?? 'batch', nhwcDims[3] ?? preprocessing.channels, nhwcDims[1] ?? preprocessing.height, nhwcDims[2] ?? preprocessing.width]), ...(graph.input ?? []).slice(1)] : (graph.input ?? []);
  const bytes = encodeModel({
    graphName: graph.name ?? 'dmlkit',
    inputs,
    outputs: graph.output ?? [],
    nodes,
    initializers: graph.initializer ?? [],
    opsetImports: (model.opsetImport ?? []).map((o) => ({ domain: o.domain ?? '', version: int64Value(o.version) ?? 0 })),
    irVersion: int64Value(model.irVersion) ?? ONNX_IR_VERSION,
    metadata,
    producerVersion: metadata[DML_METADATA_KEYS.version] as string,
    docString: `an ONNX network trained by dmlkit's graph trainer, from ${path.resolve(checkpoint)}`,
  });
  const rows = DEFAULT_PARITY_INPUTS;
  const { height, width, channels } = preprocessing;
  const images = randomImages(new Rng(0), rows, preprocessing, preprocessing.mean, preprocessing.std);
  const nhwc = { name: inputName, data: images, dims: [rows, height, width, channels] };
  const feed = layout === 'NCHW' ? { name: inputName, data: permuteArray(images, [rows, height, width, channels], [0, 3, 1, 2]), dims: [rows, channels, height, width] } : nhwc;
  const parity = compareOutputs(await runOnnxModel(bytes, feed, output?.name ?? 'embedding'), await runOnnxModel(loaded.onnx, nhwc, output?.name ?? 'embedding'), rows);
  assertParity(parity, checkpoint);
  await writeFileAtomic(options.out, bytes);
  const inputDims = describeValueInfo(inputs[0] as ValueInfoProto).dims ?? [];
  return { bytes, inputName, inputDims, outputName: output?.name ?? 'embedding', embeddingDim, preprocessing, metadata, parity, layerCount: 0, out: options.out, checkpoint };
}

/** The checkpoint folder and the run config of `source` (a run folder or a checkpoint folder). */
async function locateRun(source: string): Promise<{ checkpoint: string; configPath: string }> {
  if (await isFile(path.join(source, 'checkpoint.json'))) {
    const parent = path.dirname(path.resolve(source));
    const configPath = path.join(path.basename(parent) === 'checkpoints' ? path.dirname(parent) : parent, 'config.json');
    return { checkpoint: source, configPath };
  }
  const checkpoint = path.join(source, 'checkpoints', 'last');
  if (await isFile(path.join(checkpoint, 'checkpoint.json'))) return { checkpoint, configPath: path.join(source, 'config.json') };
  throw new DmlError('E_NOT_FOUND', `No checkpoint at ${source}: expected a training run folder (with checkpoints/last) or a checkpoint folder (with checkpoint.json)`);
}

async function readRunConfig(configPath: string, checkpoint: string): Promise<{ config: RunConfig; hash: string }> {
  let text: string;
  try {
    text = (await readRegular(configPath, 'run configuration')).toString('utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (err instanceof DmlError) throw err;
    if (e.code === 'ENOENT') {
      throw new DmlError('E_NOT_FOUND', `No run configuration for checkpoint ${checkpoint}: expected ${configPath} (dml train writes it beside checkpoints/)`, { cause: err });
    }
    throw new DmlError('E_IO', `Cannot read ${configPath}: ${e.message}`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new DmlError('E_MODEL', `${configPath} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  const parsed = runConfigSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    throw new DmlError('E_MODEL', `${configPath}: ${issue.path.join('.') || '(top level)'}: ${issue.message}`);
  }
  return { config: parsed.data, hash: sha256(canonicalJson(json)) };
}

/**
 * Exports the model of a training run (`source`: the run's `--out` folder, or a checkpoint folder
 * inside it) to `options.out`, written atomically: nothing is written when any step fails.
 * Errors: E_NOT_FOUND for a missing checkpoint, run config or backbone; E_ARG when `out` is a folder;
 * E_IO when `out` cannot be written; and those of {@link exportEmbedder}.
 */
export async function exportCheckpoint(source: string, options: CheckpointExportOptions): Promise<CheckpointExport> {
  if (typeof source !== 'string' || source.length === 0) throw invalidParameterError('checkpoint', 'a run or checkpoint folder', source);
  if (typeof options.out !== 'string' || options.out.length === 0) throw invalidParameterError('out', 'an output file path', options.out);
  if ((await stat(options.out).then((s) => s.isDirectory(), () => false)) === true) {
    throw invalidParameterError('out', 'a file path, not a folder', options.out);
  }
  const log = options.log ?? (() => undefined);
  const { checkpoint, configPath } = await locateRun(source);
  const { config, hash } = await readRunConfig(configPath, checkpoint);
  if (await isFile(path.join(checkpoint, 'model.onnx'))) return exportOnnxCheckpoint(checkpoint, config, hash, options);
  const backbone = options.backbone ?? config.data.features?.backbone;
  const loaded = await loadCheckpoint(checkpoint);
  loaded.optimizer?.dispose();
  const model = loaded.model;
  try {
    const state = loaded.state as { configHash?: unknown } | undefined;
    const image = config.data.image;
    const preprocessing = backbone === undefined ? trainingImagePreprocessing(image, model.inputs[0]?.shape ?? []) : undefined;
    log(`exporting ${checkpoint}${backbone !== undefined ? ` on backbone ${backbone}` : ''}`);
    const exported = await exportEmbedder(model, {
      ...(preprocessing !== undefined ? { preprocessing } : {}),
      ...(backbone !== undefined ? { backbone } : {}),
      ...(backbone !== undefined && image !== undefined ? { backbonePreprocessing: definedFields(image) } : {}),
      ...(options.layout !== undefined ? { layout: options.layout } : {}),
      trainingConfigHash: typeof state?.configHash === 'string' ? state.configHash : hash,
      description: `${model.name} from ${path.resolve(checkpoint)}, exported by dmlkit`,
    });
    const { parity } = exported;
    log(`parity over ${parity.rows} inputs: max abs difference ${parity.maxAbsDiff.toExponential(2)}, min cosine ${parity.minCosine.toFixed(7)}`);
    await writeFileAtomic(options.out, exported.bytes);
    return { ...exported, out: options.out, checkpoint };
  } finally {
    model.dispose();
  }
}
