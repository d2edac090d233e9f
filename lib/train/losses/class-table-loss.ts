/**
 * @file The part the losses with a class table share (Proxy-Anchor, ProxyNCA, Normalized Softmax, the
 * additive-margin softmax losses, SoftTriple): the table built from the options (class-table.ts), its
 * variable as the loss's trainable variable, the training classes checked before any work, and each
 * batch's labels and embedding size checked before the loss's formula, {@link ClassTableLoss.tableLossOf}.
 */
import * as tf from '@tensorflow/tfjs';
import { BaseMetricLoss } from './base-loss.js';
import { ClassTable, type ClassTableInit, type ClassTableOptions } from './class-table.js';
import type { LossContext } from './loss-entry.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';

/** A loss with a class table, of parsed options `Options` (see the file comment). */
export abstract class ClassTableLoss<Options extends ClassTableOptions> extends BaseMetricLoss<Options> {
  override readonly trainableVariables: readonly tf.Variable[];
  protected readonly table: ClassTable;

  /** `rowsPerClass` rows per class drawn as `init` says (see {@link ClassTable}). */
  protected constructor(name: string, options: Options, context: LossContext, rowsPerClass: number, init: ClassTableInit) {
    super(name, options);
    this.table = new ClassTable(name, options, context, rowsPerClass, init);
    this.trainableVariables = [this.table.variable];
  }

  /** See {@link ClassTable.checkTrainingLabels}. */
  checkTrainingLabels(labelNames: readonly string[]): void {
    this.table.checkTrainingLabels(labelNames);
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    this.table.checkLabels(batch.labels, batch.embeddings);
    return this.tableLossOf(batch);
  }

  /** The loss's formula on a batch whose labels index the table. */
  protected abstract tableLossOf(batch: LossBatch): LossOutput;

  /**
   * A softmax classifier's output on `logits` [B, classes] with the labels as `oneHot` rows: PyTorch's
   * `CrossEntropyLoss(reduction='none')` averaged over the batch (PML's MeanReducer),
   * `−(1/B) Σ_i log softmax(z_i)_{y_i}`, the label selected by the one-hot product; every embedding counted.
   */
  protected classifierOutput(logits: tf.Tensor2D, oneHot: tf.Tensor2D): LossOutput {
    const size = logits.shape[0];
    const loss = tf.neg(tf.mean(tf.sum(tf.mul(tf.logSoftmax(logits), oneHot), 1))) as tf.Scalar;
    return { loss, validCount: size, totalCount: size };
  }
}
