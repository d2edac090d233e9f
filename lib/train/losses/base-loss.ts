/**
 * @file The part every loss shares, in the spirit of pytorch-metric-learning's
 * `BaseMetricLossFunction`: its registry name, its options (parsed by the subclass from its own
 * strict schema, see options.ts) and the config recorded in runs and reports, no trainable variables
 * unless the loss owns some, and {@link BaseMetricLoss.compute} as a template method: it checks the
 * batch and hands a {@link LossBatch} (label masks, similarities, distances, each made once when
 * asked for) to the loss's formula, {@link BaseMetricLoss.lossOf}. Each loss file keeps only its
 * formula, its paper and its options.
 */
import type * as tf from '@tensorflow/tfjs';
import { LossBatch } from './loss-batch.js';
import type { LossOutput, MetricLoss } from './metric-loss.js';
import type { LossParameterTraining } from './parameter-options.js';

/** A loss with parsed options of type `Options`. */
export abstract class BaseMetricLoss<Options extends object> implements MetricLoss {
  readonly name: string;
  readonly config: Readonly<Record<string, unknown>>;
  readonly trainableVariables: readonly tf.Variable[] = [];
  protected readonly options: Options;

  /**
   * `options` as parsed (defaults filled in); `recorded`, what the config records of them, when it
   * differs from `options` (a default the loss adds that is not a user option).
   */
  protected constructor(name: string, options: Options, recorded: object = options) {
    this.name = name;
    this.options = options;
    this.config = { name, ...recorded };
  }

  /** The options' learningRateScale and weightDecay, for a loss whose options have them (see parameter-options.ts). */
  get parameterTraining(): LossParameterTraining | undefined {
    const { learningRateScale, weightDecay } = this.options as Partial<LossParameterTraining>;
    return learningRateScale !== undefined && weightDecay !== undefined ? { learningRateScale, weightDecay } : undefined;
  }

  /** The loss of one batch (see {@link MetricLoss.compute}): the batch checked, then {@link lossOf}. */
  compute(embeddings: tf.Tensor2D, labels: Int32Array): LossOutput {
    return this.lossOf(new LossBatch(embeddings, labels));
  }

  /** The loss of a batch already made (one against reference items: cross-batch-memory.ts). */
  computeBatch(batch: LossBatch): LossOutput {
    return this.lossOf(batch);
  }

  /** The loss's formula on a checked batch. */
  protected abstract lossOf(batch: LossBatch): LossOutput;
}
