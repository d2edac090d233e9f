/**
 * @file The class table of the proxy and classification losses (Proxy-Anchor, ProxyNCA, Normalized
 * Softmax, ArcFace, CosFace, Sub-center ArcFace, SoftTriple): a trainable variable [rows, D] with
 * `rowsPerClass` rows per class, class-major (rows c·K .. c·K + K − 1 are class c's: its proxy, its
 * weight vector, its sub-centres or centres), drawn from a seeded generator as the loss's reference
 * implementation initialises it. The losses compare L2-normalised embeddings with the L2-normalised
 * rows (cosine similarity); labels are class indices in [0, numClasses), checked before training
 * against the training set's classes ({@link ClassTable.checkTrainingLabels}) and in every batch.
 *
 * Layout against pytorch-metric-learning: PML keeps `proxies` as [classes, D] but the weights of the
 * softmax losses (`W`, SoftTriple's `fc`) as [D, classes]; dmlkit keeps every table as rows (the
 * transpose of `W`), with the same class-major column order.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { DmlError, invalidParameterError } from '../../errors.js';
import { Rng } from '../../util/rng.js';
import { normalizeEmbeddings, oneHotRows } from '../similarity.js';
import type { LossContext } from './loss-entry.js';
import { lossSeedField, parameterTrainingFields } from './parameter-options.js';

/**
 * How the rows are drawn: `normal` N(0, 1) (PML's default: ProxyNCA, Normalized Softmax, the
 * large-margin losses); `kaiming-normal-fan-out` N(0, 2 / classes) (Proxy-Anchor's
 * `kaiming_normal_(mode='fan_out')` on [classes, D]); `kaiming-uniform` U(±1/√rows) (SoftTriple's
 * `kaiming_uniform_(a=√5)` on its [D, rows] table, whose fan-in is the row count).
 */
export type ClassTableInit = 'normal' | 'kaiming-normal-fan-out' | 'kaiming-uniform';

/** The options every loss with a class table takes, with PML's names (besides its own). */
export const classTableFields = {
  /** Number of classes: the training labels are class indices in [0, numClasses) (required). */
  numClasses: z.int().min(1),
  /** Embedding dimension D of the table's rows; null (default): the model's. */
  embeddingSize: z.int().min(1).nullable().default(null),
  /** Seed of the table's initial draw (default 0). */
  seed: lossSeedField,
  ...parameterTrainingFields,
};

/** The parsed options of {@link classTableFields}. */
export interface ClassTableOptions {
  numClasses: number;
  embeddingSize: number | null;
  seed: number;
}

/** A class table: rows, class checks, cosine similarities (see the file comment). */
export class ClassTable {
  /** The rows [numClasses · rowsPerClass, D], trainable. */
  readonly variable: tf.Variable<tf.Rank.R2>;
  readonly numClasses: number;
  readonly rowsPerClass: number;
  /** The embedding dimension D. */
  readonly dim: number;

  /**
   * `options.embeddingSize`, else `context.embeddingDim`, is D; neither given is an E_ARG error naming
   * `loss.embeddingSize`. `lossName` names the loss in errors.
   */
  constructor(
    private readonly lossName: string,
    options: ClassTableOptions,
    context: LossContext,
    rowsPerClass: number,
    init: ClassTableInit,
  ) {
    const dim = options.embeddingSize ?? context.embeddingDim;
    if (dim === undefined) {
      throw invalidParameterError('loss.embeddingSize', `the embedding dimension of the ${lossName} loss's class table (the model spec does not give it)`, undefined);
    }
    this.numClasses = options.numClasses;
    this.rowsPerClass = rowsPerClass;
    this.dim = dim;
    const rows = options.numClasses * rowsPerClass;
    const rng = new Rng(options.seed);
    const values = new Float32Array(rows * dim);
    if (init === 'kaiming-uniform') {
      const bound = 1 / Math.sqrt(rows);
      for (let i = 0; i < values.length; i++) values[i] = (2 * rng.next() - 1) * bound;
    } else {
      const std = init === 'normal' ? 1 : Math.sqrt(2 / rows);
      for (let i = 0; i < values.length; i++) values[i] = std * rng.nextGaussian();
    }
    this.variable = tf.variable(tf.tensor2d(values, [rows, dim]), true);
  }

  /** Throws before training when the training set has more classes than the table: names the first label without a row. */
  checkTrainingLabels(labelNames: readonly string[]): void {
    if (labelNames.length <= this.numClasses) return;
    throw new DmlError(
      'E_ARG',
      `Expected at most ${this.numClasses} training classes for loss.numClasses (the ${this.lossName} loss's class table) but the training data has ${labelNames.length}: label ${JSON.stringify(labelNames[this.numClasses])} (class ${this.numClasses}) is not in the table; set loss.numClasses to ${labelNames.length}`,
    );
  }

  /** Throws unless every label is a class index in [0, numClasses), naming the first that is not. */
  checkLabels(labels: Int32Array, embeddings: tf.Tensor2D): void {
    if (embeddings.shape[1] !== this.dim) {
      throw invalidParameterError('loss.embeddingSize', `the embeddings' dimension ${embeddings.shape[1]} (the ${this.lossName} loss's class table has ${this.dim})`, this.dim);
    }
    for (let i = 0; i < labels.length; i++) {
      if (labels[i]! < 0 || labels[i]! >= this.numClasses) {
        throw invalidParameterError(`labels[${i}]`, `a class index in [0, ${this.numClasses}) (the ${this.lossName} loss's numClasses)`, labels[i]);
      }
    }
  }

  /** The L2-normalised rows [rows, D], on the gradient tape. */
  normalizedRows(): tf.Tensor2D {
    return normalizeEmbeddings(this.variable);
  }

  /** Cosine similarities [B, rows] of L2-normalised embeddings [B, D] with every row. */
  cosines(embeddings: tf.Tensor2D): tf.Tensor2D {
    return tf.matMul(embeddings, this.normalizedRows(), false, true);
  }

  /** The labels as one-hot rows [B, numClasses] (a constant). */
  oneHot(labels: Int32Array): tf.Tensor2D {
    return oneHotRows(labels, this.numClasses);
  }
}
