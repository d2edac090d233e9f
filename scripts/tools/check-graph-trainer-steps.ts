/**
 * @file The graph trainer's trajectory on a device against the CPU provider, through its public API: for
 * each network, two GraphTrainers from the same bytes, one on the CPU and one on `--device`, take
 * `--steps` Adam steps on the same seeded batches. Each trainer steps on the gradient of
 * 0.5 ||E - T||² at its own embeddings E (T: a fixed seeded target), so that a difference carries over
 * from step to step as it would in training; with `--fused`, the step is instead one run of the network
 * with the `ephn` loss compiled in (lib/train/graph-loss.ts), on seeded labels (`--batch` / 4 classes,
 * 2 at least). After each step, every trained weight and running statistic and the step's embeddings
 * (with `--fused`: its loss) are compared, and the worst relative difference and its tensor printed.
 * With `--micro-batch M` both trainers run each batch in micro-batches of M (the gradients summed by the
 * gradient-sum graph, in device memory on a GPU).
 *
 *   node dist/scripts/tools/check-graph-trainer-steps.js [--device webgpu] [--steps 5] [--batch 32] [--lr 1e-3] [--tolerance 1e-4] [--size 64] [--fused | --micro-batch M] [recipe-r] [model.onnx ...]
 *
 * Networks as check-graph-trainer-device.ts takes them (device-check-support.ts; default the graph
 * trainer's PyTorch parity fixtures). A tensor passes when its largest |device - cpu| is at most the
 * tolerance times its largest |cpu| value (1e-6 at least). Exit 1 when one does not at some step, 2
 * when the device cannot be opened (the trainer's sessions fail, or they run on another provider).
 */
import { fileURLToPath } from 'node:url';
import { GraphTrainer, type GraphLoss } from '../../lib/engine/graph-trainer/graph-trainer.js';
import type { DeviceChoice } from '../../lib/onnx/devices.js';
import { graphLossOf } from '../../lib/train/losses/registry.js';
import { createLoss } from '../../lib/train/losses/registry.js';
import { Rng } from '../../lib/util/rng.js';
import { argument, compare, load, networks, relativeDifference, type Difference } from './device-check-support.js';

/** The flags that take a value. */
const FLAGS = new Set(['--device', '--steps', '--batch', '--lr', '--tolerance', '--size', '--micro-batch']);

/** One step of two trajectories compared. */
export interface StepComparison {
  /** 1 for the first step. */
  step: number;
  /** Every tensor compared: the step's embeddings (`embeddings`) or fused loss (`loss`), then each weight and running statistic. */
  differences: Difference[];
  /** The tensor with the largest relative difference. */
  worst: Difference;
}

/**
 * Trains `cpu` and `device` (two trainers of the same network) side by side for `steps` steps of
 * `batch` seeded gaussian images at learning rate `lr`, and yields each step's comparison. When `cpu`
 * has a loss compiled into its step, both step with {@link GraphTrainer.trainStep} on seeded labels;
 * otherwise each takes the gradient of 0.5 ||E - T||² at its own embeddings E, T fixed and seeded.
 */
export async function* compareTrajectories(cpu: GraphTrainer, device: GraphTrainer, steps: number, batch: number, lr: number): AsyncGenerator<StepComparison> {
  const itemSize = cpu.itemDims.reduce((a, b) => a * b, 1);
  const images = new Rng(0);
  const gaussian = (rng: Rng, length: number, scale: number): Float32Array => Float32Array.from({ length }, () => scale * rng.nextGaussian());
  const classes = Math.max(2, Math.floor(batch / 4));
  const labels = new Rng(2).shuffle(Int32Array.from({ length: batch }, (_, i) => i % classes));
  let target: Float32Array | undefined;
  for (let step = 1; step <= steps; step++) {
    const x = gaussian(images, batch * itemSize, 1);
    const outputs: Float32Array[] = [];
    for (const trainer of [cpu, device]) {
      if (cpu.hasFusedStep) {
        outputs.push(Float32Array.of((await trainer.trainStep(x, labels, lr)).value));
        continue;
      }
      const embeddings = await trainer.forward(x);
      target ??= gaussian(new Rng(1), embeddings.length, 0.1);
      const fixed = target;
      await trainer.step(x, embeddings.map((e, i) => e - (fixed[i] as number)), lr);
      outputs.push(embeddings);
    }
    await Promise.all([cpu.synchronize(), device.synchronize()]);
    const onDevice = device.weights();
    const differences = [
      compare(cpu.hasFusedStep ? 'loss' : 'embeddings', outputs[0] as Float32Array, outputs[1] as Float32Array),
      ...[...cpu.weights()].map(([name, value]) => compare(name, value, onDevice.get(name) ?? new Float32Array())),
    ];
    const worst = differences.reduce((a, b) => (relativeDifference(b) > relativeDifference(a) ? b : a));
    yield { step, differences, worst };
  }
}

