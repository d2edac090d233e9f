/**
 * @file The short way in: {@link evaluate} scores an ONNX embedder on a dataset with the CLI's
 * defaults and returns report.json's object, and {@link embedImages} embeds image files or encoded
 * image bytes. Both open and release their own session; for many calls, use {@link OnnxEmbedder},
 * {@link evaluateModel} and {@link evaluateEmbeddings} directly.
 *
 *     import { evaluate } from 'dmlkit';
 *     const report = await evaluate({ model: 'model.onnx', data: 'folder:photos/by-class' });
 *     console.log(report.metrics.recall['1'], report.metrics.mapAtR);
 *
 * {@link evaluateArrays} scores embeddings held in plain arrays (PyTorch Metric Learning style).
 */
import path from 'node:path';
import { OnnxEmbedder, type EmbedderOptions } from './embed/embedder.js';
import type { TokenPooling } from './embed/model-signature.js';
import type { EmbeddingSet } from './embed/embedding-set.js';
import { DmlError, invalidParameterError } from './errors.js';
import { DEFAULT_CLUSTER_COUNTS, type ClusterCountSpec } from './eval/cluster-counts.js';
import { evaluateModelFile, openEvaluationDataset } from './eval/evaluate-model.js';
import { evaluateEmbeddings, type EmbeddingEvaluation } from './eval/evaluate-embeddings.js';
import { DEFAULT_INDEX, type ClusterSet, type IndexParameters } from './eval/evaluation.js';
import type { Preprocessing } from './image/preprocessing.js';
import { readImageFile } from './image/decode.js';
import { preprocessImageBytes } from './image/image-bytes.js';
import type { KMeansInit } from './metrics/kmeans-options.js';
import { DEFAULT_DEVICE, type DeviceChoice, type NormalizationPlace } from './onnx/devices.js';
import { buildReport, type SingleRunReport } from './report/report.js';
import { concatFloat32 } from './util/concat.js';
import { normalizeRowsInPlace } from './embed/normalize.js';
import { DEFAULT_EMBED_BATCH_SIZE } from './util/defaults.js';

/** Options of {@link evaluate}; everything but `model` and `data` has the CLI's default. */
export interface EvaluateOptions {
  /** Path of the ONNX embedder. */
  model: string;
  /** Dataset spec as `dml eval --data` takes it (`folder:path`, `cub:path`, `fashion-mnist:path`, ...). */
  data: string;
  /** Recall@K values. Default: the dataset protocol's (1, 2, 4, 8 for a folder). */
  ks?: number[];
  /** Cluster counts of the NMI curve. Default 1x, 2x, 5x, 10x, 30x. */
  clusterCounts?: ClusterCountSpec[];
  /** Which embeddings are clustered. Default `union`. */
  clusterSet?: ClusterSet;
  /** Exact search (default, 512 queries per chunk) or HNSW. */
  index?: IndexParameters;
  /** k-means settings. Default seed 0, k-means++, to convergence. */
  kmeans?: { seed?: number; maxIterations?: number; tolerance?: number; restarts?: number; init?: KMeansInit };
  /** Labels held out as training classes (a class-disjoint split): the others are evaluated. */
  trainClasses?: string[];
  /** Execution provider. Default `auto`. */
  device?: DeviceChoice;
  /** Where batches are normalised (as `dml eval --normalization`; see {@link NormalizationPlace}). Default `host`. */
  normalization?: NormalizationPlace;
  /** Images per inference call. Default 32. */
  batchSize?: number;
  /** Image decode processes (0 = in this process). Default: one per core for 256 images or more. */
  workers?: number;
  /** Folder of the embedding cache. Default: no cache. */
  cacheDir?: string;
  /** Leave undecodable images out (listed in the report) instead of failing. Default false. */
  skipBadImages?: boolean;
  /** Also write the embeddings to `<saveEmbeddings>.npy` and `.json` (as `dml eval --save-embeddings`, without `.npy`). */
  saveEmbeddings?: string;
  /**
   * Preprocessing fields that override the model's metadata (as `dml eval --size`, `--resize`,
   * `--channels`, `--layout`, `--mean`, `--std`). Default: none, the model's own.
   */
  preprocessing?: Partial<Preprocessing>;
  /** onnxruntime threads for inference, search and k-means. Default: onnxruntime's. */
  threads?: number;
  /** Retrieval examples: queries per selection (random, worst). Default {@link DEFAULT_EXAMPLES}. */
  examples?: number;
  /**
   * Progress per stage: `embed` (images), `search`, `hnsw build`, `hnsw search`, `exact reference`,
   * `k-means`; `done` of `total` units of that stage.
   */
  onProgress?: (stage: string, done: number, total: number) => void;
  /** Cancels the evaluation between batches and chunks: the promise rejects with DmlError `E_CANCELLED`. */
  signal?: AbortSignal;
  /** The output holding the embeddings (`--output-name`). Default: as {@link EmbedderOptions.outputName}. */
  outputName?: string;
  /** Pooling of a token output [N, T, D] (`--pooling`). Default none. */
  pooling?: TokenPooling;
  /** A `preprocessor_config.json` to read (`--preprocessor-config`), or false for none. Default: the one beside the model or in its parent folder. */
  preprocessorConfig?: string | false;
}

