/**
 * @file Model + dataset -> metrics: embeds the evaluation items of a manifest (queries and gallery,
 * each item once, through the embedding cache), splits them into the query and gallery sets and hands
 * them to {@link evaluateEmbeddings}. The pipeline from a dataset spec and a model file, shared by
 * `dml eval` and the façade's `evaluate`: {@link openEvaluationDataset}, then
 * {@link evaluateModelFile} per model.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { applyClassSplit } from '../data/class-split.js';
import type { Manifest, ManifestItem } from '../data/manifest.js';
import { manifestHash, openDataset, type OpenDatasetOptions } from '../data/open-dataset.js';
import { DmlError } from '../errors.js';
import { embeddingProvenance, embedItemsCached } from '../embed/cache.js';
import { saveEmbeddingSet } from '../embed/embedding-files.js';
import { OnnxEmbedder, type EmbedderOptions } from '../embed/embedder.js';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import type { DatasetInfo, ModelInfo, RunReport } from './run-report.js';
import { evaluateEmbeddings, type EvaluateEmbeddingsOptions } from './evaluate-embeddings.js';

/** Options of {@link evaluateModel}. */
export interface EvaluateModelOptions extends EvaluateEmbeddingsOptions {
  /** Dataset spec as the user gave it, for the report. */
  datasetSpec: string;
  manifestHash: string;
  trainClasses?: string[];
  /** Folder of the embedding cache; no caching when absent. */
  cacheDir?: string;
  skipBadImages?: boolean;
  limitInputPixels?: number;
  concurrency?: number;
  /** Image decode processes; 0 = decode in this process (default one per core; see {@link OnnxEmbedder.embedItems}). */
  workers?: number;
  /** Run name in tables (default: the model file name). */
  name: string;
  /**
   * Also write the embeddings of the evaluated items to `<saveEmbeddings>.npy` and `<saveEmbeddings>.json`
   * (see embed/embedding-files.ts; the JSON's provenance adds the dataset spec and each row's `roles`).
   */
  saveEmbeddings?: string;
}

/** A row's part in the protocol, as saved beside the embeddings. */
export type ItemRole = 'query' | 'gallery' | 'query+gallery';

/** Items that take part in the evaluation: queries and gallery items, in manifest order. */
export function evaluationItems(manifest: Manifest): ManifestItem[] {
  const items = manifest.items.filter((it) => it.isQuery || it.isGallery);
  if (items.length === 0) {
    throw new DmlError('E_EMPTY', `${manifest.root}: the ${manifest.layout} dataset has no query or gallery items to evaluate`);
  }
  return items;
}

/** The rows of `set` that `keep` keeps, as a new set (`set` itself when it keeps every row). */
export function subset(set: EmbeddingSet, keep: (row: number) => boolean): EmbeddingSet {
  const rows: number[] = [];
  for (let r = 0; r < set.count; r++) if (keep(r)) rows.push(r);
  if (rows.length === set.count) return set;
  const vectors = new Float32Array(rows.length * set.dim);
  rows.forEach((r, i) => vectors.set(set.vectors.subarray(r * set.dim, (r + 1) * set.dim), i * set.dim));
  return {
    vectors,
    count: rows.length,
    dim: set.dim,
    ids: rows.map((r) => set.ids[r] as string),
    labels: rows.map((r) => set.labels[r] as string),
  };
}

/** Describes an embedder for the report. */
export function modelInfo(embedder: OnnxEmbedder): ModelInfo {
  return {
    path: embedder.modelPath,
    sha256: embedder.modelSha256,
    ...(embedder.externalData.length > 0 ? { externalData: embedder.externalData.map((f) => ({ ...f })) } : {}),
    executionProvider: embedder.provider,
    normalization: embedder.normalization,
    providerAttempts: embedder.providerAttempts,
    inputName: embedder.signature.inputName,
    inputType: embedder.ioTypes.input,
    outputName: embedder.signature.outputName,
    outputType: embedder.ioTypes.output,
    ...(embedder.signature.pooling !== null ? { pooling: embedder.signature.pooling } : {}),
    embeddingDim: embedder.embeddingDim ?? 0,
    fixedBatch: embedder.signature.fixedBatch,
    preprocessing: embedder.preprocessing,
    preprocessingSources: embedder.signature.preprocessingSources as Record<string, string>,
    ...(embedder.preprocessorConfigPath !== undefined ? { preprocessorConfig: embedder.preprocessorConfigPath } : {}),
    metadataProps: embedder.metadataProps,
  };
}

/** The names of the labels that occur in `labels` (a report names only the classes it evaluates). */
function namesOfLabels(names: Record<string, string>, labels: readonly string[]): Record<string, string> {
  const present = new Set(labels);
  return Object.fromEntries(Object.entries(names).filter(([label]) => present.has(label)));
}

