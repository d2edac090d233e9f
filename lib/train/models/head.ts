/**
 * @file The embedding head every model ends with: hidden Dense layers (each Dense without bias when
 * batch-normalised, then BatchNormalization, then the activation), a Dense to the embedding
 * dimension, and {@link L2Normalize}. Layer names are fixed (`head_dense_1`, `head_bn_1`,
 * `head_act_1`, ..., `head_embedding`, `head_l2norm`) so checkpoints and the exporter can find them.
 */
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../util/rng.js';
import { L2Normalize } from './l2-normalize.js';
import { kernelInitializer } from './seeded-init.js';
import { batchNormalization } from './training-batch-norm.js';
import type { Activation } from './model-spec.js';

/** A head with its defaults resolved. */
export interface ResolvedHead {
  hidden: number[];
  embeddingDim: number;
  activation: Activation;
  batchNorm: boolean;
}

/** Names of the layers {@link appendHead} creates for `head`. */
export function headLayerNames(head: ResolvedHead): string[] {
  const names: string[] = [];
  head.hidden.forEach((_, i) => {
    names.push(`head_dense_${i + 1}`);
    if (head.batchNorm) names.push(`head_bn_${i + 1}`);
    names.push(`head_act_${i + 1}`);
  });
  names.push('head_embedding', 'head_l2norm');
  return names;
}

/** Applies the head to the 2-D symbolic tensor `x`, drawing initialiser seeds from `rng` in layer order. */
export function appendHead(x: tf.SymbolicTensor, head: ResolvedHead, rng: Rng): tf.SymbolicTensor {
  let y = x;
  head.hidden.forEach((units, i) => {
    y = tf.layers
      .dense({ name: `head_dense_${i + 1}`, units, useBias: !head.batchNorm, kernelInitializer: kernelInitializer(rng, head.activation) })
      .apply(y) as tf.SymbolicTensor;
    if (head.batchNorm) y = batchNormalization({ name: `head_bn_${i + 1}` }).apply(y) as tf.SymbolicTensor;
    y = tf.layers.activation({ name: `head_act_${i + 1}`, activation: head.activation }).apply(y) as tf.SymbolicTensor;
  });
  y = tf.layers
    .dense({ name: 'head_embedding', units: head.embeddingDim, kernelInitializer: kernelInitializer(rng, 'linear') })
    .apply(y) as tf.SymbolicTensor;
  return new L2Normalize({ name: 'head_l2norm' }).apply(y) as tf.SymbolicTensor;
}
