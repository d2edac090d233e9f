/**
 * The graph trainer step for step against PyTorch: three 20-step runs recorded by
 * scripts/reference/torch_step_parity.py (spec/fixtures/graph-trainer/, its README says what each file
 * holds and why its learning rates and seeds): from the same initial ONNX file and the same batches,
 * dmlkit's loss code (TensorFlow.js) for the loss and its gradient, the graph trainer for the step.
 *
 * - (a) recipe-r: Recipe R's network at 32x32, `ephn` order 1, Adam with OneCycle;
 * - (b) resnet-triplet: ResNet basic blocks, `triplet-margin`, SGD with Nesterov momentum and L2 decay, milestones;
 * - (c) ops-zoo: dilated and depthwise convolutions, ReLU6, LeakyReLU, SiLU, average and overlapping max
 *   pooling, MatMul, four BatchNorms whose running statistics are checked; `ephn` order 2, AdamW, cosine.
 *
 * Checked: the learning rate of every step from dmlkit's own schedule code; step 0's embeddings and
 * seed gradient; every step's loss within 1e-4 (relative); the final weights and running statistics
 * within 1e-3 of each tensor's scale, and the distance each weight moved within 2% of PyTorch's (the
 * recipe-r weights move less than 1e-3 in 20 steps, so a trainer that never updated would pass the
 * first check alone); each tolerance plus 4x the rounding spread PyTorch's own float32 run shows
 * (the fixture's `roundingSpread`: against its float64 run and a run from weights one ulp away).
 *
 * The step graphs run on the CPU provider; `DML_GRAPH_DEVICE=webgpu` (or `cuda`) runs the same checks on
 * that provider instead, where a GPU is present (scripts/gpu/graph-trainer-gpu.sh runs it so).
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { GraphTrainer } from '../../../lib/engine/graph-trainer/graph-trainer.js';
import type { GraphOptimizerSettings } from '../../../lib/engine/graph-trainer/optimizer-graph.js';
import { readOnnxGraph } from '../../../lib/engine/graph/onnx-ir.js';
import type { DeviceChoice } from '../../../lib/onnx/devices.js';
import { parseNpy } from '../../../lib/embed/npy.js';
import { graphLossOf } from '../../../lib/train/losses/registry.js';
import { embeddingLossGradient } from '../../../lib/train/graph-network.js';
import { createLoss } from '../../../lib/train/losses/registry.js';
import { cosineAnnealing, oneCycle } from '../../../lib/train/lr-schedule.js';
import { onCpuBackend } from '../../helpers/tf-backend.js';

interface Trajectory {
  input: { height: number; width: number; channels: number };
  batch: { size: number };
  loss: Record<string, unknown> & { name: string };
  optimizer: { kind: 'adam' | 'adamw' | 'sgd'; lr: number; betas?: [number, number]; eps?: number; momentum?: number; dampening?: number; nesterov?: boolean; weightDecay: number; decayParameters: string[] };
  schedule:
    | { kind: 'onecycle'; max_lr: number; total_steps: number; pct_start: number; div_factor: number; final_div_factor: number; anneal_strategy: 'cos' | 'linear' }
    | { kind: 'multistep'; milestones: number[]; gamma: number }
    | { kind: 'cosine'; T_max: number; eta_min: number };
  steps: number;
  perStep: Array<{ step: number; lr: number; loss: number }>;
  parameterNames: string[];
  frozenParameterNames: string[];
  bufferNames: string[];
  /** How far PyTorch's own float32 run lands from its float64 run and from a run one ulp away, per tensor. */
  roundingSpread: Record<'float64' | 'ulp', { perTensorMaxAbsoluteDifference: Record<string, number> }>;
}

/** The learning rate of 0-based step `t` by dmlkit's schedule functions (lib/train/lr-schedule.ts). */
function scheduled(t: Trajectory, step: number): number {
  const s = t.schedule;
  if (s.kind === 'onecycle') return oneCycle(s.max_lr, step, s.total_steps, { pctStart: s.pct_start, divFactor: s.div_factor, finalDivFactor: s.final_div_factor, anneal: s.anneal_strategy });
  if (s.kind === 'cosine') return cosineAnnealing(t.optimizer.lr, s.eta_min, step, s.T_max);
  return t.optimizer.lr * s.gamma ** s.milestones.filter((m) => m <= step).length;
}

function settings(o: Trajectory['optimizer']): GraphOptimizerSettings {
  if (o.kind === 'sgd') return { kind: 'sgd', momentum: o.momentum ?? 0, dampening: o.dampening ?? 0, nesterov: o.nesterov ?? false, weightDecay: o.weightDecay };
  return { kind: o.kind, betas: o.betas ?? [0.9, 0.999], epsilon: o.eps ?? 1e-8, weightDecay: o.weightDecay };
}

/** Largest |a - b| and largest |b|. */
function difference(actual: ArrayLike<number>, expected: ArrayLike<number>): { diff: number; scale: number } {
  expect(actual.length).to.equal(expected.length);
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < expected.length; i++) {
    diff = Math.max(diff, Math.abs((actual[i] as number) - (expected[i] as number)));
    scale = Math.max(scale, Math.abs(expected[i] as number));
  }
  return { diff, scale };
}

/** Largest |a - b| over the largest |b| (at least 1e-6). */
function relativeError(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  const { diff, scale } = difference(actual, expected);
  return diff / Math.max(scale, 1e-6);
}

/** The provider the step graphs run on: `DML_GRAPH_DEVICE`, else the CPU. */
const DEVICE = (process.env.DML_GRAPH_DEVICE ?? 'cpu') as DeviceChoice;

