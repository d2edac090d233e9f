/**
 * @file What the graph trainer's device checks (check-graph-trainer-device.ts, one step's raw graphs;
 * check-graph-trainer-steps.ts, a trajectory through GraphTrainer) share: their flags, the networks
 * they check and how a tensor on the device is compared with the CPU's.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { readOnnxGraph } from '../../lib/engine/graph/onnx-ir.js';
import { convertLayersModel } from '../../lib/engine/tfjs/tfjs-to-onnx.js';
import { encodeModel } from '../../lib/onnx/builder.js';
import { buildModel } from '../../lib/train/models/build-model.js';

/** The value after `flag` on the command line, or `fallback`. */
export function argument(flag: string, fallback: string): string {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

/**
 * The networks named on the command line (the arguments that are neither a flag nor the value of one
 * of `valueFlags`): `recipe-r` or ONNX files; default the graph trainer's PyTorch parity fixtures,
 * spec/fixtures/graph-trainer/&#42;/initial.onnx.
 */
export function networks(valueFlags: ReadonlySet<string>): string[] {
  const named = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !valueFlags.has(all[i - 1] ?? ''));
  if (named.length > 0) return named;
  const root = 'spec/fixtures/graph-trainer';
  return readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => path.join(root, d.name, 'initial.onnx'));
}

/**
 * The network's bytes and item dimensions: `recipe-r` is dmlkit's `convnet` built as Recipe R's
 * network (NHWC input, `size` px); an ONNX file has an NCHW input whose spatial size is fixed or `size`.
 */
export async function load(which: string, size: number): Promise<{ bytes: Uint8Array; itemDims: number[] }> {
  if (which === 'recipe-r') {
    await tf.setBackend('cpu');
    const model = await buildModel({ kind: 'convnet', inputShape: [size, size, 3], widths: [32, 64, 128], depth: 2, poolBatchNorm: true, embeddingDim: 128 }, 0);
    const c = convertLayersModel(model, { layout: 'NHWC', inputName: 'input' });
    return { bytes: encodeModel({ graphName: 'recipe_r', inputs: c.inputs, outputs: c.outputs, nodes: c.nodes, initializers: c.initializers }), itemDims: [size, size, 3] };
  }
  const bytes = new Uint8Array(readFileSync(which));
  const input = readOnnxGraph(bytes, which).inputs[0];
  const dims = (input?.dims ?? []).slice(1).map((d) => (typeof d === 'number' && d > 0 ? d : size));
  return { bytes, itemDims: dims.length === 3 ? dims : [3, size, size] };
}

/** How far a tensor on the device is from the CPU's: the largest |device - cpu| (Infinity for a NaN) and the largest |cpu|. */
export interface Difference {
  name: string;
  diff: number;
  scale: number;
}

/** Tensor `name` on the CPU (`cpu`) and on the device (`device`), compared element by element (one missing on the device counts as NaN). */
export function compare(name: string, cpu: Float32Array, device: Float32Array): Difference {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < cpu.length; i++) {
    const d = Math.abs((cpu[i] as number) - (device[i] as number));
    diff = Number.isNaN(d) ? Infinity : Math.max(diff, d);
    scale = Math.max(scale, Math.abs(cpu[i] as number));
  }
  return { name, diff, scale };
}

/** The largest |device - cpu| over the largest |cpu| (1e-6 at least): a tensor passes when this is at most the tolerance. */
export function relativeDifference(d: Difference): number {
  return d.diff / Math.max(d.scale, 1e-6);
}
