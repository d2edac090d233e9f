/**
 * @file A tiny image embedder whose weights live in an external data file, as `onnx.save(...,
 * save_as_external_data=True)` writes it: input `pixel_values` [batch, 1, 28, 28] (the geometry of
 * data/default), Flatten, MatMul by a 784 x 8 weight stored in `<data file>`, output `embeds` [batch, 8].
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { encodeModel, node, tensorValueInfo, type TensorProto } from '../../lib/onnx/builder.js';
import { Rng } from '../../lib/util/rng.js';

/** The weights of seed `seed`, as the data file holds them (float32, little-endian). */
export function externalWeights(seed: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: 784 * 8 }, () => rng.nextGaussian());
}

/**
 * Writes `<dir>/<name>` and its data file `<dir>/<location>` holding the weights of `seed`. The
 * model's metadata gives its preprocessing, so no default is used. Returns the model's path.
 */
export function writeExternalDataModel(dir: string, seed: number, name = 'model.onnx', location = 'model.onnx_data'): string {
  const weights = externalWeights(seed);
  const tensor: TensorProto = {
    name: 'w',
    dims: [784, 8],
    dataType: 1,
    dataLocation: 1,
    externalData: [
      { key: 'location', value: location },
      { key: 'offset', value: '0' },
      { key: 'length', value: String(weights.byteLength) },
    ],
  };
  const bytes = encodeModel({
    graphName: 'external',
    inputs: [tensorValueInfo('pixel_values', 'float32', ['batch', 1, 28, 28])],
    outputs: [tensorValueInfo('embeds', 'float32', ['batch', 8])],
    initializers: [tensor],
    nodes: [node('Flatten', ['pixel_values'], ['flat'], { axis: { i: 1 } }), node('MatMul', ['flat', 'w'], ['embeds'])],
    metadata: { 'dml.preprocessing': JSON.stringify({ height: 28, width: 28, resizeShorter: 28, channels: 1, layout: 'NCHW', mean: [0], std: [1] }) },
  });
  const file = path.join(dir, name);
  writeFileSync(file, bytes);
  mkdirSync(path.dirname(path.join(dir, location)), { recursive: true });
  writeFileSync(path.join(dir, location), new Uint8Array(weights.buffer));
  return file;
}
