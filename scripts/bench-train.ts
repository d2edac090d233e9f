/**
 * @file Training-step benchmark: steps/s of a 2048 -> 512 embedding head (Dense + L2 normalisation,
 * the recipe-(c) head on ResNet-50-sized features) at batch 128 (32 classes x 4), with the EPHN loss
 * and Adam, on every TensorFlow.js backend that loads here (tfjs-node-gpu, tfjs-node, wasm, cpu).
 * Each backend runs in its own child process (a process holds one tfjs backend); each step is timed
 * (forward, loss, backward and the optimiser update, synchronised by reading the loss), after warm-up
 * steps, and the median is reported with the spread.
 *
 *   npx tsx scripts/bench-train.ts [--steps 30] [--warmup 3] [--batch 128] [--in 2048] [--out 512] [--hidden 0]
 *
 * Inputs are seeded random unit vectors; the numbers measure compute, not learning.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { selectBackend, type BackendChoice } from '../lib/train/backend.js';
import { createLoss } from '../lib/train/losses/registry.js';
import { buildModel } from '../lib/train/models/build-model.js';
import { createOptimizer } from '../lib/train/optimizer.js';
import { Rng } from '../lib/util/rng.js';

const BACKENDS: BackendChoice[] = ['tfjs-node-gpu', 'tfjs-node', 'wasm', 'cpu'];

interface Args {
  steps: number;
  warmup: number;
  batch: number;
  inputDim: number;
  embeddingDim: number;
  hidden: number;
}

function parseArgs(argv: string[]): Args & { child?: BackendChoice } {
  const get = (flag: string, def: number): number => {
    const i = argv.indexOf(flag);
    return i >= 0 ? Number(argv[i + 1]) : def;
  };
  const c = argv.indexOf('--child');
  return {
    steps: get('--steps', 30),
    warmup: get('--warmup', 3),
    batch: get('--batch', 128),
    inputDim: get('--in', 2048),
    embeddingDim: get('--out', 512),
    hidden: get('--hidden', 0),
    ...(c >= 0 ? { child: argv[c + 1] as BackendChoice } : {}),
  };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/** Runs the benchmark on one backend and prints one JSON line. */
async function child(backend: BackendChoice, args: Args): Promise<void> {
  let selected;
  try {
    selected = await selectBackend(backend);
  } catch (err) {
    console.log(JSON.stringify({ backend, error: (err as Error).message }));
    return;
  }
  const model = await buildModel(
    { kind: 'mlp', inputDim: args.inputDim, hidden: args.hidden > 0 ? [args.hidden] : [], embeddingDim: args.embeddingDim },
    0,
  );
  const loss = createLoss({ name: 'ephn' });
  const optimizer = createOptimizer({ kind: 'adam', learningRate: 1e-3, momentum: 0.9, weightDecay: 0, milestones: [], gamma: 0.1 }, 1e-3);
  const rng = new Rng(0);
  const groupSize = 4;
  const labels = Int32Array.from({ length: args.batch }, (_, i) => Math.floor(i / groupSize));
  const inputs = Float32Array.from({ length: args.batch * args.inputDim }, () => rng.nextGaussian());
  const x = tf.tensor2d(inputs, [args.batch, args.inputDim]);
  const variables = model.trainableWeights.map((w) => w.read() as tf.Variable);
  const times: number[] = [];
  for (let step = 0; step < args.warmup + args.steps; step++) {
    const start = performance.now();
    const { value, grads } = tf.variableGrads(() => loss.compute(model.apply(x, { training: true }) as tf.Tensor2D, labels).loss, variables);
    optimizer.applyGradients(grads as Record<string, tf.Tensor>);
    await value.data();
    tf.dispose([value, grads]);
    if (step >= args.warmup) times.push(performance.now() - start);
  }
  const ms = median(times);
  console.log(
    JSON.stringify({
      backend,
      tfBackend: selected.tfBackend,
      note: selected.note ?? null,
      medianMs: ms,
      minMs: Math.min(...times),
      maxMs: Math.max(...times),
      stepsPerSecond: 1000 / ms,
      imagesPerSecond: (1000 / ms) * args.batch,
    }),
  );
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.child) return child(args.child, args);
  const script = fileURLToPath(import.meta.url);
  const head = `${args.inputDim} -> ${args.hidden > 0 ? `${args.hidden} -> ` : ''}${args.embeddingDim}`;
  console.log(`Training steps/s: head ${head} + L2, batch ${args.batch} (${args.batch / 4} classes x 4), EPHN, Adam; median of ${args.steps} steps after ${args.warmup} warm-up`);
  console.log('| backend | median ms/step (min-max) | steps/s | images/s |');
  console.log('|---|---|---|---|');
  for (const backend of BACKENDS) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', script, ...process.argv.slice(2), '--child', backend], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const line = out.trim().split('\n').filter((l) => l.startsWith('{')).pop() ?? '{}';
    const r = JSON.parse(line) as { error?: string; medianMs: number; minMs: number; maxMs: number; stepsPerSecond: number; imagesPerSecond: number; note: string | null };
    if (r.error !== undefined) {
      console.log(`| ${backend} | not available: ${r.error} | | |`);
      continue;
    }
    const note = r.note ? ` (${r.note})` : '';
    console.log(`| ${backend}${note} | ${r.medianMs.toFixed(1)} (${r.minMs.toFixed(1)}-${r.maxMs.toFixed(1)}) | ${r.stepsPerSecond.toFixed(2)} | ${r.imagesPerSecond.toFixed(0)} |`);
  }
}

await main();
