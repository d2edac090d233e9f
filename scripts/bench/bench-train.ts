/**
 * @file Training-step benchmark, every TensorFlow.js backend that loads here and the graph trainer
 * (`onnx`, one onnxruntime graph per step on the CPU provider) in the same run (tfjs-node-gpu,
 * tfjs-node, ort-cpu, wasm, cpu, onnx), with each backend's speed-up over `cpu`:
 * - `head`: a 2048 -> 512 embedding head (Dense + L2 normalisation, the recipe-(c) head on
 *   ResNet-50-sized features) at batch 128 (32 classes x 4);
 * - `cnn`: the trainer's default small CNN on 28 x 28 x 1 images (conv 32 - pool - conv 64 - pool -
 *   Dense 128 - embedding 64, lib/train/models/cnn.ts) at batch 128;
 * - `cnn-bn`: the same CNN with `batchNorm: true` (batch norm after each convolution and the hidden
 *   Dense layer); not in the default `--models`;
 * - `convnet`: the compact strided CNN with its default widths and depth on 64 x 64 x 3 images (four
 *   stages of 3x3 stride-2 conv + batch norm + ReLU, 32 - 64 - 128 - 256 channels, global average
 *   pooling, embedding 64, lib/train/models/convnet.ts) at batch 128; not in the default `--models`, since a
 *   step takes seconds on ort-cpu and minutes on cpu;
 * - `recipe-r`: Recipe R's network (`convnet` widths 32-64-128, depth 2, max-pool downsampling,
 *   [average, max] pooling, pooled batch norm, embedding 128) on 64 x 64 x 3 at batch 128; not in the
 *   default `--models`;
 * - `resnet18`, `resnet50`: torchvision's ResNet-18 / ResNet-50 (random weights, classifier replaced by
 *   Linear(features -> 128) + L2) at 64 x 64 x 3 and 224 x 224 x 3 (`--image-size` changes both), exported
 *   by scripts/reference/export_torchvision.py: the graph trainer and PyTorch only (no TensorFlow.js model
 *   of them); need python3-torch and python3-torchvision; not in the default `--models`.
 * All use the EPHN loss and Adam, built as the trainer builds them (the fused optimiser on ort-cpu;
 * on `onnx` the loss and its gradient by TensorFlow.js's cpu backend, the step by the graph trainer).
 * Each backend runs in its own child process (a process holds one tfjs backend), started with the
 * Node flags the `dml` command runs with ({@link DML_NODE_FLAGS}); each step is timed
 * (forward, loss, backward and the optimiser update, synchronised by reading the loss) after warm-up
 * steps, and the median is reported with the spread. Where Debian's python3 has torch, the same
 * model, a loss of the same shape of work (EPHN, NCA form) and Adam are timed in PyTorch as a
 * reference (never a dependency of dmlkit).
 *
 *   npx tsx scripts/bench/bench-train.ts [--models head,cnn,cnn-bn,convnet,recipe-r,resnet18,resnet50] [--steps 20] [--cnn-steps 5]
 *     [--convnet-steps 3] [--warmup 2] [--batch 128] [--image-size N] [--backends ort-cpu,wasm,cpu,onnx]
 *     [--devices cpu,webgpu,cuda] [--graph-loss in-graph,tfjs] [--torch-devices cpu,cuda] [--child-seconds S] [--threads N]
 *     [--plain-convolutions]
 *
 * `--devices` gives the execution providers the graph trainer (`onnx`) is timed on, one row each (default
 * cpu); `--graph-loss` where its loss is computed, a row each: `in-graph` (the fused step, one run:
 * lib/train/graph-loss.ts) and `tfjs` (TensorFlow.js between the forward and the step runs), default both; `--torch-devices` the PyTorch reference's devices (default cpu; on `cuda`, float32 with TF32 off,
 * synchronised by reading the loss). The python it runs is `DML_PYTHON` (default /usr/bin/python3). The
 * compiled script (`node dist/scripts/bench/bench-train.js`, no TypeScript loader needed) runs the same way, as
 * on a GPU machine (scripts/gpu/graph-trainer-gpu.sh). `--child-seconds` stops a backend's run that takes
 * longer and reports it in its row. `--threads N` gives the graph trainer's sessions N intra-op threads and
 * PyTorch N threads (default: onnxruntime's default, which is not bound by `taskset`, and every core the
 * process may use for PyTorch); it does not change the TensorFlow.js backends. `--plain-convolutions`
 * compiles the graph trainer's CPU graphs with ONNX's Conv instead of onnxruntime's blocked convolutions
 * (GraphTrainerOptions.blockedConvolutions), for comparison.
 *
 * Inputs are seeded Gaussian noise; the numbers measure compute, not learning. Run it on a quiet
 * machine: onnxruntime's thread pool (all cores by default, DML_ORT_CPU_THREADS to change) slows down
 * a lot when another process holds a core.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import type { BackendChoice } from '../../lib/engine/tfjs/backend-registry.js';
import { missingKernels, modelKernels, selectBackend } from '../../lib/engine/tfjs/backend.js';
import { GraphTrainer } from '../../lib/engine/graph-trainer/graph-trainer.js';
import { graphLossOf } from '../../lib/train/losses/registry.js';
import { embeddingLossGradient, GraphNetwork } from '../../lib/train/graph-network.js';
import { createLoss } from '../../lib/train/losses/registry.js';
import { buildModel } from '../../lib/train/models/build-model.js';
import type { ModelSpec } from '../../lib/train/models/model-spec.js';
import { applyWeightDecay, appliesWeightDecay, createOptimizer, decayedVariables, FUSED_OPTIMIZER_BACKENDS } from '../../lib/train/optimizer.js';
import type { ExecutionProviderName } from '../../lib/onnx/devices.js';
import { Rng } from '../../lib/util/rng.js';

/** The flags of the `dml` command's shebang (bin/dml.ts), so that steps are timed as `dml train` runs them. */
const DML_NODE_FLAGS = ['--single-threaded-gc'];

