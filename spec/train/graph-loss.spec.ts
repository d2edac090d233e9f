/**
 * The losses written as ONNX nodes (lib/train/graph-loss.ts) against their TensorFlow.js code: from the
 * same network, images and labels, the fused step (one graph run: forward, loss, backward, update) gives
 * the loss value (within 1e-5: the two graphs round apart), the count of kept anchors, the parameter
 * gradients and the updated weights of the two-run step (the loss and its gradient by TensorFlow.js in
 * between), for every option of the easy-positive family it covers; a batch without a valid anchor
 * changes nothing.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { GraphTrainer, type GraphLoss, type GraphTrainerOptions } from '../../lib/engine/graph-trainer/graph-trainer.js';
import { graphLossOf } from '../../lib/train/losses/registry.js';
import { embeddingLossGradient } from '../../lib/train/graph-network.js';
import { createLoss } from '../../lib/train/losses/registry.js';
import { Rng } from '../../lib/util/rng.js';
import { onCpuBackend } from '../helpers/tf-backend.js';

// A network with convolutions, BatchNorm (running statistics updated by the step), pooling and a head.
const model = new Uint8Array(readFileSync(new URL('../fixtures/graph-trainer/ops-zoo/initial.onnx', import.meta.url)));
const itemDims = [3, 16, 16];
// SGD with momentum: Adam would turn the rounding noise of gradients that are 0 in exact arithmetic (a bias
// before BatchNorm) into whole steps of ±lr, hiding what is compared.
const options: GraphTrainerOptions = { model, itemDims, optimizer: { kind: 'sgd', momentum: 0.9, dampening: 0, nesterov: false, weightDecay: 1e-4 }, recordGradients: true, threads: 1 };

function images(count: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: count * 3 * 16 * 16 }, () => rng.nextGaussian());
}

/** The ONNX form of the loss `config` describes (it must have one). */
function fusedLoss(config: Record<string, unknown> & { name: string }): GraphLoss {
  const graphLoss = graphLossOf(createLoss(config as Parameters<typeof createLoss>[0]));
  if (!graphLoss) throw new Error(`${config.name} has no ONNX form`);
  return graphLoss;
}

/** Largest |a - b| over all parameters, and the largest |b| over all of them. */
function worstDifference(a: GraphTrainer, b: GraphTrainer, of: (t: GraphTrainer, p: string) => Float32Array | undefined): { diff: number; scale: number } {
  let diff = 0;
  let scale = 0;
  for (const p of b.trainedNames) {
    const x = of(a, p) as Float32Array;
    const y = of(b, p) as Float32Array;
    expect(x.length, p).to.equal(y.length);
    for (let i = 0; i < y.length; i++) {
      diff = Math.max(diff, Math.abs((x[i] as number) - (y[i] as number)));
      scale = Math.max(scale, Math.abs(y[i] as number));
    }
  }
  return { diff, scale };
}

describe('graph losses: the fused step against the TensorFlow.js loss', function () {
  this.timeout(60_000);
  before(onCpuBackend);

  // Classes 0 (three images), 1 (two), 2 (a single image: no positive, still a negative), 3 (two identical
  // images: S = 1 > 0.9999, a duplicate skipped by default).
  const labels = Int32Array.from([0, 0, 0, 1, 1, 2, 3, 3]);
  const batch = images(8, 1);
  batch.copyWithin(7 * 768, 6 * 768, 7 * 768);

  const cases: Array<Record<string, unknown> & { name: string }> = [
    { name: 'ephn' },
    { name: 'ephn', order: 2, temperature: 0.05 },
    { name: 'ephn', duplicateThreshold: null, reduction: 'sum' },
    { name: 'hphn', validity: 'positive-similarity' },
    { name: 'epen', order: 2 },
  ];
  for (const config of cases) {
    it(`${JSON.stringify(config)}: the loss, its anchors, the gradients and two steps' weights`, async () => {
      const loss = createLoss(config as Parameters<typeof createLoss>[0]);
      const fused = await GraphTrainer.create({ ...options, loss: fusedLoss(config) });
      const twoRuns = await GraphTrainer.create(options);
      for (const lr of [0.1, 0.05]) {
        const expected = embeddingLossGradient(loss, await twoRuns.forward(batch), labels);
        const result = await fused.trainStep(batch, labels, lr);
        await twoRuns.step(batch, expected.embeddings, lr);
        expect(result.validCount, 'kept anchors').to.equal(expected.validCount);
        expect(result.applied).to.equal(true);
        expect(result.value).to.be.closeTo(expected.value, 1e-5 * Math.abs(expected.value) + 1e-7);
        const gradients = worstDifference(fused, twoRuns, (t, p) => t.gradient(p));
        expect(gradients.diff, `gradients (largest ${gradients.scale})`).to.be.at.most(1e-4 * gradients.scale);
        const weights = worstDifference(fused, twoRuns, (t, p) => t.value(p));
        expect(weights.diff, `weights (largest ${weights.scale})`).to.be.at.most(1e-6 * weights.scale);
      }
      expect(fused.stepCount).to.equal(2);
      await Promise.all([fused.release(), twoRuns.release()]);
    });
  }

  it('counts the anchors the duplicate rule keeps: two identical images are not each other\'s positive', async () => {
    const withDuplicates = await GraphTrainer.create({ ...options, loss: fusedLoss({ name: 'ephn' }) });
    const keepingThem = await GraphTrainer.create({ ...options, loss: fusedLoss({ name: 'ephn', duplicateThreshold: null }) });
    // Anchors 0-4 have positives; 5 is alone in its class; 6 and 7 are identical: kept only without the rule.
    expect((await withDuplicates.trainStep(batch, labels, 0)).validCount).to.equal(5);
    expect((await keepingThem.trainStep(batch, labels, 0)).validCount).to.equal(7);
    await Promise.all([withDuplicates.release(), keepingThem.release()]);
  });

  it('applies nothing for a batch without a valid anchor (every image its own class)', async () => {
    const trainer = await GraphTrainer.create({ ...options, loss: fusedLoss({ name: 'ephn' }) });
    const before = new Map([...trainer.weights()].map(([k, v]) => [k, v.slice()]));
    const result = await trainer.trainStep(images(4, 2), Int32Array.from([0, 1, 2, 3]), 0.1);
    expect(result).to.deep.equal({ value: 0, validCount: 0, applied: false });
    expect(trainer.stepCount).to.equal(0);
    for (const [name, value] of trainer.weights()) expect(Array.from(value), name).to.deep.equal(Array.from(before.get(name) as Float32Array));
    await trainer.release();
  });

  it('has no ONNX form for the losses not written as nodes (they keep the two-run step)', () => {
    for (const name of ['ep', 'epshn', 'hp', 'triplet-margin', 'contrastive']) expect(graphLossOf(createLoss({ name } as Parameters<typeof createLoss>[0])), name).to.equal(undefined);
  });

  it('refuses trainStep without a loss, and labels that do not match the images', async () => {
    const plain = await GraphTrainer.create(options);
    await plain.trainStep(batch, labels, 0.1).then(
      () => expect.fail('trainStep without a loss'),
      (err: Error) => expect(err.message).to.match(/trainStep needs the loss compiled into the step/),
    );
    const fused = await GraphTrainer.create({ ...options, loss: fusedLoss({ name: 'ephn' }) });
    await fused.trainStep(batch, labels.subarray(0, 7), 0.1).then(
      () => expect.fail('7 labels for 8 images'),
      (err: Error) => expect(err.message).to.match(/labels/).and.to.match(/8 labels/),
    );
    await Promise.all([plain.release(), fused.release()]);
  });
});