/**
 * Evaluates `options.model` on `options.data` as `dml eval` does and returns what it would write to
 * report.json (metrics, parameters, dataset, model, versions, definitions).
 *
 * @example
 * ```ts
 * import { evaluate } from 'dmlkit';
 * const controller = new AbortController();
 * const report = await evaluate({
 *   model: 'model.onnx',
 *   data: 'folder:photos/by-class',
 *   preprocessing: { resizeShorter: 256, height: 224, width: 224 },
 *   onProgress: (stage, done, total) => console.error(stage, done, total),
 *   signal: controller.signal,
 * });
 * console.log(report.metrics.recall['1'], report.metrics.mapAtR);
 * ```
 */
export async function evaluate(options: EvaluateOptions): Promise<SingleRunReport> {
  if (typeof options !== 'object' || options === null) throw invalidParameterError('options', 'an object with model and data', options);
  const { model, data } = options;
  if (typeof model !== 'string' || model === '') throw invalidParameterError('model', 'the path of an ONNX model', model);
  if (typeof data !== 'string' || data === '') throw invalidParameterError('data', 'a dataset spec such as folder:path/to/images', data);
  const { manifest, hash } = await openEvaluationDataset(data, options.trainClasses !== undefined ? { trainClasses: options.trainClasses } : {});
  if (options.signal?.aborted) throw new DmlError('E_CANCELLED', 'Evaluation cancelled before it started');
  const embedder = {
    device: options.device ?? DEFAULT_DEVICE,
    ...(options.normalization !== undefined ? { normalization: options.normalization } : {}),
    batchSize: options.batchSize ?? DEFAULT_EMBED_BATCH_SIZE,
    ...(options.preprocessing !== undefined ? { preprocessing: options.preprocessing } : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.outputName !== undefined ? { outputName: options.outputName } : {}),
    ...(options.pooling !== undefined ? { pooling: options.pooling } : {}),
    ...(options.preprocessorConfig !== undefined ? { preprocessorConfig: options.preprocessorConfig } : {}),
  };
  const run = await evaluateModelFile(model, embedder, manifest, {
    ks: options.ks ?? manifest.defaultK,
    clusterCounts: options.clusterCounts ?? [...DEFAULT_CLUSTER_COUNTS],
    clusterSet: options.clusterSet ?? 'union',
    index: options.index ?? DEFAULT_INDEX,
    kmeans: { seed: 0, ...options.kmeans },
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.examples !== undefined ? { examples: { count: options.examples } } : {}),
    ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {}),
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
    datasetSpec: data,
    manifestHash: hash,
    name: path.basename(model),
    ...(options.trainClasses !== undefined ? { trainClasses: options.trainClasses } : {}),
    ...(options.cacheDir !== undefined ? { cacheDir: options.cacheDir } : {}),
    ...(options.workers !== undefined ? { workers: options.workers } : {}),
    skipBadImages: options.skipBadImages ?? false,
    ...(options.saveEmbeddings !== undefined ? { saveEmbeddings: options.saveEmbeddings } : {}),
  });
  return buildReport([run], ['dmlkit.evaluate', model, data]);
}

/** Options of {@link evaluateArrays}; everything has `dml eval`'s default. */
export interface EvaluateArraysOptions {
  /** Gallery vectors (row-major, N x D, any norm); default: the queries are the gallery (each query left out of its own ranking). */
  gallery?: ArrayLike<number> | ReadonlyArray<ArrayLike<number>>;
  /** Labels of the gallery rows; required with `gallery`. */
  galleryLabels?: ReadonlyArray<string | number>;
  /** Recall@K values. Default 1, 2, 4, 8. */
  ks?: number[];
  /** Cluster counts of the NMI curve. Default 1x, 2x, 5x, 10x, 30x. */
  clusterCounts?: ClusterCountSpec[];
  /** k-means seed. Default 0. */
  seed?: number;
}

/** Rows of `vectors` as one L2-normalised Float32Array: a flat array of `count` rows, or an array of rows. */
function matrixOf(name: string, vectors: ArrayLike<number> | ReadonlyArray<ArrayLike<number>>, count: number): { vectors: Float32Array; dim: number } {
  const rows = vectors as ArrayLike<unknown>;
  if (rows === null || typeof rows !== 'object' || typeof rows.length !== 'number' || rows.length === 0) {
    throw invalidParameterError(name, 'a non-empty array of rows, or a flat row-major array', vectors);
  }
  let flat: Float32Array;
  if (typeof rows[0] === 'object' && rows[0] !== null) {
    const list = vectors as ReadonlyArray<ArrayLike<number>>;
    const dim = list[0]?.length ?? 0;
    list.forEach((row, i) => {
      if (row?.length !== dim) throw invalidParameterError(`${name}[${i}]`, `a row of ${dim} numbers, as ${name}[0]`, row);
    });
    if (list.length !== count) throw invalidParameterError(name, `${count} rows, one per label`, `${list.length} rows`);
    flat = new Float32Array(count * dim);
    list.forEach((row, i) => flat.set(Array.from(row), i * dim));
  } else {
    flat = Float32Array.from(vectors as ArrayLike<number>);
    if (flat.length % count !== 0) throw invalidParameterError(name, `a multiple of ${count} values (one row per label)`, `${flat.length} values`);
  }
  const dim = flat.length / count;
  if (dim === 0) throw invalidParameterError(name, 'rows of at least one value', vectors);
  normalizeRowsInPlace(flat, count, dim, name);
  return { vectors: flat, dim };
}