/** A trainer of `bytes` on `device`, its sessions for `batch` opened; throws when they cannot be, or run on another provider. */
async function open(bytes: Uint8Array, name: string, itemDims: readonly number[], device: DeviceChoice, batch: number, loss: GraphLoss | undefined, microBatch: number | undefined): Promise<GraphTrainer> {
  const trainer = await GraphTrainer.create({ model: bytes, name, itemDims, optimizer: { kind: 'adam' }, device, ...(loss ? { loss } : {}), ...(microBatch !== undefined ? { microBatch } : {}) });
  await trainer.prepare(batch);
  if (trainer.provider !== device) throw new Error(`the step graphs run on ${trainer.provider ?? 'no provider'}`);
  return trainer;
}

async function main(): Promise<number> {
  const device = argument('--device', 'webgpu') as DeviceChoice;
  const steps = Number(argument('--steps', '5'));
  const batch = Number(argument('--batch', '32'));
  const lr = Number(argument('--lr', '1e-3'));
  const tolerance = Number(argument('--tolerance', '1e-4'));
  const size = Number(argument('--size', '64'));
  const loss = process.argv.includes('--fused') ? graphLossOf(createLoss({ name: 'ephn' })) : undefined;
  const microBatch = process.argv.includes('--micro-batch') ? Number(argument('--micro-batch', '')) : undefined;
  let failed = false;
  for (const which of networks(FLAGS)) {
    const { bytes, itemDims } = await load(which, size);
    const cpu = await open(bytes, which, itemDims, 'cpu', batch, loss, microBatch);
    let onDevice: GraphTrainer;
    try {
      onDevice = await open(bytes, which, itemDims, device, batch, loss, microBatch);
    } catch (err) {
      console.log(`${device} could not be opened: ${(err as Error).message.split('\n')[0]}`);
      await cpu.release();
      return 2;
    }
    let worst: { step: number; name: string; relative: number } | undefined;
    let over = 0;
    for await (const c of compareTrajectories(cpu, onDevice, steps, batch, lr)) {
      const bad = c.differences.filter((d) => !(relativeDifference(d) <= tolerance));
      const relative = relativeDifference(c.worst);
      console.log(`${which} step ${c.step}: ${c.differences.length} tensors, worst relative difference ${relative.toExponential(2)} (${c.worst.name}), ${bad.length} over ${tolerance}`);
      for (const d of bad.slice(0, 10)) console.log(`  ${d.name}: |${device} - cpu| ${d.diff.toExponential(2)}, scale ${d.scale.toExponential(2)}`);
      if (!worst || !(relative <= worst.relative)) worst = { step: c.step, name: c.worst.name, relative };
      if (bad.length > 0) over += 1;
    }
    console.log(
      `${which} (batch ${batch}, item [${itemDims.join(', ')}], ${steps} Adam steps at lr ${lr}${loss ? ', ephn in the step' : ''}${microBatch !== undefined ? `, micro-batches of ${microBatch}` : ''}): worst relative difference ${worst?.relative.toExponential(2)} (step ${worst?.step}, ${worst?.name}), ${over} of ${steps} steps over ${tolerance}`,
    );
    await Promise.all([cpu.release(), onDevice.release()]);
    failed ||= over > 0;
  }
  return failed ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
