/**
 * @file The memory of a graph-trainer step: for an ONNX network (NCHW image input) and each batch size,
 * a child process opens a GraphTrainer, takes `--steps` Adam steps (default 2: forward, a loss
 * gradient, step) on random images and reports its peak resident memory (`maxRSS`: the weights,
 * onnxruntime's arenas, the activations the backward needs, which leave the forward run and enter the
 * step run) and the last step's time (with `--steps 1` the first step's, which includes onnxruntime's
 * first-run allocations). With `--micro-batch M`, each batch runs in micro-batches of M items
 * (gradient accumulation, GraphTrainerOptions.microBatch). A child of its own per row, so that one
 * row's peak is not another's. On a GPU machine `--device webgpu` runs the graphs there; the peak GPU
 * memory is then read by the caller (scripts/gpu/graph-trainer-gpu.sh samples nvidia-smi).
 *
 *   npx tsx scripts/bench/step-memory.ts MODEL.onnx [--size 224] [--batches 4,8,16] [--micro-batch M] [--steps 2] [--device cpu] [--threads N] [--plain-convolutions]
 *
 * Prints one table row per batch size: peak RSS (MiB), the last step's seconds, and the slope and
 * intercept of the peak over the batch sizes without micro-batches (MiB per item, MiB), from which the
 * memory of a larger batch is extrapolated. `--plain-convolutions`: ONNX's Conv on the CPU instead of the
 * blocked convolutions (GraphTrainerOptions.blockedConvolutions). docs/graph-trainer.md has the numbers of ResNet-50.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { GraphTrainer } from '../../lib/engine/graph-trainer/graph-trainer.js';
import type { DeviceChoice } from '../../lib/onnx/devices.js';
import { Rng } from '../../lib/util/rng.js';

function argument(flag: string, fallback: string): string {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

/** What a child reports. */
interface Row {
  batch: number;
  microBatch: number | null;
  peakMiB: number;
  stepSeconds: number;
  provider: string;
}

/** `steps` steps of `batch` items in this process; prints the row as JSON. */
async function child(model: string, size: number, batch: number, steps: number, microBatch: number | undefined, device: DeviceChoice, threads: number | undefined): Promise<void> {
  const trainer = await GraphTrainer.create({
    model: new Uint8Array(readFileSync(model)),
    name: model,
    itemDims: [3, size, size],
    optimizer: { kind: 'adam' },
    device,
    ...(microBatch !== undefined ? { microBatch } : {}),
    ...(threads !== undefined ? { threads } : {}),
    blockedConvolutions: !process.argv.includes('--plain-convolutions'),
  });
  const rng = new Rng(0);
  const images = Float32Array.from({ length: batch * 3 * size * size }, () => rng.nextGaussian());
  let stepSeconds = 0;
  for (let step = 0; step < steps; step++) {
    const start = performance.now();
    const embeddings = await trainer.forward(images);
    await trainer.step(images, embeddings.map((e) => 0.01 * e), 1e-3);
    stepSeconds = (performance.now() - start) / 1000;
  }
  const row: Row = { batch, microBatch: microBatch ?? null, peakMiB: process.resourceUsage().maxRSS / 1024, stepSeconds, provider: trainer.provider ?? 'none' };
  console.log(JSON.stringify(row));
  await trainer.release();
}

async function main(): Promise<void> {
  const model = process.argv[2];
  if (model === undefined || model.startsWith('--')) throw new Error('usage: step-memory.ts MODEL.onnx [--size 224] [--batches 4,8,16] [--micro-batch M] [--steps 2] [--device cpu] [--threads N] [--plain-convolutions]');
  const size = Number(argument('--size', '224'));
  const microBatch = process.argv.includes('--micro-batch') ? Number(argument('--micro-batch', '0')) : undefined;
  const device = argument('--device', 'cpu') as DeviceChoice;
  const threads = process.argv.includes('--threads') ? Number(argument('--threads', '0')) : undefined;
  const steps = Number(argument('--steps', '2'));
  const childBatch = process.argv.includes('--child') ? Number(argument('--child', '0')) : undefined;
  if (childBatch !== undefined) return child(model, size, childBatch, steps, microBatch, device, threads);
  const script = fileURLToPath(import.meta.url);
  const loader = script.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const batches = argument('--batches', '4,8,16').split(',').map(Number);
  console.log(`Graph-trainer step memory: ${model}, ${size}x${size}x3, Adam, device ${device}${microBatch !== undefined ? `, micro-batches of ${microBatch}` : ''}, ${steps} step(s) each${process.argv.includes('--plain-convolutions') ? ', ONNX Conv' : ''}`);
  console.log('| batch | micro-batch | peak RSS (MiB) | s/step | provider |');
  console.log('|---|---|---|---|---|');
  const rows: Row[] = [];
  for (const batch of batches) {
    const out = execFileSync(process.execPath, ['--single-threaded-gc', ...loader, script, ...process.argv.slice(2), '--child', String(batch)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const row = JSON.parse(out.trim().split('\n').filter((l) => l.startsWith('{')).pop() ?? '{}') as Row;
    rows.push(row);
    console.log(`| ${row.batch} | ${row.microBatch ?? '-'} | ${row.peakMiB.toFixed(0)} | ${row.stepSeconds.toFixed(2)} | ${row.provider} |`);
  }
  const whole = rows.filter((r) => r.microBatch === null || r.microBatch >= r.batch);
  if (whole.length >= 2) {
    // Least squares of the peak over the batch size.
    const n = whole.length;
    const mx = whole.reduce((a, r) => a + r.batch, 0) / n;
    const my = whole.reduce((a, r) => a + r.peakMiB, 0) / n;
    const slope = whole.reduce((a, r) => a + (r.batch - mx) * (r.peakMiB - my), 0) / whole.reduce((a, r) => a + (r.batch - mx) ** 2, 0);
    console.log(`peak RSS ≈ ${(my - slope * mx).toFixed(0)} MiB + ${slope.toFixed(1)} MiB per item (least squares over batches ${whole.map((r) => r.batch).join(', ')})`);
  }
}

await main();