/**
 * Scores embeddings held in plain arrays, as PyTorch Metric Learning's `AccuracyCalculator` does:
 * `queryVectors` (rows, or a flat row-major array) with their `queryLabels`, against
 * `options.gallery` or, without one, against themselves (each query left out of its own ranking).
 * Rows are L2-normalised here. Returns the metrics, parameters and examples as
 * {@link evaluateEmbeddings} does; row i gets id `q<i>` (query) or `g<i>` (gallery).
 *
 * @example
 * ```ts
 * import { evaluateArrays } from 'dmlkit';
 * const { metrics } = await evaluateArrays([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]], [0, 0, 1, 1], { ks: [1] });
 * console.log(metrics.recall['1'], metrics.mapAtR); // 1 1
 * ```
 */
export async function evaluateArrays(
  queryVectors: ArrayLike<number> | ReadonlyArray<ArrayLike<number>>,
  queryLabels: ReadonlyArray<string | number>,
  options: EvaluateArraysOptions = {},
): Promise<EmbeddingEvaluation> {
  if (!Array.isArray(queryLabels) || queryLabels.length === 0) throw invalidParameterError('queryLabels', 'a non-empty array of labels (strings or numbers)', queryLabels);
  const query = matrixOf('queryVectors', queryVectors, queryLabels.length);
  const querySet: EmbeddingSet = { ...query, count: queryLabels.length, ids: queryLabels.map((_, i) => `q${i}`), labels: queryLabels.map(String) };
  let gallerySet: EmbeddingSet | null = null;
  if ((options.gallery === undefined) !== (options.galleryLabels === undefined)) {
    throw invalidParameterError('gallery/galleryLabels', 'both or neither', options.gallery === undefined ? 'galleryLabels only' : 'gallery only');
  }
  if (options.gallery !== undefined && options.galleryLabels !== undefined) {
    if (!Array.isArray(options.galleryLabels) || options.galleryLabels.length === 0) throw invalidParameterError('galleryLabels', 'a non-empty array of labels', options.galleryLabels);
    const gallery = matrixOf('gallery', options.gallery, options.galleryLabels.length);
    gallerySet = { ...gallery, count: options.galleryLabels.length, ids: options.galleryLabels.map((_, i) => `g${i}`), labels: options.galleryLabels.map(String) };
  }
  return evaluateEmbeddings(querySet, gallerySet, {
    ...(options.ks !== undefined ? { ks: options.ks } : {}),
    ...(options.clusterCounts !== undefined ? { clusterCounts: options.clusterCounts } : {}),
    kmeans: { seed: options.seed ?? 0 },
  });
}

/**
 * The L2-normalised embeddings of `images` (file paths, or encoded image bytes such as uploads) with
 * the model at `model`, in order, as an {@link EmbeddingSet} whose ids are the paths (or `#i` for the
 * i-th buffer) and whose labels are empty. Every image goes through the same decode and eval
 * transform as `dml eval`'s. Errors: the first image that cannot be read or decoded, naming it.
 */
export async function embedImages(model: string, images: ReadonlyArray<string | Uint8Array>, options: EmbedderOptions = {}): Promise<EmbeddingSet> {
  if (!Array.isArray(images) || images.length === 0) throw invalidParameterError('images', 'a non-empty array of file paths or Uint8Arrays', images);
  const ids = images.map((image, i) => {
    if (typeof image === 'string' && image !== '') return image;
    if (image instanceof Uint8Array) return `#${i}`;
    throw invalidParameterError(`images[${i}]`, 'a file path or a Uint8Array', image);
  });
  const embedder = await OnnxEmbedder.open(model, options);
  try {
    const p = embedder.preprocessing;
    const per = p.channels * p.height * p.width;
    const bytesOf = (image: string | Uint8Array): Promise<Uint8Array> => (typeof image === 'string' ? readImageFile(image) : Promise.resolve(image));
    const chunks: Float32Array[] = [];
    for (let start = 0; start < images.length; start += embedder.batchSize) {
      const slice = images.slice(start, start + embedder.batchSize);
      const inputs = await Promise.all(slice.map(async (image, j) => preprocessImageBytes(await bytesOf(image), p, { name: ids[start + j] as string })));
      const batch = new Float32Array(slice.length * per);
      inputs.forEach((input, j) => batch.set(input, j * per));
      chunks.push(await embedder.embedTensor(batch, slice.length, start));
    }
    return { vectors: concatFloat32(chunks), count: images.length, dim: embedder.embeddingDim ?? 0, ids, labels: ids.map(() => '') };
  } finally {
    await embedder.release();
  }
}
