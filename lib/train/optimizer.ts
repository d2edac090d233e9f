/**
 * @file Optimisers for the trainer: SGD, SGD with momentum and Adam from TensorFlow.js, a step-wise
 * learning-rate schedule (multiply by gamma after each milestone epoch) and decoupled weight decay.
 *
 * tfjs optimisers have no weight decay (STACK.md section 3), so it is applied after each step as
 * w <- w * (1 - lr * weightDecay) on kernels only (SGDW / AdamW style, Loshchilov & Hutter).
 */
import * as tf from '@tensorflow/tfjs';
import type { TrainConfig } from './config.js';

type OptimizerConfig = TrainConfig['optimizer'];

/** Learning rate in effect during `epoch` (0-based): lr * gamma^(milestones <= epoch). */
export function learningRateAt(config: OptimizerConfig, epoch: number): number {
  const passed = config.milestones.filter((m) => m <= epoch).length;
  return config.learningRate * config.gamma ** passed;
}

/** A fresh optimiser of the configured kind at learning rate `lr`. */
export function createOptimizer(config: OptimizerConfig, lr: number): tf.Optimizer {
  switch (config.kind) {
    case 'sgd':
      return tf.train.sgd(lr);
    case 'momentum':
      return tf.train.momentum(lr, config.momentum);
    case 'adam':
      return tf.train.adam(lr);
  }
}

/**
 * An optimiser like `optimizer` at learning rate `lr`. tfjs keeps the rate private (only SGD has a
 * setter), so a new optimiser of the same kind is made and the old one's state (moments, step count)
 * copied into it; the old one is disposed.
 */
export async function withLearningRate(optimizer: tf.Optimizer, config: OptimizerConfig, lr: number): Promise<tf.Optimizer> {
  const next = createOptimizer(config, lr);
  const weights = await optimizer.getWeights();
  if (weights.length > 0) await next.setWeights(weights);
  optimizer.dispose();
  return next;
}

/** Multiplies every kernel in `kernels` by (1 - lr * decay). */
export function applyWeightDecay(kernels: readonly tf.Variable[], lr: number, decay: number): void {
  if (decay === 0) return;
  const factor = 1 - lr * decay;
  tf.tidy(() => {
    for (const v of kernels) v.assign(tf.mul(v, factor));
  });
}