/** A TensorFlow.js backend, or the graph trainer. */
type BenchBackend = BackendChoice | 'onnx';
const ALL_BACKENDS: BenchBackend[] = ['tfjs-node-gpu', 'tfjs-node', 'ort-cpu', 'wasm', 'cpu', 'onnx'];
type BenchModel = 'head' | 'cnn' | 'cnn-bn' | 'convnet' | 'recipe-r' | 'resnet18' | 'resnet50';
const BENCH_MODELS: readonly BenchModel[] = ['head', 'cnn', 'cnn-bn', 'convnet', 'recipe-r', 'resnet18', 'resnet50'];
/** The python that runs the PyTorch reference and the torchvision exports. */
const PYTHON = process.env.DML_PYTHON ?? '/usr/bin/python3';

interface Args {
  models: BenchModel[];
  steps: number;
  cnnSteps: number;
  convnetSteps: number;
  warmup: number;
  batch: number;
  /** Overrides the torchvision networks' image size. */
  imageSize: number | undefined;
  backends: BenchBackend[];
  /** The graph trainer's execution providers, one row each. */
  devices: ExecutionProviderName[];
  /** Where the graph trainer's loss runs, one row each. */
  graphLoss: GraphLossPlace[];
  torchDevices: Array<'cpu' | 'cuda'>;
  /** A backend's run longer than this (seconds) is stopped and reported; no limit when 0. */
  childSeconds: number;
  /** The graph trainer's intra-op threads and PyTorch's threads; onnxruntime's default and every core when absent. */
  threads: number | undefined;
  /** The graph trainer without the CPU's blocked convolutions. */
  plainConvolutions: boolean;
}

function argument(argv: string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i >= 0 ? argv[i + 1] : undefined;
}

/** Where the graph trainer's loss runs: in the fused step graph, or by TensorFlow.js between two runs. */
type GraphLossPlace = 'in-graph' | 'tfjs';