/** Bytes of the embedder's model file and its external data files (beside it, at their locations). */
async function modelFileBytes(embedder: OnnxEmbedder): Promise<number> {
  const files = [embedder.modelPath, ...embedder.externalData.map((f) => path.join(path.dirname(embedder.modelPath), f.location))];
  const sizes = await Promise.all(files.map(async (file) => (await stat(file)).size));
  return sizes.reduce((a, b) => a + b, 0);
}

/** Embeds and evaluates one model on one manifest. */
export async function evaluateModel(
  embedder: OnnxEmbedder,
  manifest: Manifest,
  options: EvaluateModelOptions,
): Promise<RunReport> {
  const items = evaluationItems(manifest);
  const start = performance.now();
  const embedded = await embedItemsCached(embedder, items, options.manifestHash, options.cacheDir, {
    skipBadImages: options.skipBadImages ?? false,
    ...(options.limitInputPixels !== undefined ? { limitInputPixels: options.limitInputPixels } : {}),
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
    ...(options.workers !== undefined ? { workers: options.workers } : {}),
    onProgress: (done, total) => options.onProgress?.('embed', done, total),
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
  });
  const embedSeconds = (performance.now() - start) / 1000;
  const roles = new Map(items.map((it) => [it.id, it]));
  const all = embedded.set;
  if (options.saveEmbeddings !== undefined) {
    const roleOf = (id: string): ItemRole => {
      const item = roles.get(id) as ManifestItem;
      return item.isQuery && item.isGallery ? 'query+gallery' : item.isQuery ? 'query' : 'gallery';
    };
    await saveEmbeddingSet(options.saveEmbeddings, all, {
      ...embeddingProvenance(embedder, options.manifestHash),
      datasetSpec: options.datasetSpec,
      roles: all.ids.map(roleOf),
    });
  }
  const queries = subset(all, (r) => roles.get(all.ids[r] as string)?.isQuery === true);
  const gallery = subset(all, (r) => roles.get(all.ids[r] as string)?.isGallery === true);
  const evaluation = await evaluateEmbeddings(queries, gallery === queries ? null : gallery, options);
  const dataset: DatasetInfo = {
    spec: options.datasetSpec,
    layout: manifest.layout,
    protocol: manifest.protocol,
    manifestHash: options.manifestHash,
    ...(manifest.classNames !== undefined ? { classNames: namesOfLabels(manifest.classNames, all.labels) } : {}),
    ...(options.trainClasses !== undefined ? { trainClasses: options.trainClasses } : {}),
    queryCount: queries.count,
    galleryCount: gallery.count,
    embeddedCount: all.count,
    sameSet: evaluation.sameSet,
    skippedImages: embedded.failures,
    embeddingCache: { key: embedded.key, hit: embedded.fromCache },
  };
  return {
    name: options.name,
    model: { ...modelInfo(embedder), fileBytes: await modelFileBytes(embedder) },
    dataset,
    metrics: evaluation.metrics,
    parameters: evaluation.parameters,
    timings: { embedSeconds, ...evaluation.timings },
    examples: evaluation.examples,
    diagnostics: evaluation.diagnostics,
    warnings: [...embedder.warnings, ...evaluation.warnings],
  };
}

/** A dataset opened for evaluation: its manifest (after the class split, if any) and the manifest's hash. */
export interface EvaluationDataset {
  manifest: Manifest;
  /** {@link manifestHash} of `manifest`: the embedding cache's key and the report's record. */
  hash: string;
}

/**
 * Opens the dataset `spec` for evaluation; with `trainClasses`, keeps the held-out classes only (the
 * class-disjoint protocol; `trainClassesName` names the option in errors).
 */
export async function openEvaluationDataset(
  spec: string,
  options: OpenDatasetOptions & { trainClasses?: readonly string[]; trainClassesName?: string } = {},
): Promise<EvaluationDataset> {
  const { trainClasses, trainClassesName = 'trainClasses', ...openOptions } = options;
  let manifest = await openDataset(spec, openOptions);
  if (trainClasses !== undefined) manifest = applyClassSplit(manifest, trainClasses, trainClassesName);
  return { manifest, hash: await manifestHash(manifest) };
}

/** Evaluates the model file `modelPath` on `manifest`: its embedder opened with `embedder`, {@link evaluateModel}, the embedder released (also on failure). */
export async function evaluateModelFile(modelPath: string, embedder: EmbedderOptions, manifest: Manifest, options: EvaluateModelOptions): Promise<RunReport> {
  const opened = await OnnxEmbedder.open(modelPath, embedder);
  try {
    return await evaluateModel(opened, manifest, options);
  } finally {
    await opened.release();
  }
}
