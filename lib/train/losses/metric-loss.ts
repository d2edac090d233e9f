/**
 * @file The contract every training loss implements: a {@link MetricLoss} maps a batch of
 * L2-normalised embeddings and their labels to a scalar loss, reporting how many anchors (or pairs,
 * per loss) had a valid tuple. Mining is done on detached similarities (read back to JavaScript);
 * the loss gathers the chosen entries from the live similarity matrix so gradients flow only through
 * the selected pairs (docs/methods.md section 0).
 */
import type * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../util/rng.js';
import type { LossParameterTraining } from './parameter-options.js';

/** What one loss evaluation produced. */
export interface LossOutput {
  /**
   * Scalar to minimise. When `validCount` is 0 it is a constant 0 that does not depend on the
   * embeddings; the training loop then skips the update (a batch without a valid tuple never
   * produces NaN and never moves the weights).
   */
  loss: tf.Scalar;
  /** Anchors (or tuples, as the loss documents) that contributed to the loss. */
  validCount: number;
  /** Anchors (or tuples) considered; validCount / totalCount is the fraction reported in progress. */
  totalCount: number;
}

/** What a loss carries from step to step besides its parameters (a cross-batch memory), in checkpoint form. */
export interface LossStepState {
  /** Named float32 arrays (the checkpoint's arrays). */
  readonly arrays: ReadonlyMap<string, Float32Array>;
  /** A few numbers (the checkpoint's state). */
  readonly values: readonly number[];
}

/** Saves and restores a loss's {@link LossStepState}. */
export interface LossStepStore {
  /** The state now, in checkpoint form. */
  save(): LossStepState;
  /** Puts `state` back; an E_ARG error naming `where` when `state` is not one of this loss's. */
  restore(state: LossStepState, where: string): void;
}

/** A metric-learning loss. */
export interface MetricLoss {
  /** Registry name, e.g. `ephn`. */
  readonly name: string;
  /** Every hyperparameter with its effective value, as recorded in the run's config and report. */
  readonly config: Readonly<Record<string, unknown>>;
  /**
   * Computes the loss of one batch. `embeddings` is [B, D], already L2-normalised and recorded on
   * the gradient tape; `labels` has length B. Must be called inside `tf.tidy` / a gradient function:
   * intermediate tensors are not disposed here.
   */
  compute(embeddings: tf.Tensor2D, labels: Int32Array): LossOutput;
  /**
   * Variables the loss owns (proxies, class weights, the margin loss's learnable β), trained beside the
   * model as {@link parameterTraining} says (lib/train/loss-optimizer.ts).
   */
  readonly trainableVariables: readonly tf.Variable[];
  /** How {@link trainableVariables} train (their learning-rate factor and weight decay); absent for a loss without options for them. */
  readonly parameterTraining?: LossParameterTraining | undefined;
  /**
   * Checks, before any work, that the training set's classes fit the loss (`labelNames[c]` is class
   * index c, as the batches give them): a proxy table with fewer rows than there are classes is one
   * clear error naming the first label without a proxy.
   */
  checkTrainingLabels?(labelNames: readonly string[]): void;
  /**
   * The loss's random generator, for losses that draw (EPS's sampled negatives): saved in each
   * checkpoint and restored on resume, so a resumed run draws what an uninterrupted one would.
   */
  readonly generator?: Rng;
  /**
   * The state a loss carries from step to step (XBM's memory, cross-batch-memory.ts): saved in each
   * checkpoint, restored on resume, and put back after the trainer's probe step, so that only training
   * steps change it.
   */
  readonly stepState?: LossStepStore;
}
