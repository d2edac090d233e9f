/**
 * @file Builds an embedding model from its {@link ModelSpec} and a seed. The same spec and seed give
 * bit-identical initial weights: every initialiser seed is drawn, in layer order, from `new Rng(seed)`.
 */
import type * as tf from '@tensorflow/tfjs';
import { DmlError, invalidParameterError } from '../../errors.js';
import { parseSpec } from '../../util/parse-spec.js';
import { Rng } from '../../util/rng.js';
import { buildCnnModel } from './cnn.js';
import { buildConvnetModel } from './convnet.js';
import { buildMlpModel } from './mlp.js';
import { modelSpecSchema, type ModelSpec } from './model-spec.js';
import { buildTfjsBackboneModel } from './tfjs-backbone.js';

/**
 * Builds the model `spec` describes, after checking it with {@link modelSpecSchema} (defaults filled
 * in). Errors: E_ARG for a bad spec field, naming it; E_NOT_FOUND / E_MODEL from loading a backbone.
 */
export async function buildModel(spec: ModelSpec, seed: number): Promise<tf.LayersModel> {
  if (typeof spec !== 'object' || spec === null) throw invalidParameterError('model', 'an object', spec);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw invalidParameterError('seed', 'an integer in [0, 2^32)', seed);
  const resolved = parseSpec(modelSpecSchema, spec, 'model');
  const rng = new Rng(seed);
  try {
    switch (resolved.kind) {
      case 'mlp':
        return buildMlpModel(resolved, rng);
      case 'cnn':
        return buildCnnModel(resolved, rng);
      case 'convnet':
        return buildConvnetModel(resolved, rng);
      case 'tfjs-backbone':
        return await buildTfjsBackboneModel(resolved, rng);
      case 'onnx':
        throw new DmlError('E_ARG', 'model.kind "onnx" has no TensorFlow.js model: the graph trainer (backend "onnx") trains it as ONNX');
    }
  } catch (err) {
    // A layer too wide for one typed array (model.embeddingDim 1e9: "Invalid typed array length").
    if (err instanceof RangeError) {
      throw new DmlError('E_ARG', `model: a layer's weights cannot be allocated (${err.message}); lower model.embeddingDim (${'embeddingDim' in resolved ? resolved.embeddingDim : ''}) or the widths of its other layers`, { cause: err });
    }
    throw err;
  }
}
