/**
 * @file `dmlkit/train`: training embedding models with TensorFlow.js (the trainer, its config, models,
 * losses, samplers, checkpoints). Loads TensorFlow.js; `dmlkit` itself never does.
 *
 * @module dmlkit/train
 */
export { train, type TrainOptions, type TrainResult } from './train/trainer.js';
export type { EpochRecord, ValidationRecord } from './train/epoch-record.js';
export { parseTrainConfig, trainConfigSchema, type TrainConfig, type TrainConfigInput, type FeaturesSpec } from './train/config.js';
export { featuresSpecSchema } from './train/models/backbone-features.js';
export { selectBackend, type BackendAttempt, type SelectBackendOptions, type SelectedBackend } from './engine/tfjs/backend.js';
export {
  BACKEND_PREFERENCES,
  TFJS_BACKEND_ORDER,
  TFJS_BACKENDS,
  type BackendChoice,
  type BackendPreference,
  type TfjsBackend,
} from './engine/tfjs/backend-registry.js';
export { TRAINING_BACKENDS, type TrainingBackend } from './train/training-backends.js';
export { buildModel } from './train/models/build-model.js';
export type { Activation, HeadSpec, ModelSpec, MlpModelSpec, CnnModelSpec, ConvnetModelSpec, ConvnetDownsample, ConvnetPooling, TfjsBackboneModelSpec, OnnxModelSpec } from './train/models/model-spec.js';
export { modelSpecSchema } from './train/models/model-spec.js';
export type { TrainingData } from './train/training-data.js';
export { L2Normalize, type L2NormalizeArgs } from './train/models/l2-normalize.js';
export { computeBackboneFeatures, type BackboneFeatures, type BackboneFeatureOptions } from './train/models/backbone-features.js';
export { createLoss, LOSS_NAMES, lossSpecSchema, type LossSpec, type LossName } from './train/losses/registry.js';
export type { MetricLoss, LossOutput, LossStepState, LossStepStore } from './train/losses/metric-loss.js';
export type { LossParameterTraining } from './train/losses/parameter-options.js';
export type { LossContext } from './train/losses/loss-entry.js';
export { LossOptimizer } from './train/loss-optimizer.js';
export {
  createSampler,
  type BatchSampler,
  type ExactSamplerSpec,
  type FilledSamplerSpec,
  type PairingSamplerSpec,
  type SamplerDescription,
  type SamplerKind,
  type SamplerSpec,
  type TruncatedSamplerSpec,
} from './train/samplers/sampler.js';
export type { FilledLengthRule } from './train/samplers/filled.js';
export { saveCheckpoint, loadCheckpoint, optimizerStateFiles, restoreOptimizerState, type CheckpointContents, type LoadedCheckpoint, type OptimizerStateFiles } from './train/checkpoint-io.js';
export type { EngineSelection } from './train/training-engine.js';
// The graph trainer: a network as an ONNX forward graph, trained step by step with onnxruntime (docs/graph-trainer.md).
export { GraphTrainer, type FusedStepResult, type GraphLoss, type GraphTrainerOptions } from './engine/graph-trainer/graph-trainer.js';
export { graphLossOf } from './train/losses/registry.js';
export type { IrAttribute, IrElementType, IrNode, IrTensor } from './engine/graph/onnx-ir.js';
export type { GraphOptimizerSettings } from './engine/graph-trainer/optimizer-graph.js';
export { prepareEmbeddingNetwork, type EmbeddingHeadSpec, type EmbeddingNetworkOptions } from './engine/graph/embedding-network.js';
export { GraphNetwork, embeddingLossGradient, graphOptimizerSettings, type EmbeddingLossGradient, type GraphBatch } from './train/graph-network.js';
export { tripletScatter, type TripletScatter, type TripletScatterOptions, type LoopScatterSeries } from './train/scatter.js';
export { trainingReportHtml, writeTrainingReportHtml, type TrainingPageStatus } from './train/training-html.js';
// A run folder read back (log.jsonl, config.json, scatter files), and its charts against the step.
export { readRunFolder, parseRunLog, type RunFolder, type StepEntry, type ScatterEntry, type FinishedRunInfo } from './train/run-log.js';
export { emaSmoothed, stepLossChartSvg, learningRateChartSvg, validFractionChartSvg, validationStepChartSvg, validationMetrics, validationValue, LOSS_SMOOTHING, type ChartRun } from './train/training-charts.js';
// Miners: per-anchor selection, pair lists and the multi-similarity miner, triplet lists and the triplet-margin miner,
// PML's batch-hard and pair-margin miners and the miner option of the pair losses.
export {
  DEFAULT_DUPLICATE_THRESHOLD,
  selectNegatives,
  selectPositives,
  type AnchorSelection,
  type NegativeSelectionOptions,
  type NegativeStrategy,
  type PositiveSelectionOptions,
  type PositiveStrategy,
  type SemiHardRule,
} from './train/mining/anchor-selection.js';
export { allPairs, type MinedPairs, type PairList } from './train/mining/pairs.js';
export type { DistanceKind, PairMasks } from './train/similarity.js';
export { DEFAULT_MULTI_SIMILARITY_EPSILON, mineMultiSimilarityPairs } from './train/mining/multi-similarity-miner.js';
export {
  allTriplets,
  groupTripletsByAnchor,
  mineTripletsByMargin,
  type TripletList,
  type TripletMarginMinerType,
  type TripletSlots,
} from './train/mining/triplet-margin-miner.js';
export { mineBatchHardTriplets } from './train/mining/batch-hard-miner.js';
export { DEFAULT_PAIR_MARGINS, minePairsByMargin } from './train/mining/pair-margin-miner.js';
export { minedPairMasks, pairMinerSchema, type PairMiner } from './train/mining/pair-miner.js';
