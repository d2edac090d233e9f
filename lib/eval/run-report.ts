/**
 * @file What one evaluation run reports: the model side, the data side, the metrics with their
 * parameters and timings, examples and warnings. report.json (lib/report/report.ts) holds one or
 * several of these side by side.
 */
import type { EvaluationMetrics, EvaluationParameters, EvaluationTimings } from './evaluation.js';
import type { RetrievalExample } from './retrieval-examples.js';
import type { RunDiagnostics } from './diagnostics.js';
import type { ExecutionProviderName, NormalizationPlace, ProviderAttempt } from '../onnx/devices.js';

/** The model side of a run (absent when embeddings came from .npy files). */
export interface ModelInfo {
  path: string;
  /** The model's identity: the file's SHA-256, or, with external data, that of the file's and the data files' hashes. */
  sha256: string;
  /** External data files the model keeps its weights in (present only when it has any). */
  externalData?: Array<{ location: string; sha256: string }>;
  executionProvider: ExecutionProviderName;
  /** Where the batches were normalised ({@link NormalizationPlace}); the values are the same either way. */
  normalization?: NormalizationPlace;
  providerAttempts: ProviderAttempt[];
  inputName: string;
  /** The input's element type as the model file declares it: `float32`, `float16` or `bfloat16`. */
  inputType?: string;
  outputName: string;
  /** The embedding output's element type as the model file declares it. */
  outputType?: string;
  /** How the token output was pooled (`cls`, `mean`, `max`); present only when it was. */
  pooling?: string;
  embeddingDim: number;
  /** Bytes of the model file and its external data files together. */
  fileBytes?: number;
  fixedBatch: number | null;
  preprocessing: unknown;
  preprocessingSources: Record<string, string>;
  /** The Hugging Face `preprocessor_config.json` read, when one was (its values have the source `preprocessor config`). */
  preprocessorConfig?: string;
  metadataProps: Record<string, string>;
}

/** The data side of a run. */
export interface DatasetInfo {
  /** `layout:path` as given, or the .npy files. */
  spec: string;
  layout: string;
  protocol: string;
  manifestHash?: string;
  /**
   * Display names of the labels, where the dataset has them (Fashion-MNIST's, Cars196's `class_names`)
   * or `--class-names` gave them: the reports show a name in place of its label. Absent: labels only.
   */
  classNames?: Record<string, string>;
  /** Labels held out as training classes (class-disjoint split), if any. */
  trainClasses?: string[];
  queryCount: number;
  galleryCount: number;
  /** Items embedded (queries and gallery items, each once, without skipped images): with `timings.embedSeconds`, the images per second. */
  embeddedCount?: number;
  /** True when every query is also a gallery item (CUB/Cars/SOP protocol). */
  sameSet: boolean;
  /** Images skipped with --skip-bad-images, with the reason. */
  skippedImages: Array<{ id: string; message: string }>;
  embeddingCache?: { key: string; hit: boolean };
}

/** One model (or one embeddings pair) evaluated on one dataset. */
export interface RunReport {
  name: string;
  model?: ModelInfo;
  dataset: DatasetInfo;
  metrics: EvaluationMetrics;
  parameters: EvaluationParameters;
  timings: EvaluationTimings;
  /** Seeded random queries (the same for every run) and the run's worst queries, with their top neighbours (see eval/retrieval-examples.ts). */
  examples: RetrievalExample[];
  /** The label pairs most often confused in the top K and the pair-similarity histograms (absent in reports of older versions). */
  diagnostics?: RunDiagnostics;
  /** Warnings about this run (the lines `dml eval` prints as `warning: ...`); empty when none. */
  warnings: string[];
}
