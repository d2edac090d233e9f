/**
 * @file (a) A linear or MLP embedding head on precomputed feature vectors: input [inputDim], then
 * the head of head.ts. With `hidden: []` it is one Dense layer plus L2 normalisation.
 */
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../util/rng.js';
import { appendHead } from './head.js';
import { activationOf, booleanOf, positiveIntegers, type MlpModelSpec } from './model-spec.js';
import { checkPositiveInteger } from '../../util/check.js';

/** Builds the model of `spec`; initialiser seeds come from `rng`. */
export function buildMlpModel(spec: MlpModelSpec, rng: Rng): tf.LayersModel {
  const inputDim = checkPositiveInteger('model.inputDim', spec.inputDim);
  const head = {
    hidden: positiveIntegers('model.hidden', spec.hidden),
    embeddingDim: checkPositiveInteger('model.embeddingDim', spec.embeddingDim),
    activation: activationOf('model.activation', spec.activation),
    batchNorm: booleanOf('model.batchNorm', spec.batchNorm, false),
  };
  const input = tf.input({ name: 'features', shape: [inputDim] });
  return tf.model({ name: 'mlp_embedder', inputs: input, outputs: appendHead(input, head, rng) });
}
