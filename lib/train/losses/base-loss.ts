/**
 * @file The part every loss shares, in the spirit of pytorch-metric-learning's
 * `BaseMetricLossFunction`: its registry name, its options (parsed by the subclass from its own
 * strict schema, see options.ts) and the config recorded in runs and reports, and no trainable
 * variables unless the loss owns some. Each loss file keeps only its formula, its paper and its
 * options; the batch checks, similarity matrix and label masks it uses come from ../similarity.ts.
 */
import type * as tf from '@tensorflow/tfjs';
import type { LossOutput, MetricLoss } from './metric-loss.js';

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

  abstract compute(embeddings: tf.Tensor2D, labels: Int32Array): LossOutput;
}
