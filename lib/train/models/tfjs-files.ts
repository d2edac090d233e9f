/**
 * @file TensorFlow.js layers models as files, in pure tfjs (no tfjs-node `file://` handler):
 * {@link fileModelLoader} is an IOHandler that reads a `model.json` and the weight shards its
 * `weightsManifest` names (tensorflowjs_converter's layout: `modelTopology`, `weightsManifest:
 * [{paths, weights: [{name, shape, dtype, quantization?}]}]`, shards concatenated in manifest order),
 * and {@link layersModelFiles} serialises a model to the same layout with one shard, `weights.bin`.
 *
 * Shard paths must stay inside the model.json's folder. Only layers models load here: a graph model
 * (`format: graph-model`, from `--output_format=tfjs_graph_model`) has no layer topology to train.
 */
import { fileReadError, readRegular } from '../../util/regular-file.js';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { DmlError } from '../../errors.js';
import './l2-normalize.js';

/** File name of the single weight shard {@link layersModelFiles} writes. */
export const WEIGHTS_FILE = 'weights.bin';

/** Bytes per element of a stored weight (after quantisation, when there is one). */
const BYTES_PER_ELEMENT: Readonly<Record<string, number>> = { float32: 4, int32: 4, bool: 1, uint8: 1, uint16: 2, float16: 2 };

function storedBytes(spec: tf.io.WeightsManifestEntry): number | undefined {
  const perElement = BYTES_PER_ELEMENT[spec.quantization?.dtype ?? spec.dtype];
  return perElement === undefined ? undefined : spec.shape.reduce((a, b) => a * b, 1) * perElement;
}

/** Parses and checks a model.json text; `file` names it in errors. */
export function parseModelJson(text: string, file: string): tf.io.ModelJSON {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new DmlError('E_MODEL', `${file}: not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  const obj = json as Partial<tf.io.ModelJSON> & { format?: unknown };
  if (typeof json !== 'object' || json === null) throw new DmlError('E_MODEL', `${file}: expected a JSON object with modelTopology and weightsManifest`);
  if (obj.format === 'graph-model') {
    throw new DmlError('E_MODEL', `${file} is a TensorFlow.js graph model, which cannot be trained; convert the model with tensorflowjs_converter --output_format=tfjs_layers_model`);
  }
  if (typeof obj.modelTopology !== 'object' || obj.modelTopology === null) throw new DmlError('E_MODEL', `${file}: no modelTopology; expected a TensorFlow.js layers model`);
  const manifest = obj.weightsManifest;
  const valid =
    Array.isArray(manifest) &&
    manifest.every(
      (g) =>
        Array.isArray(g?.paths) &&
        g.paths.every((p) => typeof p === 'string' && p.length > 0) &&
        Array.isArray(g.weights) &&
        g.weights.every((w) => typeof w?.name === 'string' && Array.isArray(w.shape) && typeof w.dtype === 'string'),
    );
  if (!valid) throw new DmlError('E_MODEL', `${file}: weightsManifest must be an array of {paths: string[], weights: [{name, shape, dtype}]}`);
  return obj as tf.io.ModelJSON;
}

/** Reads every shard of `manifest` (relative to `dir`) and concatenates them in manifest order. */
async function readWeights(dir: string, manifest: tf.io.WeightsManifestConfig, file: string): Promise<[tf.io.WeightsManifestEntry[], ArrayBuffer]> {
  const specs: tf.io.WeightsManifestEntry[] = [];
  const shards: Uint8Array[] = [];
  for (const group of manifest) {
    for (const rel of group.paths) {
      const shard = path.resolve(dir, rel);
      const inside = path.relative(dir, shard);
      if (path.isAbsolute(rel) || inside === '..' || inside.startsWith(`..${path.sep}`)) {
        throw new DmlError('E_MODEL', `${file}: weight shard path ${JSON.stringify(rel)} leaves the model's folder`);
      }
      try {
        shards.push(await readRegular(shard, 'weight shard'));
      } catch (err) {
        throw fileReadError('weight shard', shard, err);
      }
    }
    specs.push(...group.weights);
  }
  const total = shards.reduce((sum, s) => sum + s.length, 0);
  const sizes = specs.map(storedBytes);
  if (sizes.every((s) => s !== undefined)) {
    const expected = (sizes as number[]).reduce((a, b) => a + b, 0);
    if (expected !== total) {
      throw new DmlError('E_MODEL', `${file}: the weight shards hold ${total} bytes but the weightsManifest describes ${expected}`);
    }
  }
  const buffer = new Uint8Array(total);
  let offset = 0;
  for (const s of shards) {
    buffer.set(s, offset);
    offset += s.length;
  }
  return [specs, buffer.buffer];
}

