/**
 * @file (d) Any TensorFlow.js layers model (model.json + shards, e.g. a Keras ResNet50 or MobileNetV2
 * converted with tensorflowjs_converter) as a backbone with a new embedding head.
 *
 * The backbone's feature is its output, or the output of `outputLayer` (use it to cut off a
 * classifier, e.g. `avg_pool` of a Keras ResNet50 saved with its top). A 4-D (NHWC) feature map is
 * reduced by global average (or max) pooling (`head_pool`), a 3-D one ([N, steps, C]) likewise over
 * its steps; then the head of head.ts follows. The backbone's layers are reused as they are (their
 * weights come from the file; only the head is initialised from the seed) and are frozen when
 * `trainBackbone` is false.
 *
 * Preprocessing is the backbone's own convention (Keras ResNet50 expects BGR with ImageNet mean
 * subtracted, MobileNetV2 values in [-1, 1]); the model does not know it, so the training config must
 * state it.
 */
import * as tf from '@tensorflow/tfjs';
import { DmlError, invalidParameterError } from '../../errors.js';
import type { Rng } from '../../util/rng.js';
import { appendHead, headLayerNames } from './head.js';
import type { ResolvedSpecOf } from './model-spec.js';
import { loadLayersModelFromFile } from './tfjs-files.js';

/** Loads the backbone of the (checked) `spec` and builds backbone + head; head initialiser seeds come from `rng`. */
export async function buildTfjsBackboneModel(spec: ResolvedSpecOf<'tfjs-backbone'>, rng: Rng): Promise<tf.LayersModel> {
  const { pooling, hidden, embeddingDim, activation, batchNorm, trainBackbone } = spec;
  const head = { hidden, embeddingDim, activation, batchNorm };

  const backbone = await loadLayersModelFromFile(spec.modelJson);
  if (backbone.inputs.length !== 1) {
    throw new DmlError('E_MODEL', `${spec.modelJson}: expected a backbone with one image input but it has ${backbone.inputs.length}`);
  }
  let feature: tf.SymbolicTensor;
  if (spec.outputLayer !== undefined) {
    const names = backbone.layers.map((l) => l.name);
    if (!names.includes(spec.outputLayer)) {
      const listed = names.length <= 8 ? names.join(', ') : `..., ${names.slice(-6).join(', ')}`;
      throw invalidParameterError('model.outputLayer', `a layer of ${spec.modelJson} (${listed})`, spec.outputLayer);
    }
    const out = backbone.getLayer(spec.outputLayer).output;
    if (Array.isArray(out)) throw new DmlError('E_MODEL', `${spec.modelJson}: layer ${spec.outputLayer} has ${out.length} outputs; expected one`);
    feature = out;
  } else {
    if (backbone.outputs.length !== 1) {
      throw new DmlError('E_MODEL', `${spec.modelJson}: the model has ${backbone.outputs.length} outputs; name the feature layer with outputLayer`);
    }
    feature = backbone.outputs[0] as tf.SymbolicTensor;
  }

  const taken = new Set(backbone.layers.map((l) => l.name));
  const clash = ['head_pool', ...headLayerNames(head)].find((n) => taken.has(n));
  if (clash !== undefined) throw new DmlError('E_MODEL', `${spec.modelJson}: the backbone already has a layer named ${clash}, which the head needs`);

  const rank = feature.shape.length;
  if (rank === 4) {
    const layer = pooling === 'avg' ? tf.layers.globalAveragePooling2d({ name: 'head_pool' }) : tf.layers.globalMaxPooling2d({ name: 'head_pool' });
    feature = layer.apply(feature) as tf.SymbolicTensor;
  } else if (rank === 3) {
    const layer = pooling === 'avg' ? tf.layers.globalAveragePooling1d({ name: 'head_pool' }) : tf.layers.globalMaxPooling1d({ name: 'head_pool' });
    feature = layer.apply(feature) as tf.SymbolicTensor;
  } else if (rank !== 2) {
    throw new DmlError('E_MODEL', `${spec.modelJson}: the backbone feature has shape [${feature.shape.join(', ')}]; expected rank 2, 3 or 4`);
  }
  if (!trainBackbone) for (const layer of backbone.layers) layer.trainable = false;
  return tf.model({ name: 'backbone_embedder', inputs: backbone.inputs, outputs: appendHead(feature, head, rng) });
}
