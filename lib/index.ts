/**
 * @file dmlkit's public API (`import ... from 'dmlkit'`): everything a program needs to open datasets,
 * embed images with an ONNX model, search, and compute the evaluation metrics without going through
 * the CLI. It loads onnxruntime, sharp and hnswlib, never TensorFlow.js: training is `dmlkit/train`
 * (lib/train.ts), export to ONNX `dmlkit/export` (lib/export.ts) and the search service
 * `dmlkit/serve` (lib/serve.ts).
 */
export { DmlError, invalidParameterError, type DmlErrorCode } from './errors.js';
export { Rng } from './util/rng.js';

export type { ImageSource, Manifest, ManifestItem } from './data/manifest.js';
export { openDataset, manifestHash, DATASET_LAYOUTS, type OpenDatasetOptions } from './data/open-dataset.js';
export { applyClassSplit, parseClassList } from './data/class-split.js';
export { readIdxFile, parseIdx, type IdxArray } from './data/idx.js';

export type { Preprocessing, TensorLayout, TrainAugmentation } from './image/preprocessing.js';
export { loadImageBatch, type LoadImageBatchOptions } from './image/batch-loader.js';
export type { ImageBatch } from './image/batch-collector.js';
export { ImageDecodePool, type DecodePoolOptions, type DecodePoolBatchOptions } from './image/decode-pool.js';
export { decodeImageSource, decodeImageBuffer } from './image/decode.js';

export { createSession, describeIo } from './onnx/session.js';
export { DEVICE_CHOICES, type DeviceChoice } from './onnx/devices.js';
export { readModelMetadata } from './onnx/metadata.js';
export { DML_METADATA_KEYS, parseDmlMetadata } from './onnx/dml-metadata.js';

export type { EmbeddingSet } from './embed/embedding-set.js';
export { OnnxEmbedder, type EmbedderOptions, type EmbedItemsOptions } from './embed/embedder.js';
export { embedItemsCached } from './embed/cache.js';
export { saveEmbeddingSet, loadEmbeddingSet } from './embed/store.js';
export { readNpy, writeNpy, parseNpy, encodeNpy, type NpyArray } from './embed/npy.js';

export type { NeighbourBlock } from './search/neighbours.js';
export { exactSearch, type ExactSearchOptions } from './search/exact.js';
export { HnswIndex } from './search/hnsw.js';

export { RetrievalMetricsAccumulator, RETRIEVAL_METRIC_DEFINITIONS, type RetrievalMetrics } from './metrics/retrieval.js';
export { normalizedMutualInformation, pairwiseClusteringF1 } from './metrics/clustering.js';
export { kmeans, kmeansSweep, type KMeansOptions, type KMeansResult, type KMeansSweepOptions } from './metrics/kmeans.js';
export { type KMeansInit } from './metrics/kmeans-options.js';
export { encodeLabels } from './metrics/labels.js';

export { evaluateEmbeddings, type EvaluateEmbeddingsOptions } from './eval/evaluate-embeddings.js';
export { evaluateModel, type EvaluateModelOptions } from './eval/evaluate-model.js';
export { METRIC_DEFINITIONS, type EvaluationMetrics, type EvaluationParameters } from './eval/evaluation.js';
export { buildReport, isSingleRunReport, REPORT_FORMAT, type Report, type ReportHeader, type RunReport, type SingleRunReport } from './report/report.js';
export type { ExampleNeighbour, RetrievalExample } from './eval/retrieval-examples.js';

export { evaluate, embedImages, type EvaluateOptions } from './facade.js';