function parseArgs(argv: string[]): Args & { child?: { backend: BenchBackend; model: BenchModel; device: ExecutionProviderName; place: GraphLossPlace } } {
  const number = (flag: string, fallback: number): number => Number(argument(argv, flag) ?? fallback);
  const child = argument(argv, '--child');
  const models = (argument(argv, '--models') ?? 'head,cnn').split(',') as BenchModel[];
  const unknown = models.filter((m) => !BENCH_MODELS.includes(m));
  if (unknown.length > 0) throw new Error(`--models: unknown ${unknown.join(', ')}; choose from ${BENCH_MODELS.join(', ')}`);
  return {
    models,
    steps: number('--steps', 20),
    cnnSteps: number('--cnn-steps', 5),
    convnetSteps: number('--convnet-steps', 3),
    warmup: number('--warmup', 2),
    batch: number('--batch', 128),
    imageSize: argument(argv, '--image-size') === undefined ? undefined : number('--image-size', 0),
    backends: (argument(argv, '--backends')?.split(',') as BenchBackend[] | undefined) ?? ALL_BACKENDS,
    devices: (argument(argv, '--devices') ?? 'cpu').split(',') as ExecutionProviderName[],
    graphLoss: (argument(argv, '--graph-loss') ?? 'in-graph,tfjs').split(',') as GraphLossPlace[],
    torchDevices: (argument(argv, '--torch-devices') ?? 'cpu').split(',') as Array<'cpu' | 'cuda'>,
    childSeconds: number('--child-seconds', 0),
    threads: argument(argv, '--threads') === undefined ? undefined : number('--threads', 0),
    plainConvolutions: argv.includes('--plain-convolutions'),
    ...(child
      ? { child: { backend: child.split(':')[0] as BenchBackend, model: child.split(':')[1] as BenchModel, device: (child.split(':')[2] ?? 'cpu') as ExecutionProviderName, place: (child.split(':')[3] ?? 'tfjs') as GraphLossPlace } }
      : {}),
  };
}

/** The PyTorch-exported networks (no TensorFlow.js model): the graph trainer and PyTorch only. */
const ONNX_MODELS: Partial<Record<BenchModel, { arch: string; size: number; title: string }>> = {
  resnet18: { arch: 'resnet18', size: 64, title: "torchvision's ResNet-18, Linear(512 -> 128) + L2" },
  resnet50: { arch: 'resnet50', size: 224, title: "torchvision's ResNet-50, Linear(2048 -> 128) + L2" },
};

/** A torchvision network's architecture and image size, `--image-size` applied. */
function exportedModel(which: BenchModel, args: Args): { arch: string; size: number; title: string } | undefined {
  const exported = ONNX_MODELS[which];
  if (!exported) return undefined;
  const size = args.imageSize ?? exported.size;
  return { arch: exported.arch, size, title: `${exported.title}, ${size}x${size}x3` };
}

const MODELS: Record<Exclude<BenchModel, 'resnet18' | 'resnet50'>, { spec: ModelSpec; inputShape: number[]; title: string }> = {
  head: { spec: { kind: 'mlp', inputDim: 2048, hidden: [], embeddingDim: 512 }, inputShape: [2048], title: 'head 2048 -> 512 + L2' },
  cnn: {
    spec: { kind: 'cnn', inputShape: [28, 28, 1], filters: [32, 64], hidden: [128], embeddingDim: 64 },
    inputShape: [28, 28, 1],
    title: 'small CNN 28x28x1: conv32-pool-conv64-pool-128-64 + L2',
  },
  'cnn-bn': {
    spec: { kind: 'cnn', inputShape: [28, 28, 1], filters: [32, 64], hidden: [128], embeddingDim: 64, batchNorm: true },
    inputShape: [28, 28, 1],
    title: 'small CNN with batch norm 28x28x1: conv32-BN-pool-conv64-BN-pool-128-BN-64 + L2',
  },
  convnet: {
    spec: { kind: 'convnet', inputShape: [64, 64, 3], embeddingDim: 64, downsample: 'stride', pooling: 'avg' },
    inputShape: [64, 64, 3],
    title: 'convnet 64x64x3: 4 x (3x3 stride-2 conv + BN + ReLU) 32-64-128-256, GAP, 64 + L2',
  },
  'recipe-r': {
    spec: { kind: 'convnet', inputShape: [64, 64, 3], widths: [32, 64, 128], depth: 2, poolBatchNorm: true, embeddingDim: 128 },
    inputShape: [64, 64, 3],
    title: "Recipe R's network 64x64x3: conv_bn 32 (stride 2), 32, pool, 64, 64, pool, 128, 128, [GAP, GMP], BN, 128 + L2",
  },
};

