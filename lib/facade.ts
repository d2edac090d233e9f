/**
 * @file The short way in: {@link evaluate} scores an ONNX embedder on a dataset with the CLI's
 * defaults and returns report.json's object, and {@link embedImages} embeds image files or encoded
 * image bytes. Both open and release their own session; for many calls, use {@link OnnxEmbedder},
 * {@link evaluateModel} and {@link evaluateEmbeddings} directly.
 *
 *     import { evaluate } from 'dmlkit';
 *     const report = await evaluate({ model: 'model.onnx', data: 'folder:photos/by-class' });
 *     console.log(report.metrics.recall['1'], report.metrics.mapAtR);
 */
import path from 'node:path';
import { applyClassSplit } from './data/class-split.js';
import { manifestHash, openDataset } from './data/open-dataset.js';
import { OnnxEmbedder, type EmbedderOptions } from './embed/embedder.js';
import type { TokenPooling } from './embed/model-signature.js';
import type { EmbeddingSet } from './embed/embedding-set.js';
import { invalidParameterError } from './errors.js';
import { DEFAULT_CLUSTER_COUNTS, type ClusterCountSpec } from './eval/cluster-counts.js';
import { evaluateModel } from './eval/evaluate-model.js';
import type { ClusterSet, IndexParameters } from './eval/evaluation.js';
import { readImageFile } from './image/decode.js';
import { preprocessImageBytes } from './image/image-bytes.js';
import type { KMeansInit } from './metrics/kmeans-options.js';
import type { DeviceChoice } from './onnx/devices.js';
import { buildReport, type SingleRunReport } from './report/report.js';
import { concatFloat32 } from './util/concat.js';

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
 */
export async function evaluate(options: EvaluateOptions): Promise<SingleRunReport> {
  if (typeof options !== 'object' || options === null) throw invalidParameterError('options', 'an object with model and data', options);
  const { model, data } = options;
  if (typeof model !== 'string' || model === '') throw invalidParameterError('model', 'the path of an ONNX model', model);
  if (typeof data !== 'string' || data === '') throw invalidParameterError('data', 'a dataset spec such as folder:path/to/images', data);
  let manifest = await openDataset(data);
  if (options.trainClasses !== undefined) manifest = applyClassSplit(manifest, options.trainClasses, 'trainClasses');
  const embedder = await OnnxEmbedder.open(model, {
    device: options.device ?? 'auto',
    batchSize: options.batchSize ?? 32,
    ...(options.outputName !== undefined ? { outputName: options.outputName } : {}),
    ...(options.pooling !== undefined ? { pooling: options.pooling } : {}),
    ...(options.preprocessorConfig !== undefined ? { preprocessorConfig: options.preprocessorConfig } : {}),
  });
  try {
    const run = await evaluateModel(embedder, manifest, {
      ks: options.ks ?? manifest.defaultK,
      clusterCounts: options.clusterCounts ?? [...DEFAULT_CLUSTER_COUNTS],
      clusterSet: options.clusterSet ?? 'union',
      index: options.index ?? { kind: 'exact', chunkSize: 512 },
      kmeans: { seed: 0, ...options.kmeans },
      datasetSpec: data,
      manifestHash: await manifestHash(manifest),
      name: path.basename(model),
      ...(options.trainClasses !== undefined ? { trainClasses: options.trainClasses } : {}),
      ...(options.cacheDir !== undefined ? { cacheDir: options.cacheDir } : {}),
      ...(options.workers !== undefined ? { workers: options.workers } : {}),
      skipBadImages: options.skipBadImages ?? false,
      ...(options.saveEmbeddings !== undefined ? { saveEmbeddings: options.saveEmbeddings } : {}),
    });
    return buildReport([run], ['dmlkit.evaluate', model, data]);
  } finally {
    await embedder.release();
  }
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