/** An IOHandler that loads the layers model at `modelJsonPath` (and its shards) from disk. */
export function fileModelLoader(modelJsonPath: string): tf.io.IOHandler & { load(): Promise<tf.io.ModelArtifacts> } {
  return {
    async load(): Promise<tf.io.ModelArtifacts> {
      let text: string;
      try {
        text = (await readRegular(modelJsonPath, 'model')).toString('utf8');
      } catch (err) {
        throw fileReadError('model', modelJsonPath, err);
      }
      const json = parseModelJson(text, modelJsonPath);
      const dir = path.dirname(path.resolve(modelJsonPath));
      return tf.io.getModelArtifactsForJSON(json, (manifest) => readWeights(dir, manifest, modelJsonPath));
    },
  };
}

/**
 * Loads the layers model at `modelJsonPath`. Errors: E_NOT_FOUND for a missing file; E_MODEL for a
 * malformed model.json, shards that do not match the manifest, or a topology tfjs cannot build
 * (e.g. a Keras layer class tfjs does not implement).
 */
export async function loadLayersModelFromFile(modelJsonPath: string): Promise<tf.LayersModel> {
  return layersModelFromArtifacts(await fileModelLoader(modelJsonPath).load(), modelJsonPath);
}

/** Builds the layers model of `artifacts` (every weight required); `name` names the source in errors (E_MODEL). */
export async function layersModelFromArtifacts(artifacts: tf.io.ModelArtifacts, name: string): Promise<tf.LayersModel> {
  try {
    return await tf.loadLayersModel({ load: async () => artifacts }, { strict: true });
  } catch (err) {
    throw new DmlError('E_MODEL', `${name}: cannot build the model: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
}

/** The topology and weights of `model`, as tfjs's save path produces them. */
export async function modelArtifacts(model: tf.LayersModel): Promise<tf.io.ModelArtifacts> {
  let captured: tf.io.ModelArtifacts | undefined;
  await model.save({
    async save(artifacts) {
      captured = artifacts;
      return { modelArtifactsInfo: tf.io.getModelArtifactsInfoForJSON(artifacts) };
    },
  });
  return captured as tf.io.ModelArtifacts;
}

/** `model` serialised as the text of model.json and the bytes of its one shard, {@link WEIGHTS_FILE}. */
export async function layersModelFiles(model: tf.LayersModel): Promise<{ modelJson: string; weights: Uint8Array }> {
  const artifacts = await modelArtifacts(model);
  const json: tf.io.ModelJSON = {
    modelTopology: artifacts.modelTopology as {},
    format: artifacts.format ?? 'layers-model',
    generatedBy: artifacts.generatedBy ?? `TensorFlow.js tfjs-layers v${tf.version_layers}`,
    convertedBy: artifacts.convertedBy ?? null,
    weightsManifest: [{ paths: [WEIGHTS_FILE], weights: artifacts.weightSpecs ?? [] }],
    ...(artifacts.trainingConfig !== undefined ? { trainingConfig: artifacts.trainingConfig } : {}),
    ...(artifacts.userDefinedMetadata !== undefined ? { userDefinedMetadata: artifacts.userDefinedMetadata } : {}),
  };
  const data = artifacts.weightData;
  const weights = data === undefined ? new Uint8Array(0) : new Uint8Array(tf.io.CompositeArrayBuffer.join(data));
  return { modelJson: JSON.stringify(json), weights };
}
