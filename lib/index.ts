/**
 * @file dmlkit's public API: everything a program needs to open datasets, embed images with an ONNX
 * model, search, and compute the evaluation metrics without going through the CLI.
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

export { createSession, describeIo, DEVICE_CHOICES, type DeviceChoice } from './onnx/session.js';
export { readModelMetadata } from './onnx/metadata.js';
export { DML_METADATA_KEYS, parseDmlMetadata } from './onnx/dml-metadata.js';
export * as onnxBuilder from './onnx/builder.js';

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
export { type KMeansInit } from './metrics/kmeans-seeding.js';
export { encodeLabels } from './metrics/labels.js';

export { evaluateEmbeddings, type EvaluateEmbeddingsOptions } from './eval/evaluate-embeddings.js';
export { evaluateModel, type EvaluateModelOptions } from './eval/evaluate-model.js';
export { METRIC_DEFINITIONS, type EvaluationMetrics, type EvaluationParameters } from './eval/evaluation.js';
export { buildReport, type Report, type RunReport } from './report/report.js';

export { train, type TrainOptions, type TrainResult, type EpochRecord, type ValidationRecord } from './train/trainer.js';
export { parseTrainConfig, trainConfigSchema, type TrainConfig, type TrainConfigInput, type FeaturesSpec } from './train/config.js';
export { selectBackend, type BackendPreference, type SelectedBackend } from './train/backend.js';
export { buildModel } from './train/models/build-model.js';
export type { ModelSpec, MlpModelSpec, CnnModelSpec, TfjsBackboneModelSpec } from './train/models/model-spec.js';
export { L2Normalize } from './train/models/l2-normalize.js';
export { computeBackboneFeatures, type BackboneFeatures, type BackboneFeatureOptions } from './train/models/backbone-features.js';
export { createLoss, LOSS_NAMES, type LossSpec, type LossName } from './train/losses/registry.js';
export type { MetricLoss, LossOutput } from './train/losses/metric-loss.js';
export { createSampler, type SamplerSpec, type BatchSampler } from './train/samplers/sampler.js';
export { saveCheckpoint, loadCheckpoint, type CheckpointContents, type LoadedCheckpoint } from './train/checkpoint-io.js';
export { tripletScatter, type TripletScatter, type TripletScatterOptions, type LoopScatterSeries } from './train/scatter.js';

export { exportEmbedder, exportCheckpoint, type EmbedderExportOptions, type ExportedEmbedder, type CheckpointExportOptions, type CheckpointExport } from './export/export-model.js';
export { convertLayersModel, type ConvertOptions, type ConvertedModel } from './export/tfjs-to-onnx.js';
export { composeBackboneAndHead, type ComposeOptions, type ComposedModel } from './export/compose.js';
export { registerLayerConverter, supportedLayerClasses, type LayerConverter } from './export/layer-converters.js';
export { PARITY_TOLERANCE, type ParityReport } from './export/parity.js';

export { createSearchApp, type SearchAppOptions } from './serve/app.js';
export { SearchIndexStore, type SearchIndexMetadata, type IndexedItem, type NewItem, type SearchHit } from './serve/index-store.js';
export { InferenceWorkerPool, type WorkerPoolOptions } from './serve/worker-pool.js';
export { RequestMetrics } from './serve/metrics.js';
