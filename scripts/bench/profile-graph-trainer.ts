/**
 * @file Where a graph-trainer step spends its time, for one network: the training forward run with
 * and without its saved activations fetched (what carrying them to the step run costs), the step run
 * (backward and Adam), and the network's inference graph for comparison; with `--profile DIR`,
 * onnxruntime's per-node profiles of both training graphs and, per graph: kernel time by operator type,
 * the 20 slowest nodes, the nodes each execution provider ran (on `--device webgpu`, the ones on
 * `CPUExecutionProvider` fell back to the CPU) and the device <-> host copies onnxruntime put inside the
 * run (Memcpy nodes). On the CPU the training graphs are compiled with the blocked convolutions the
 * graph trainer uses there (lib/engine/autodiff/rules/blocked-convolution.ts); `--plain-convolutions`
 * compiles ONNX's Conv instead, for comparison.
 *
 *   npx tsx scripts/bench/profile-graph-trainer.ts [--model recipe-r | FILE.onnx] [--batch 128] [--size 64] [--runs 6] [--threads N[,N...]] [--device cpu|webgpu] [--plain-convolutions] [--profile DIR]
 *
 * With several thread counts (`--threads 1,2` here; `2,4,8,16` on a 16-core machine), everything runs
 * once per count (the sessions opened with that many intra-op threads, profiled into DIR/tN, or a
 * temporary folder without `--profile`), and a last table gives each operator type's kernel time per
 * count and its speed-up from the first count to the last: the operators onnxruntime runs on one
 * thread are the ones whose time does not fall.
 *
 * `recipe-r` is dmlkit's `convnet` built as Recipe R's network (NHWC input, as the onnx backend trains
 * it); an ONNX file is a PyTorch export with an NCHW input `[batch, 3, size, size]` (see
 * scripts/reference/export_torchvision.py). Inputs are seeded noise. Medians over `--runs`. `--device` is
 * the execution provider of the three sessions (default cpu).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { readOnnxGraph } from '../../lib/engine/graph/onnx-ir.js';
import { nchwcBlockSize } from '../../lib/onnx/nchwc.js';
import { createGraphOptimizer } from '../../lib/engine/graph-trainer/optimizer-graph.js';
import { compileStep, defaultTrainedInitializers } from '../../lib/engine/graph-trainer/step-graph.js';
import { convertLayersModel } from '../../lib/engine/tfjs/tfjs-to-onnx.js';
import { encodeModel } from '../../lib/onnx/builder.js';
import ort from '../../lib/onnx/ort.js';
import { buildModel } from '../../lib/train/models/build-model.js';
import { Rng } from '../../lib/util/rng.js';

function argument(flag: string, fallback: string): string {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;

async function main(): Promise<void> {
  const which = argument('--model', 'recipe-r');
  const batch = Number(argument('--batch', '128'));
  const size = Number(argument('--size', '64'));
  const runs = Number(argument('--runs', '6'));
  const threadCounts = argument('--threads', '') === '' ? [undefined] : argument('--threads', '').split(',').map(Number);
  const scaling = threadCounts.length > 1;
  const temporary = argument('--profile', '') === '' && scaling ? mkdtempSync(path.join(os.tmpdir(), 'dml-profile-graph-trainer-')) : undefined;
  const profileRoot = temporary ?? argument('--profile', '');
  const device = argument('--device', 'cpu');
  await tf.setBackend('cpu');
  let bytes: Uint8Array;
  let inference: Uint8Array;
  let itemDims: number[];
  if (which === 'recipe-r') {
    const model = await buildModel({ kind: 'convnet', inputShape: [size, size, 3], widths: [32, 64, 128], depth: 2, poolBatchNorm: true, embeddingDim: 128 }, 0);
    const parts = (layout: 'NHWC' | 'NCHW'): Uint8Array => {
      const c = convertLayersModel(model, { layout, inputName: 'input' });
      return encodeModel({ graphName: 'recipe_r', inputs: c.inputs, outputs: c.outputs, nodes: c.nodes, initializers: c.initializers });
    };
    bytes = parts('NHWC');
    inference = parts('NCHW');
    itemDims = [size, size, 3];
  } else {
    bytes = readFileSync(which);
    inference = bytes;
    itemDims = [3, size, size];
  }
  const graph = readOnnxGraph(bytes, which);
  const nchwcBlock = device === 'cpu' && !process.argv.includes('--plain-convolutions') ? await nchwcBlockSize() : undefined;
  const compiled = compileStep({
    ...(nchwcBlock !== undefined ? { nchwcBlock } : {}),
    graph,
    inputDims: new Map([['input', [batch, ...itemDims]]]),
    trained: defaultTrainedInitializers(graph),
    decayed: new Set(),
    output: graph.outputs[0]?.name ?? 'embedding',
    optimizer: createGraphOptimizer({ kind: 'adam' }),
  });
  const measure = async (threads: number | undefined): Promise<Measured> => {
    const profileDir = profileRoot && scaling ? path.join(profileRoot, `t${threads}`) : profileRoot;
    if (profileDir) mkdirSync(profileDir, { recursive: true });
    const options = (prefix: string): ort.InferenceSession.SessionOptions => ({
      graphOptimizationLevel: prefix === 'inference' ? 'all' : 'extended', // as GraphTrainer runs its step graphs
      executionProviders: [device],
      ...(threads !== undefined ? { intraOpNumThreads: threads } : {}),
      ...(profileDir && prefix !== 'inference' ? { enableProfiling: true, profileFilePrefix: path.join(profileDir, prefix) } : {}),
    });
    const forward = await ort.InferenceSession.create(compiled.forwardModel, options('forward'));
    const step = await ort.InferenceSession.create(compiled.stepModel, options('step'));
    const infer = await ort.InferenceSession.create(inference, options('inference'));
    const rng = new Rng(0);
    const noise = (dims: readonly number[], scale: number, offset = 0): ort.Tensor =>
      new ort.Tensor('float32', Float32Array.from({ length: dims.reduce((a, b) => a * b, 1) }, () => offset + scale * rng.nextGaussian()), [...dims]);
    const value = (name: string, dims: readonly number[]): ort.Tensor => {
      const init = graph.initializers.get(name);
      return init ? new ort.Tensor('float32', Float32Array.from(init.data), [...dims]) : noise(dims, 0.01);
    };
    const x = noise([batch, ...itemDims], 1);
    const forwardFeeds: Record<string, ort.Tensor> = { input: x };
    for (const v of compiled.io.forwardVariables) forwardFeeds[v.input] = value(v.input, v.dims);
    const inferenceInput = which === 'recipe-r' ? noise([batch, 3, size, size], 1) : x;
    const times = { withSaved: [] as number[], outputOnly: [] as number[], step: [] as number[], inference: [] as number[] };
    let savedBytes = 0;
    for (let run = 0; run < runs; run++) {
      let start = performance.now();
      const outputs = await forward.run(forwardFeeds);
      times.withSaved.push(performance.now() - start);
      savedBytes = compiled.io.saved.reduce((sum, name) => sum + ((outputs[name] as ort.Tensor).data as ArrayBufferView).byteLength, 0);
      start = performance.now();
      await forward.run(forwardFeeds, [compiled.io.output]);
      times.outputOnly.push(performance.now() - start);
      const stepFeeds: Record<string, ort.Tensor> = { [compiled.io.seed]: noise(compiled.io.outputDims, 0.01) };
      for (const v of compiled.io.variables) if (step.inputNames.includes(v.input)) stepFeeds[v.input] = value(v.input, v.dims);
      for (const name of Object.values(compiled.io.hyper)) stepFeeds[name] = new ort.Tensor('float32', Float32Array.of(0.5), []);
      for (const name of compiled.io.saved) stepFeeds[name] = outputs[name] as ort.Tensor;
      for (const name of compiled.io.stepData) stepFeeds[name] = x;
      start = performance.now();
      await step.run(stepFeeds);
      times.step.push(performance.now() - start);
      start = performance.now();
      await infer.run({ [infer.inputNames[0] as string]: inferenceInput });
      times.inference.push(performance.now() - start);
    }
    console.log(`${which}, batch ${batch}, ${size} px, ${device} provider, ${threads ?? "onnxruntime's default"} intra-op threads, ${nchwcBlock !== undefined ? `blocked convolutions (NCHW${nchwcBlock}c)` : 'ONNX Conv'}, median of ${runs} runs (ms):`);
    console.log(`  training forward, saved activations fetched: ${median(times.withSaved).toFixed(0)} (${compiled.io.saved.length} tensors, ${(savedBytes / 1e6).toFixed(0)} MB)`);
    console.log(`  training forward, output only:               ${median(times.outputOnly).toFixed(0)}`);
    console.log(`  step (backward and Adam):                    ${median(times.step).toFixed(0)}`);
    console.log(`  inference forward (BatchNorm folded):        ${median(times.inference).toFixed(0)}`);
    const result: Measured = { threads, forwardMs: median(times.outputOnly), stepMs: median(times.step), operators: {} };
    if (profileDir) {
      for (const [session, name] of [[forward, 'forward'], [step, 'step']] as const) {
        session.endProfiling();
        const file = readdirSync(profileDir).filter((f) => f.startsWith(`${name}_`)).sort().pop() as string;
        const events = JSON.parse(readFileSync(path.join(profileDir, file), 'utf8')) as ProfileEvent[];
        // The forward ran with and without its saved activations.
        const perRun = name === 'forward' ? 2 * runs : runs;
        result.operators[name] = operatorTimes(events, perRun);
        if (!scaling) for (const line of profileSummary(`${name} graph`, events, perRun)) console.log(line);
      }
    }
    await Promise.all([forward.release(), step.release(), infer.release()]);
    return result;
  };
  const measured: Measured[] = [];
  try {
    for (const threads of threadCounts) measured.push(await measure(threads));
  } finally {
    if (temporary !== undefined) rmSync(temporary, { recursive: true, force: true });
  }
  if (scaling) for (const line of scalingTable(measured)) console.log(line);
}

/** One thread count's medians and, when profiled, kernel milliseconds per run by operator type, per graph. */
interface Measured {
  threads: number | undefined;
  forwardMs: number;
  stepMs: number;
  operators: Partial<Record<'forward' | 'step', Map<string, number>>>;
}

