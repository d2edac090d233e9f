/**
 * @file WebGPU against CPU parity on the ONNX models the project ships and its specs load from disk
 * (`models/*.onnx`, `spec/fixtures/**\/*.onnx`), plus any model paths given: each model runs on seeded
 * random inputs (symbolic dimensions set to the batch size) with the CPU and the WebGPU execution
 * providers; 2-D float outputs are compared as L2-normalised rows (how dmlkit uses embeddings), other
 * float outputs as they are. Passes when every max absolute difference is <= the tolerance.
 *
 *   node dist/scripts/tools/check-webgpu-parity.js [--batch 8] [--tolerance 1e-4] [extra.onnx ...]
 *
 * Needs a machine where WebGPU loads (a GPU with a Vulkan driver on Linux); elsewhere it says why WebGPU
 * could not be created and exits 2. Exit 1 when a difference exceeds the tolerance.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { normalizeRowsInPlace } from '../../lib/embed/normalize.js';
import { createSession, describeIo } from '../../lib/onnx/session.js';
import { Rng } from '../../lib/util/rng.js';

function onnxFilesUnder(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return onnxFilesUnder(full);
    return name.endsWith('.onnx') ? [full] : [];
  });
}

function parseArgs(argv: string[]): { batch: number; tolerance: number; extra: string[] } {
  const args = { batch: 8, tolerance: 1e-4, extra: [] as string[] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--batch') args.batch = Number(argv[++i]);
    else if (arg === '--tolerance') args.tolerance = Number(argv[++i]);
    else args.extra.push(arg);
  }
  return args;
}

async function main(): Promise<number> {
  const { batch, tolerance, extra } = parseArgs(process.argv.slice(2));
  const models = [...onnxFilesUnder('models'), ...onnxFilesUnder('spec/fixtures'), ...extra];
  let worst = 0;
  for (const model of models) {
    let cpu: ort.InferenceSession;
    try {
      cpu = (await createSession(model, { device: 'cpu' })).session;
    } catch (err) {
      console.log(`${model}: not a loadable model on cpu, skipped (${(err as Error).message})`);
      continue;
    }
    const gpu = (await createSession(model, { device: 'webgpu' }).catch((err: Error) => {
      console.log(`WebGPU unavailable: ${err.message}`);
      process.exit(2);
    })).session;
    const io = describeIo(cpu);
    const rng = new Rng(1);
    const feeds: Record<string, ort.Tensor> = {};
    for (const input of io.inputs) {
      const dims = input.shape.map((d) => (typeof d === 'number' ? d : batch));
      const size = dims.reduce((a, b) => a * b, 1);
      feeds[input.name] = new ort.Tensor('float32', Float32Array.from({ length: size }, () => rng.nextGaussian()), dims);
    }
    const [a, b] = [await cpu.run(feeds), await gpu.run(feeds)];
    for (const name of cpu.outputNames) {
      const x = a[name];
      const y = b[name];
      if (!(x?.data instanceof Float32Array) || !(y?.data instanceof Float32Array)) continue;
      const [u, v] = [x.data.slice(), y.data.slice()];
      if (x.dims.length === 2) {
        const [rows, dim] = x.dims as [number, number];
        normalizeRowsInPlace(u, rows, dim, `${model} (cpu)`, 0);
        normalizeRowsInPlace(v, rows, dim, `${model} (webgpu)`, 0);
      }
      let diff = 0;
      for (let i = 0; i < u.length; i++) diff = Math.max(diff, Math.abs((u[i] as number) - (v[i] as number)));
      worst = Math.max(worst, diff);
      console.log(`${model} output ${name} [${x.dims.join(', ')}]${x.dims.length === 2 ? ' (L2-normalised rows)' : ''}: max |cpu - webgpu| = ${diff.toExponential(2)}`);
    }
    await cpu.release();
    await gpu.release();
  }
  console.log(`worst difference ${worst.toExponential(2)}; tolerance ${tolerance}: ${worst <= tolerance ? 'PASS' : 'FAIL'}`);
  return worst <= tolerance ? 0 : 1;
}

process.exitCode = await main();