describe(`GraphTrainer against PyTorch, step for step (${DEVICE})`, function () {
  this.timeout(120_000);
  before(onCpuBackend);

  // Each fixture with the loss computed by TensorFlow.js between two runs, and, where the loss has an ONNX
  // form (lib/train/graph-loss.ts), with the loss inside the step: one run per step.
  const runs = ['recipe-r', 'resnet-triplet', 'ops-zoo'].flatMap((name) => {
    const folder = new URL(`../../fixtures/graph-trainer/${name}/`, import.meta.url);
    const t = JSON.parse(readFileSync(new URL('trajectory.json', folder), 'utf8')) as Trajectory;
    const graphLoss = graphLossOf(createLoss(t.loss as Parameters<typeof createLoss>[0]));
    return [{ name, folder, t, graphLoss: undefined }, ...(graphLoss ? [{ name, folder, t, graphLoss }] : [])];
  });
  for (const { name, folder, t, graphLoss } of runs) {
    it(`${name}${graphLoss ? ', loss in the step graph' : ''}: 20 steps of losses, the final weights and running statistics`, async () => {
      const file = (f: string): Uint8Array => new Uint8Array(readFileSync(new URL(f, folder)));
      const images = parseNpy(file('images.npy'), 'images.npy');
      const labels = parseNpy(file('labels.npy'), 'labels.npy');
      const { height: h, width: w, channels: c } = t.input;
      const batch = t.batch.size;
      const trained = t.parameterNames.filter((p) => !t.frozenParameterNames.includes(p));
      const decayed = new Set(t.optimizer.decayParameters);
      const trainer = await GraphTrainer.create({ model: file('initial.onnx'), itemDims: [c, h, w], optimizer: settings(t.optimizer), trained, decayed: (p) => decayed.has(p), device: DEVICE, threads: 1, ...(graphLoss ? { loss: graphLoss } : {}) });
      const initial = new Map([...trainer.weights()].map(([k, v]) => [k, v.slice()]));
      const loss = createLoss(t.loss as Parameters<typeof createLoss>[0]);
      const pixels = images.data as Uint8Array;
      for (let step = 0; step < t.steps; step++) {
        // (x / 255 - 0.5) / 0.5 in float32 as torch computes it, NHWC -> NCHW.
        const x = new Float32Array(batch * c * h * w);
        for (let n = 0; n < batch; n++) {
          for (let k = 0; k < c; k++) {
            for (let i = 0; i < h * w; i++) {
              const v = pixels[((step * batch + n) * h * w + i) * c + k] as number;
              x[(n * c + k) * h * w + i] = Math.fround(Math.fround(Math.fround(v / 255) - 0.5) / 0.5);
            }
          }
        }
        const stepLabels = Int32Array.from((labels.data as Int32Array).subarray(step * batch, (step + 1) * batch));
        const record = t.perStep[step] as Trajectory['perStep'][number];
        const lr = scheduled(t, step);
        expect(lr, `step ${step} learning rate`).to.be.closeTo(record.lr, 1e-12 * record.lr + 1e-18);
        let value: number;
        if (graphLoss) {
          value = (await trainer.trainStep(x, stepLabels, lr)).value;
        } else {
          const embeddings = await trainer.forward(x);
          const gradient = embeddingLossGradient(loss, embeddings, stepLabels);
          if (step === 0) {
            expect(relativeError(embeddings, parseNpy(file('step0-embedding.npy'), 'e').data as Float32Array), 'step 0 embeddings').to.be.below(1e-5);
            expect(relativeError(gradient.embeddings, parseNpy(file('step0-embedding-grad.npy'), 'g').data as Float32Array), 'step 0 seed gradient').to.be.below(1e-4);
          }
          value = gradient.value;
          await trainer.step(x, gradient.embeddings, lr);
        }
        expect(Math.abs(value - record.loss) / Math.abs(record.loss), `step ${step} loss ${value} vs PyTorch ${record.loss}`).to.be.below(1e-4);
      }
      if (DEVICE !== 'auto') expect(trainer.provider, 'the provider that ran the steps').to.equal(DEVICE);
      const final = readOnnxGraph(file('final.onnx'), 'final.onnx').initializers;
      const start = readOnnxGraph(file('initial.onnx'), 'initial.onnx').initializers;
      for (const p of [...t.parameterNames, ...t.bufferNames]) {
        const expected = final.get(p)?.data as Float32Array;
        // A frozen parameter is a constant of the step graph: it keeps its initial value.
        const actual = trainer.value(p) ?? (start.get(p)?.data as Float32Array);
        // Rounding alone moves PyTorch's own run this far (a tensor of values near 0, such as a BatchNorm bias
        // after 20 small Adam steps, is judged against that rather than against its own tiny scale).
        const spread = Math.max(t.roundingSpread.float64.perTensorMaxAbsoluteDifference[p] ?? 0, t.roundingSpread.ulp.perTensorMaxAbsoluteDifference[p] ?? 0);
        const final20 = difference(actual, expected);
        expect(final20.diff, `${p} after 20 steps: |difference| ${final20.diff} (scale ${final20.scale}, PyTorch's rounding spread ${spread})`).to.be.at.most(1e-3 * final20.scale + 4 * spread);
        if (!trained.includes(p)) continue;
        const before = initial.get(p) as Float32Array;
        const moved = difference(Float32Array.from(actual, (v, i) => v - (before[i] as number)), Float32Array.from(expected, (v, i) => v - (before[i] as number)));
        expect(moved.diff, `${p}: moved ${moved.scale} in PyTorch, differs by ${moved.diff}`).to.be.at.most(0.02 * moved.scale + 4 * spread);
      }
      await trainer.release();
    });
  }
});
