/**
 * @file Batch normalisation in training mode as one fused operation with its own gradient, for
 * backends that register the two kernels below (the ort-cpu backend does, batch-norm-kernels.ts).
 *
 * tfjs-layers' BatchNormalization computes the batch statistics with `tf.moments` and normalises with
 * `tf.batchNorm`; autodiff then differentiates both pieces separately: FusedBatchNorm's gradient
 * (with respect to x, mean, variance, scale and offset) and the moments' gradient back into x, about
 * forty passes over the activation map on the cpu backend, half of a strided-CNN training step. The
 * closed-form gradient needs two passes (Ioffe & Szegedy 2015, section 3). With M the number of
 * values per channel (every axis but the last), per channel c:
 *
 *   forward:  mean = Σx / M,  variance = Σ(x - mean)² / M,  s = 1 / sqrt(variance + epsilon),
 *             y = scale · (x - mean) · s + offset
 *   backward: dOffset = Σdy,  dScale = Σ dy · (x - mean) · s,
 *             dx = scale · s · (dy - dOffset / M - (x - mean) · s · dScale / M)
 *
 * The variance is the biased one (divided by M), as tfjs-layers and Keras use for both the
 * normalisation and the moving statistics.
 *
 * Kernels (inputs and outputs float32, channels on the last axis, parameters of shape [channels]):
 * - {@link BATCH_NORM_TRAINING_KERNEL}: inputs `x`, `scale`, `offset`; attribute `epsilon`; outputs
 *   `[y, mean, variance, inverseStd]`.
 * - {@link BATCH_NORM_TRAINING_GRAD_KERNEL}: inputs `dy`, `x`, `mean`, `inverseStd`, `scale`; outputs
 *   `[dx, dScale, dOffset]`.
 */
import * as tf from '@tensorflow/tfjs';

/** Kernel name of the fused forward pass in training mode. */
export const BATCH_NORM_TRAINING_KERNEL = 'DmlBatchNormTraining';

/** Kernel name of its gradient. */
export const BATCH_NORM_TRAINING_GRAD_KERNEL = 'DmlBatchNormTrainingGrad';

/** Whether the active backend registers both kernels, so that {@link batchNormInTraining} can run. */
export function hasFusedBatchNormTraining(): boolean {
  const backend = tf.getBackend();
  return tf.getKernel(BATCH_NORM_TRAINING_KERNEL, backend) !== undefined && tf.getKernel(BATCH_NORM_TRAINING_GRAD_KERNEL, backend) !== undefined;
}

/** The normalised batch and the batch statistics of {@link batchNormInTraining}. */
export interface BatchNormInTraining {
  /** scale · (x - mean) / sqrt(variance + epsilon) + offset, x's shape. */
  y: tf.Tensor;
  /** Per-channel mean over every axis but the last, [channels]. */
  mean: tf.Tensor1D;
  /** Per-channel biased variance, [channels]. */
  variance: tf.Tensor1D;
}

/**
 * Normalises `x` (float32, channels on the last axis) with its own batch statistics, differentiable
 * with respect to `x`, `scale` and `offset` through the closed-form gradient of the file comment.
 * Only on a backend for which {@link hasFusedBatchNormTraining} is true. `mean` and `variance` are not
 * on the gradient tape (the moving statistics they feed are not trained); the caller disposes them.
 */
export function batchNormInTraining(x: tf.Tensor, scale: tf.Tensor1D, offset: tf.Tensor1D, epsilon: number): BatchNormInTraining {
  let statistics: [tf.Tensor1D, tf.Tensor1D] | undefined;
  const normalise = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const [input, gamma, beta, save] = args as [tf.Tensor, tf.Tensor1D, tf.Tensor1D, tf.GradSaveFunc];
    const [y, mean, variance, inverseStd] = tf.engine().runKernel(BATCH_NORM_TRAINING_KERNEL, { x: input, scale: gamma, offset: beta }, { epsilon }) as [
      tf.Tensor,
      tf.Tensor1D,
      tf.Tensor1D,
      tf.Tensor1D,
    ];
    save([input, mean, inverseStd, gamma]);
    // The forward function runs inside a tidy: keep the statistics for the caller.
    statistics = [tf.keep(mean), tf.keep(variance)];
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [savedX, savedMean, savedInverseStd, savedScale] = saved as [tf.Tensor, tf.Tensor1D, tf.Tensor1D, tf.Tensor1D];
        return tf.engine().runKernel(BATCH_NORM_TRAINING_GRAD_KERNEL, { dy, x: savedX, mean: savedMean, inverseStd: savedInverseStd, scale: savedScale }, {}) as tf.Tensor[];
      },
    };
  });
  const y = normalise(x, scale, offset);
  const [mean, variance] = statistics as [tf.Tensor1D, tf.Tensor1D];
  return { y, mean, variance };
}
