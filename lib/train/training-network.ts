/**
 * @file What the training loop (trainer.ts) needs of a network, whichever engine trains it: one batch
 * trained at the step's learning rate and momentum, the embeddings of a data set, the trained values
 * made readable before validation and checkpoints, the first weight that holds NaN or Inf, and what a
 * checkpoint holds of it. Two engines implement it: TensorFlow.js (tfjs-network.ts) and the graph
 * trainer (graph-training-network.ts); open-training-network.ts opens the one a run's engine
 * selection names (training-engine.ts), restored from a checkpoint for a resume. A third engine is
 * one more implementation and one more branch there, not a branch in the loop.
 */
import type * as tf from '@tensorflow/tfjs';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import type { DeviceChoice, ProviderChoice } from '../onnx/devices.js';
import type { batchStep, InputDraw } from './batch-step.js';
import type { CheckpointContents } from './checkpoint-io.js';
import type { LossOptimizer } from './loss-optimizer.js';
import type { MetricLoss } from './losses/metric-loss.js';
import type { OptimizerConfig } from './optimizer.js';
import type { TrainingData } from './training-data.js';

/** The per-step settings the schedule gives (lr-schedule.ts). */
export interface StepSettings {
  readonly learningRate: number;
  /** Adam's β1 or SGD's momentum when the schedule sets it (OneCycle's `cycleMomentum`); undefined: the optimiser's own. */
  readonly momentum: number | undefined;
}

/** What one batch did. */
export interface BatchOutcome {
  /** The loss of the batch (before the update); not finite when training diverged, and then nothing was applied. */
  readonly value: number;
  /** Anchors (or tuples) with a valid tuple, and all of them; with none, nothing was applied. */
  readonly validCount: number;
  readonly totalCount: number;
}

/** A network being trained (see the file comment). */
export interface TrainingNetwork {
  /** The TensorFlow.js backend that trains, or `onnx` (the graph trainer). */
  readonly backend: string;
  /** The graph trainer's execution provider and each one tried. */
  readonly device: ProviderChoice | undefined;
  /**
   * Trains on the batch of rows `rows` of the training data with its input draw `draw`: the loss,
   * and when it has a valid tuple and is finite, one optimiser step of the network and of the loss's
   * own parameters.
   */
  trainBatch(rows: Int32Array, draw: InputDraw, step: StepSettings): Promise<BatchOutcome>;
  /** The embeddings of every row of `data` in inference mode; after {@link settle}. */
  embedAll(data: TrainingData): Promise<EmbeddingSet>;
  /** Makes the trained values readable (read back from a device, written back into a TensorFlow.js model): before validation and checkpoints. */
  settle(): Promise<void>;
  /** The name of a weight or running statistic holding NaN or Inf, or undefined; after {@link settle}. */
  nonFiniteWeight(): string | undefined;
  /** What a checkpoint holds of the network and its optimisers, and what it adds to the checkpoint's state; after {@link settle}. */
  checkpoint(): { contents: Omit<CheckpointContents, 'state'>; state: { graphSteps?: number } };
}

/** What a network is opened from (open-training-network.ts). */
export interface NetworkSetup {
  /** `onnx`: the graph trainer; `tfjs`: TensorFlow.js (training-engine.ts). */
  readonly engine: 'onnx' | 'tfjs';
  /** A TensorFlow.js model (dmlkit's model kinds), or an ONNX network's bytes (prepared, or a resumed checkpoint's) and its name (`model.kind: "onnx"`). */
  readonly network: { readonly model: tf.LayersModel } | { readonly onnx: Uint8Array; readonly name: string };
  readonly optimizer: OptimizerConfig;
  /** The learning rate of the first step (the optimiser is created at it). */
  readonly initialLearningRate: number;
  readonly loss: MetricLoss;
  readonly lossOptimizer: LossOptimizer | undefined;
  readonly trainData: TrainingData;
  /** The model's input shape without the batch axis. */
  readonly inputShape: number[];
  /** The input of the batch `rows` with its draw applied, and (TensorFlow.js models) its loss and gradients: batch-step.ts. */
  readonly batch: ReturnType<typeof batchStep>;
  /** The rows of the first batch (the graph trainer opens its sessions for its size; TensorFlow.js probes its kernels on it). */
  readonly firstBatch: Int32Array;
  /** The graph trainer's settings. */
  readonly graph: {
    readonly device: DeviceChoice;
    readonly microBatch: number | undefined;
    /** A `model.kind: "onnx"` network's fine-tuning options. */
    readonly freezeUpTo?: string | undefined;
    readonly backboneLearningRateScale?: number | undefined;
    readonly frozenBatchNorm?: boolean | undefined;
  };
  /** For a resume: the checkpoint folder to restore the network and its optimisers from. */
  readonly checkpointDir: string | undefined;
  readonly warn: (message: string) => void;
}