/** Timed steps of `which`. */
function stepsOf(which: BenchModel, args: Args): number {
  return which === 'cnn' || which === 'cnn-bn' ? args.cnnSteps : which === 'convnet' || which === 'recipe-r' || which in ONNX_MODELS ? args.convnetSteps : args.steps;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

interface Timing {
  medianMs: number;
  minMs: number;
  maxMs: number;
}

/** Runs one model on one backend and prints one JSON line. */
async function child(backend: BenchBackend, which: BenchModel, device: ExecutionProviderName, place: GraphLossPlace, args: Args): Promise<void> {
  let selected;
  try {
    // The graph trainer's loss runs on TensorFlow.js's cpu backend (a [batch, dim] matrix).
    selected = await selectBackend(backend === 'onnx' ? 'cpu' : backend);
    if (backend !== 'onnx' && selected.name !== backend) throw new Error(selected.warning ?? `got ${selected.name}`);
  } catch (err) {
    console.log(JSON.stringify({ error: (err as Error).message.split('\n')[0] }));
    return;
  }
  const exported = exportedModel(which, args);
  if (exported) {
    if (backend !== 'onnx') {
      console.log(JSON.stringify({ error: 'a PyTorch-exported network: the graph trainer (onnx) only' }));
      return;
    }
    await onnxModelChild(exported, device, place, args);
    return;
  }
  const { spec, inputShape } = MODELS[which as keyof typeof MODELS];
  const model = await buildModel(spec, 0);
  const loss = createLoss({ name: 'ephn' });
  const config = { kind: 'adam' as const, learningRate: 1e-3, momentum: 0.9, weightDecay: 5e-4, milestones: [], gamma: 0.1 };
  const kernels = decayedVariables(model);
  const kernelNames = new Set(kernels.map((v) => v.name));
  const optimizer = createOptimizer(config, config.learningRate, { fused: FUSED_OPTIMIZER_BACKENDS.has(tf.getBackend()), decayed: (n) => kernelNames.has(n) });
  const rng = new Rng(0);
  const labels = Int32Array.from({ length: args.batch }, (_, i) => Math.floor(i / 4));
  const size = inputShape.reduce((a, b) => a * b, args.batch);
  const x = tf.tensor(Float32Array.from({ length: size }, () => rng.nextGaussian()), [args.batch, ...inputShape]);
  const variables = model.trainableWeights.map((w) => w.read() as tf.Variable);
  const steps = stepsOf(which, args);
  const times: number[] = [];
  if (backend === 'onnx') {
    const network = await GraphNetwork.create(model, { ...config, schedule: { kind: 'milestones' } }, device, undefined, place === 'in-graph' ? loss : undefined, undefined, { ...(args.threads !== undefined ? { threads: args.threads } : {}), blockedConvolutions: !args.plainConvolutions });
    for (let step = 0; step < args.warmup + steps; step++) {
      const start = performance.now();
      await network.trainBatch(x, labels, loss, optimizer, config.learningRate);
      if (step >= args.warmup) times.push(performance.now() - start);
    }
    console.log(JSON.stringify({ medianMs: median(times), minMs: Math.min(...times), maxMs: Math.max(...times), note: `graph trainer, ${network.trainer.provider} provider, loss ${place === 'in-graph' ? 'in the step graph' : 'by TensorFlow.js'}` }));
    return;
  }
  const missing = missingKernels(modelKernels(model, true));
  if (missing.length > 0) {
    console.log(JSON.stringify({ error: `lacks ${missing.join(', ')} (the trainer moves such models to cpu)` }));
    return;
  }
  for (let step = 0; step < args.warmup + steps; step++) {
    const start = performance.now();
    const { value, grads } = tf.variableGrads(() => loss.compute(model.apply(x, { training: true }) as tf.Tensor2D, labels).loss, variables);
    optimizer.applyGradients(grads);
    if (!appliesWeightDecay(optimizer)) applyWeightDecay(kernels, config.learningRate, config.weightDecay);
    await value.data();
    tf.dispose([value, grads]);
    if (step >= args.warmup) times.push(performance.now() - start);
  }
  const timing: Timing = { medianMs: median(times), minMs: Math.min(...times), maxMs: Math.max(...times) };
  console.log(JSON.stringify({ ...timing, note: selected.note ?? null }));
}

/** Times the graph trainer on a torchvision network exported to ONNX (NCHW input), with Adam and the EPHN loss. */
async function onnxModelChild(exported: { arch: string; size: number }, device: ExecutionProviderName, place: GraphLossPlace, args: Args): Promise<void> {
  const file = path.join(os.tmpdir(), `dml-bench-${exported.arch}-${exported.size}-${process.pid}.onnx`);
  const made = spawnSync(PYTHON, [fileURLToPath(new URL('../reference/export_torchvision.py', import.meta.url)), exported.arch, String(exported.size), file], { encoding: 'utf8' });
  if (made.status !== 0) {
    console.log(JSON.stringify({ error: `scripts/reference/export_torchvision.py failed (python3-torch and python3-torchvision needed): ${(made.stderr ?? '').trim().split('\n').pop()}` }));
    return;
  }
  const bytes = readFileSync(file);
  rmSync(file, { force: true });
  const loss = createLoss({ name: 'ephn' });
  const graphLoss = place === 'in-graph' ? graphLossOf(loss) : undefined;
  const trainer = await GraphTrainer.create({
    model: bytes,
    itemDims: [3, exported.size, exported.size],
    optimizer: { kind: 'adamw', weightDecay: 5e-4 },
    device,
    ...(graphLoss ? { loss: graphLoss } : {}),
    ...(args.threads !== undefined ? { threads: args.threads } : {}),
    blockedConvolutions: !args.plainConvolutions,
  });
  const rng = new Rng(0);
  const labels = Int32Array.from({ length: args.batch }, (_, i) => Math.floor(i / 4));
  const x = Float32Array.from({ length: args.batch * 3 * exported.size * exported.size }, () => rng.nextGaussian());
  const times: number[] = [];
  for (let step = 0; step < args.warmup + args.convnetSteps; step++) {
    const start = performance.now();
    if (graphLoss) {
      await trainer.trainStep(x, labels, 1e-3);
    } else {
      const gradient = embeddingLossGradient(loss, await trainer.forward(x), labels);
      await trainer.step(x, gradient.embeddings, 1e-3);
    }
    if (step >= args.warmup) times.push(performance.now() - start);
  }
  console.log(JSON.stringify({ medianMs: median(times), minMs: Math.min(...times), maxMs: Math.max(...times), note: `graph trainer, ${trainer.provider} provider, loss ${graphLoss ? 'in the step graph' : 'by TensorFlow.js'}` }));
}

/** The PyTorch reference step, or null when python3 has no torch. */
function torchReference(which: BenchModel, device: 'cpu' | 'cuda', args: Args): (Timing & { version: string }) | null {
  const exported = exportedModel(which, args);
  const program = `
import json, sys, time, statistics
try:
    import torch
except ImportError:
    print(json.dumps(None)); sys.exit(0)
torch.manual_seed(0); torch.set_num_threads(${args.threads ?? os.availableParallelism()})
B = ${args.batch}
if "${which}" == "head":
    model = torch.nn.Linear(2048, 512); x = torch.randn(B, 2048)
elif "${which}" == "convnet":
    # padding=1 gives the output sizes of tfjs's stride-2 'same' (which pads only after on even sizes)
    layers, c = [], 3
    for w in (32, 64, 128, 256):
        layers += [torch.nn.Conv2d(c, w, 3, stride=2, padding=1, bias=False), torch.nn.BatchNorm2d(w), torch.nn.ReLU()]
        c = w
    model = torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(256, 64))
    x = torch.randn(B, 3, 64, 64)
elif "${exported?.arch ?? ''}":
    import torchvision
    model = getattr(torchvision.models, "${exported?.arch}")(weights=None); model.fc = torch.nn.Linear(model.fc.in_features, 128)
    x = torch.randn(B, 3, ${exported?.size}, ${exported?.size})
elif "${which}" == "recipe-r":
    def conv_bn(ci, co, s=1):
        return [torch.nn.Conv2d(ci, co, 3, stride=s, padding=1, bias=False), torch.nn.BatchNorm2d(co), torch.nn.ReLU()]
    class RecipeR(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.features = torch.nn.Sequential(*conv_bn(3, 32, 2), *conv_bn(32, 32), torch.nn.MaxPool2d(2), *conv_bn(32, 64), *conv_bn(64, 64), torch.nn.MaxPool2d(2), *conv_bn(64, 128), *conv_bn(128, 128))
            self.neck = torch.nn.BatchNorm1d(256); self.fc = torch.nn.Linear(256, 128)
        def forward(self, x):
            x = self.features(x)
            x = torch.cat([torch.nn.functional.adaptive_avg_pool2d(x, 1), torch.nn.functional.adaptive_max_pool2d(x, 1)], 1).flatten(1)
            return self.fc(self.neck(x))
    model = RecipeR(); x = torch.randn(B, 3, 64, 64)
elif "${which}" == "cnn-bn":
    # Keras's batch-norm defaults (momentum 0.99 = PyTorch 0.01, epsilon 1e-3), as lib/train/models/cnn.ts builds it
    bn2, bn1 = (lambda c: torch.nn.BatchNorm2d(c, eps=1e-3, momentum=0.01)), (lambda c: torch.nn.BatchNorm1d(c, eps=1e-3, momentum=0.01))
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 32, 3, padding=1, bias=False), bn2(32), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1, bias=False), bn2(64), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(3136, 128, bias=False), bn1(128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
    x = torch.randn(B, 1, 28, 28)
else:
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(3136, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
    x = torch.randn(B, 1, 28, 28)
device = "${device}"
if device == "cuda":
    if not torch.cuda.is_available():
        print(json.dumps(None)); sys.exit(0)
    torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False
model, x = model.to(device), x.to(device)
labels = torch.arange(B, device=device) // 4
same = labels[:, None] == labels[None, :]
eye = torch.eye(B, dtype=torch.bool, device=device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=5e-4)
def step():
    e = torch.nn.functional.normalize(model(x), dim=1)
    s = e @ e.T
    with torch.no_grad():
        pos = s.masked_fill(~same | eye, -2).argmax(1); neg = s.masked_fill(same, -2).argmax(1)
    sp = s.gather(1, pos[:, None]).squeeze(1); sn = s.gather(1, neg[:, None]).squeeze(1)
    loss = torch.nn.functional.softplus((sn - sp) / 0.1).mean()
    opt.zero_grad(); loss.backward(); opt.step(); return loss.item()
steps = ${stepsOf(which, args)}
for _ in range(${args.warmup}): step()
times = []
for _ in range(steps):
    t = time.perf_counter(); step(); times.append(1000 * (time.perf_counter() - t))
print(json.dumps({"medianMs": statistics.median(times), "minMs": min(times), "maxMs": max(times), "version": torch.__version__}))
`;
  const result = spawnSync(PYTHON, ['-c', program], { encoding: 'utf8' });
  if (result.status !== 0) return null;
  const line = result.stdout.trim().split('\n').pop() ?? 'null';
  return JSON.parse(line) as (Timing & { version: string }) | null;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.child) {
    // A device or model that cannot run is one row's error, not the end of the benchmark.
    return child(args.child.backend, args.child.model, args.child.device, args.child.place, args).catch((err: Error) => console.log(JSON.stringify({ error: err.message.split('\n')[0] })));
  }
  const script = fileURLToPath(import.meta.url);
  // The compiled script (dist/) runs its children without a TypeScript loader.
  const loader = script.endsWith('.ts') ? ['--import', 'tsx'] : [];
  for (const which of args.models) {
    const steps = stepsOf(which, args);
    console.log(`\nTraining steps, ${(exportedModel(which, args) ?? MODELS[which as keyof typeof MODELS]).title}, batch ${args.batch} (${args.batch / 4} classes x 4), EPHN, Adam + weight decay; median of ${steps} steps after ${args.warmup} warm-up`);
    console.log('| backend | median ms/step (min-max) | steps/s | images/s | x cpu |');
    console.log('|---|---|---|---|---|');
    const rows: Array<{ name: string; timing: Timing | null; error?: string }> = [];
    const runs = args.backends.flatMap((backend) => (backend === 'onnx' ? args.devices.flatMap((device) => args.graphLoss.map((place) => `onnx:${which}:${device}:${place}`)) : [`${backend}:${which}`]));
    for (const run of runs) {
      let out: string;
      try {
        out = execFileSync(process.execPath, [...DML_NODE_FLAGS, ...loader, script, ...process.argv.slice(2), '--child', run], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
          ...(args.childSeconds ? { timeout: args.childSeconds * 1000 } : {}),
        });
      } catch (err) {
        out = JSON.stringify({ error: (err as { signal?: string }).signal ? `stopped after ${args.childSeconds} s` : (err as Error).message.split('\n')[0] });
      }
      const line = out.trim().split('\n').filter((l) => l.startsWith('{')).pop() ?? '{}';
      console.error(`${run}: ${line}`); // progress, kept by a log when a time limit stops the whole run
      const r = JSON.parse(line) as Partial<Timing> & { error?: string; note?: string | null };
      const name = run.split(':')[0] as string;
      if (r.error !== undefined) rows.push({ name: run.startsWith('onnx') ? `onnx (${run.split(':').slice(2).join(', loss ')})` : name, timing: null, error: r.error });
      else rows.push({ name: `${name}${r.note ? ` (${r.note})` : ''}`, timing: r as Timing });
    }
    for (const device of args.torchDevices) {
      const torch = torchReference(which, device, args);
      if (torch) rows.push({ name: `PyTorch ${torch.version} ${device} (reference, not used by dmlkit)`, timing: torch });
      else rows.push({ name: `PyTorch ${device}`, timing: null, error: `${PYTHON} has no torch${device === 'cuda' ? ' with CUDA' : ''}` });
    }
    const cpu = rows.find((r) => r.name === 'cpu')?.timing;
    for (const row of rows) {
      if (!row.timing) {
        console.log(`| ${row.name} | not available: ${row.error} | | | |`);
        continue;
      }
      const t = row.timing;
      const ratio = cpu ? `${(cpu.medianMs / t.medianMs).toFixed(1)}x` : '';
      console.log(`| ${row.name} | ${t.medianMs.toFixed(1)} (${t.minMs.toFixed(1)}-${t.maxMs.toFixed(1)}) | ${(1000 / t.medianMs).toFixed(2)} | ${((1000 / t.medianMs) * args.batch).toFixed(0)} | ${ratio} |`);
    }
  }
}

await main();