/**
 * The thread-scaling table: wall times, then per graph each operator type's kernel time at every count
 * and its speed-up from the first count to the last (operators over 1 ms at the first count).
 */
function scalingTable(measured: readonly Measured[]): string[] {
  const counts = measured.map((m) => String(m.threads));
  const first = measured[0] as Measured;
  const last = measured[measured.length - 1] as Measured;
  const lines = [
    '',
    `thread scaling, ${counts.join(' -> ')} intra-op threads (ms; speed-up = first / last):`,
    `| | ${counts.join(' | ')} | speed-up |`,
    `| --- | ${counts.map(() => '---:').join(' | ')} | ---: |`,
    `| training forward, output only (wall) | ${measured.map((m) => m.forwardMs.toFixed(0)).join(' | ')} | ${(first.forwardMs / last.forwardMs).toFixed(2)} |`,
    `| step run (wall) | ${measured.map((m) => m.stepMs.toFixed(0)).join(' | ')} | ${(first.stepMs / last.stepMs).toFixed(2)} |`,
  ];
  for (const graph of ['forward', 'step'] as const) {
    const base = first.operators[graph];
    if (base === undefined) continue;
    const total = (m: Measured): number => [...(m.operators[graph]?.values() ?? [])].reduce((a, b) => a + b, 0);
    lines.push(`| ${graph} graph, all kernels | ${measured.map((m) => total(m).toFixed(1)).join(' | ')} | ${(total(first) / total(last)).toFixed(2)} |`);
    for (const [op, ms] of [...base].sort((a, b) => b[1] - a[1])) {
      if (ms < 1) continue;
      const at = (m: Measured): number => m.operators[graph]?.get(op) ?? 0;
      lines.push(`| ${graph}: ${op} | ${measured.map((m) => at(m).toFixed(1)).join(' | ')} | ${(ms / at(last)).toFixed(2)} |`);
    }
  }
  return lines;
}

