/**
 * @file dmlkit's public API (`import ... from 'dmlkit'`): everything a program needs to open datasets,
 * embed images with an ONNX model, search, and compute the evaluation metrics without going through
 * the CLI. It loads onnxruntime, sharp and hnswlib, never TensorFlow.js: training is `dmlkit/train`
 * (lib/train.ts), export to ONNX `dmlkit/export` (lib/export.ts) and the search service
 * `dmlkit/serve` (lib/serve.ts).
 *
 * @module dmlkit
 */
export { DmlError, invalidParameterError, type DmlErrorCode } from './errors.js';
export { Rng } from './util/rng.js';
export { defaultDataPath, defaultModelPath, packageRoot } from './util/package-files.js';

export type { ImageSource, Manifest, ManifestItem } from './data/manifest.js';
export { openDataset, manifestHash, DATASET_LAYOUTS, type OpenDatasetOptions, type ManifestHashOptions } from './data/open-dataset.js';
export { applyClassSplit, parseClassList } from './data/class-split.js';
export { readIdxFile, parseIdx, type IdxArray } from './data/idx-reader.js';

export { RESAMPLE_FILTERS, RESIZE_MODES, type CropRounding, type Preprocessing, type ResampleFilter, type ResizeMode, type TensorLayout, type TrainAugmentation } from './image/preprocessing.js';
export { findPreprocessorConfig, parsePreprocessorConfig, readPreprocessorConfig, PREPROCESSOR_CONFIG_FILE, isTimmConfig, parseTimmConfig, TIMM_CONFIG_FILE } from './image/preprocessor-config.js';
export { resampleRaw } from './image/resample.js';
export { loadImageBatch, type LoadImageBatchOptions } from './image/batch-loader.js';
export type { BatchArray, ImageBatch, ImageFailure } from './image/batch-collector.js';
export { ImageDecodePool, defaultDecodeWorkers, type DecodePoolOptions, type DecodePoolBatchOptions } from './image/decode-pool.js';
export { decodeImageSource, decodeImageBuffer, DEFAULT_LIMIT_INPUT_PIXELS, type DecodeOptions } from './image/decode.js';
export type { RawImage } from './image/raw-image.js';

export { createSession, describeIo, type CreateSessionOptions, type CreatedSession, type IoDescription, type IoValueInfo } from './onnx/session.js';
export { AUTO_PROVIDER_ORDER, DEFAULT_DEVICE, DEVICE_CHOICES, EXECUTION_DEVICES, NORMALIZATION_CHOICES, type DeviceChoice, type ExecutionDevice, type ExecutionProviderName, type NormalizationPlace, type ProviderAttempt, type ProviderChoice } from './onnx/devices.js';
export { readModelMetadata, readExternalDataLocations, readExternalDataRanges, type ExternalTensorRange, type ModelMetadata } from './onnx/metadata.js';
export { readModelFiles, modelIdentity, copyModelFiles, type ExternalDataFile, type ModelFiles } from './onnx/model-files.js';
export { DML_METADATA_KEYS, parseDmlMetadata, type DmlModelMetadata } from './onnx/dml-metadata.js';

export type { EmbeddingSet } from './embed/embedding-set.js';
export { OnnxEmbedder, DECODE_POOL_MIN_ITEMS, type EmbedderOptions, type EmbedItemsOptions, type SkippedImage } from './embed/embedder.js';
export { EMBEDDING_OUTPUT_NAMES, CHANNEL_DIM_NAMES, TOKEN_POOLINGS, type ModelSignature, type PreprocessingSource, type PreprocessingSources, type TensorInfo, type TokenPooling } from './embed/model-signature.js';
export { poolTokens } from './embed/pooling.js';
export { embedItemsCached, type CachedEmbedding } from './embed/cache.js';
export { saveEmbeddingSet, loadEmbeddingSet, type EmbeddingProvenance } from './embed/embedding-files.js';
export { readNpy, writeNpy, parseNpy, encodeNpy, type NpyArray } from './embed/npy.js';

export type { NeighbourBlock } from './search/neighbours.js';
export { exactSearch, type ExactSearchOptions } from './search/exact.js';
export { EmbeddingIndex, NORM_TOLERANCE, type EmbeddingIndexOptions, type SearchResult } from './search/embedding-index.js';
export { HnswIndex, type HnswParams, type HnswBuildOptions, type HnswSearchOptions, type HnswLoadOptions, type HnswNeighbour } from './search/hnsw.js';

export { RetrievalMetricsAccumulator, RETRIEVAL_METRIC_DEFINITIONS, type RetrievalMetrics, type RetrievalMetricsOptions, type LabelRetrievalMetrics } from './metrics/retrieval.js';
export { adjustedMutualInformation, normalizedMutualInformation, pairwiseClusteringF1, type PairwiseClusteringF1 } from './metrics/clustering.js';
export { FullRankingAccumulator, FULL_RANKING_METRIC_DEFINITIONS, type FullRankingMetrics, type FullRankingOptions } from './metrics/full-ranking.js';
export { kmeans, kmeansSweep, type KMeansOptions, type KMeansResult, type KMeansSweepOptions } from './metrics/kmeans.js';
export { DEFAULT_MAX_ITERATIONS, DEFAULT_TOLERANCE, KMEANS_INITS, type KMeansInit } from './metrics/kmeans-options.js';
export { encodeLabels, type EncodedLabels } from './metrics/labels.js';

export { evaluateEmbeddings, checkQueryLabelsInGallery, type EvaluateEmbeddingsOptions, type EmbeddingEvaluation } from './eval/evaluate-embeddings.js';
export { NeighbourRecorder, neighboursCsv, NEIGHBOURS_CSV_HEADER } from './eval/saved-neighbours.js';
export { evaluateModel, type EvaluateModelOptions, type ItemRole } from './eval/evaluate-model.js';
export { DEFAULT_CLUSTER_COUNTS, type ClusterCountSpec } from './eval/cluster-counts.js';
export {
  CLUSTER_SETS,
  DEFAULT_INDEX,
  DEFAULT_KS,
  METRIC_DEFINITIONS,
  type AccuracyCalculatorMetrics,
  type ClassMetrics,
  type ClusterSet,
  type EvaluationMetrics,
  type EvaluationParameters,
  type EvaluationTimings,
  type IndexParameters,
  type KMeansParameters,
  type NmiCurvePoint,
} from './eval/evaluation.js';
export type { DatasetInfo, ModelInfo, RunReport } from './eval/run-report.js';
export { CONFUSIONS_KEPT, MAX_EXACT_WORK, SAMPLED_PAIRS, SIMILARITY_BINS, type LabelConfusion, type RunDiagnostics, type SimilarityHistograms } from './eval/diagnostics.js';
export { combineReports, readSavedReport, runDifferences, type CombinedReports, type SavedReport } from './report/compare-reports.js';
export { buildReport, isSingleRunReport, REPORT_FORMAT, type Report, type ReportHeader, type SingleRunReport } from './report/report.js';
export { DEFAULT_EXAMPLE_NEIGHBOURS, DEFAULT_EXAMPLES, type ExampleNeighbour, type ExampleSelection, type RetrievalExample } from './eval/retrieval-examples.js';

export { evaluate, evaluateArrays, embedImages, type EvaluateOptions, type EvaluateArraysOptions } from './facade.js';
