/**
 * @file The boundary β of the margin losses (Wu et al., "Sampling Matters in Deep Embedding
 * Learning", ICCV 2017): one scalar or one value per class (`β_{y_a}` for anchor a), constant or a
 * trainable variable optimised with the model. Per-class values are selected with a one-hot matMul,
 * not a gather (see similarity.ts `oneHotRows`).
 */
import * as tf from '@tensorflow/tfjs';
import { invalidParameterError } from '../../errors.js';
import { oneHotRows } from '../similarity.js';

/** β shared by all classes (`numClasses` null) or per class, learnt or constant. */
export class ClassBeta {
  /** The learnt β ([1] or [numClasses]), or none. */
  readonly variables: readonly tf.Variable[];
  private readonly variable: tf.Variable<tf.Rank.R1> | null;

  constructor(
    private readonly initial: number,
    learn: boolean,
    private readonly numClasses: number | null,
  ) {
    this.variable = learn ? tf.variable(tf.fill([numClasses ?? 1], initial) as tf.Tensor1D, true) : null;
    this.variables = this.variable === null ? [] : [this.variable];
  }

  /** Throws unless every label is a class index in [0, numClasses) (only when β is per class). */
  checkLabels(labels: Int32Array): void {
    if (this.numClasses === null) return;
    for (let i = 0; i < labels.length; i++) {
      if (labels[i]! < 0 || labels[i]! >= this.numClasses) {
        throw invalidParameterError(`labels[${i}]`, `a class index in [0, ${this.numClasses}) (the margin loss's numClasses)`, labels[i]);
      }
    }
  }

  /** The β values, [1] or [numClasses] (the variable when learnt). */
  values(): tf.Tensor1D {
    return this.variable ?? (tf.fill([this.numClasses ?? 1], this.initial) as tf.Tensor1D);
  }

  /** β of each row's class as [rows, 1], or the shared β as [1, 1] (broadcasts). */
  ofRows(labels: Int32Array): tf.Tensor2D {
    const values = this.values();
    return this.numClasses === null
      ? tf.reshape(values, [1, 1])
      : tf.matMul(oneHotRows(labels, this.numClasses), tf.reshape(values, [this.numClasses, 1]));
  }
}
