/**
 * @file The runtime entry of `dmlkit/train` (package.json maps its types to train.d.ts and its code here). It
 * loads train.js dynamically, so a missing TensorFlow.js (an optional peer dependency) becomes the same
 * one-line E_NOT_FOUND error naming what to install as `dml train` gives, instead of Node's raw
 * module-not-found error. Its exports are train.ts's values, one by one (a spec keeps the lists equal).
 */
import { explainMissingTensorflow } from './util/optional-deps.js';

let api: typeof import('./train.js');
try {
  api = await import('./train.js');
} catch (err) {
  throw explainMissingTensorflow(err, "import 'dmlkit/train'");
}

export const {
  BACKEND_PREFERENCES,
  DEFAULT_DUPLICATE_THRESHOLD,
  DEFAULT_MULTI_SIMILARITY_EPSILON,
  DEFAULT_PAIR_MARGINS,
  LossOptimizer,
  GraphNetwork,
  GraphTrainer,
  L2Normalize,
  LOSS_NAMES,
  allPairs,
  allTriplets,
  buildModel,
  computeBackboneFeatures,
  createLoss,
  createSampler,
  embeddingLossGradient,
  featuresSpecSchema,
  graphLossOf,
  graphOptimizerSettings,
  groupTripletsByAnchor,
  loadCheckpoint,
  lossSpecSchema,
  mineBatchHardTriplets,
  minedPairMasks,
  mineMultiSimilarityPairs,
  minePairsByMargin,
  mineTripletsByMargin,
  optimizerStateFiles,
  pairMinerSchema,
  modelSpecSchema,
  parseTrainConfig,
  prepareEmbeddingNetwork,
  restoreOptimizerState,
  saveCheckpoint,
  selectBackend,
  selectNegatives,
  selectPositives,
  TFJS_BACKEND_ORDER,
  TFJS_BACKENDS,
  TRAINING_BACKENDS,
  train,
  trainConfigSchema,
  tripletScatter,
  trainingReportHtml,
  writeTrainingReportHtml,
  readRunFolder,
  parseRunLog,
  emaSmoothed,
  stepLossChartSvg,
  learningRateChartSvg,
  validFractionChartSvg,
  validationStepChartSvg,
  validationMetrics,
  validationValue,
  LOSS_SMOOTHING,
} = api;