/** One event of onnxruntime's profile (Chrome trace format). */
interface ProfileEvent {
  cat: string;
  name: string;
  dur: number;
  args?: { op_name?: string; provider?: string };
}

/** The kernel events of a profile (one per node and run). */
function kernelEvents(events: readonly ProfileEvent[]): ProfileEvent[] {
  return events.filter((e) => e.cat === 'Node' && e.name.endsWith('_kernel_time'));
}

/** Kernel milliseconds per run by operator type. */
function operatorTimes(events: readonly ProfileEvent[], runs: number): Map<string, number> {
  const byOperator = new Map<string, number>();
  for (const e of kernelEvents(events)) {
    const op = e.args?.op_name ?? '?';
    byOperator.set(op, (byOperator.get(op) ?? 0) + e.dur / 1000 / runs);
  }
  return byOperator;
}

/**
 * What a session's profile says, per run: kernel time by operator type, the 20 slowest nodes, how many
 * nodes each execution provider ran (a node on `CPUExecutionProvider` in a WebGPU session fell back to
 * the CPU) and the copies between the device and JavaScript memory onnxruntime inserted (`MemcpyToHost`,
 * `MemcpyFromHost` nodes).
 */
function profileSummary(title: string, events: readonly ProfileEvent[], runs: number): string[] {
  const byOperator = operatorTimes(events, runs);
  const byNode = new Map<string, { op: string; provider: string; ms: number }>();
  for (const e of kernelEvents(events)) {
    const op = e.args?.op_name ?? '?';
    const ms = e.dur / 1000 / runs;
    const node = e.name.slice(0, -'_kernel_time'.length);
    const entry = byNode.get(node) ?? { op, provider: e.args?.provider ?? '?', ms: 0 };
    entry.ms += ms;
    byNode.set(node, entry);
  }
  const providers = new Map<string, number>();
  for (const { provider } of byNode.values()) providers.set(provider, (providers.get(provider) ?? 0) + 1);
  const copies = [...byNode].filter(([, n]) => n.op.startsWith('Memcpy'));
  const total = [...byOperator.values()].reduce((a, b) => a + b, 0);
  return [
    `  ${title}: ${total.toFixed(1)} ms of kernels per run, ${byNode.size} nodes; by provider: ${[...providers].map(([p, n]) => `${p} ${n}`).join(', ')}`,
    `    by operator (ms per run): ${[...byOperator].sort((a, b) => b[1] - a[1]).map(([op, ms]) => `${op} ${ms.toFixed(1)}`).join(', ')}`,
    `    device <-> host copies inside the run: ${copies.length}${copies.length > 0 ? ` (${copies.map(([name, n]) => `${name} ${n.ms.toFixed(2)} ms`).join(', ')})` : ''}`,
    '    slowest nodes (ms per run, operator, provider):',
    ...[...byNode]
      .sort((a, b) => b[1].ms - a[1].ms)
      .slice(0, 20)
      .map(([name, n]) => `      ${n.ms.toFixed(2).padStart(8)}  ${n.op.padEnd(20)} ${n.provider.padEnd(24)} ${name}`),
  ];
}

await main();
