/**
 * @file (a) A linear or MLP embedding head on precomputed feature vectors: input [inputDim], then
 * the head of head.ts. With `hidden: []` it is one Dense layer plus L2 normalisation.
 */
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../util/rng.js';
import { appendHead } from './head.js';
import type { ResolvedSpecOf } from './model-spec.js';

/** Builds the model of the (checked) `spec`; initialiser seeds come from `rng`. */
export function buildMlpModel(spec: ResolvedSpecOf<'mlp'>, rng: Rng): tf.LayersModel {
  const { inputDim, hidden, embeddingDim, activation, batchNorm } = spec;
  const head = { hidden, embeddingDim, activation, batchNorm };
  const input = tf.input({ name: 'features', shape: [inputDim] });
  return tf.model({ name: 'mlp_embedder', inputs: input, outputs: appendHead(input, head, rng) });
}
