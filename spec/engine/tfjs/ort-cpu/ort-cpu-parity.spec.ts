import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { selectBackend } from '../../../../lib/engine/tfjs/backend.js';
import { createLoss } from '../../../../lib/train/losses/registry.js';
import { buildModel } from '../../../../lib/train/models/build-model.js';
import type { ModelSpec } from '../../../../lib/train/models/model-spec.js';
import { applyWeightDecay, appliesWeightDecay, createOptimizer, decayedVariables, FUSED_OPTIMIZER_BACKENDS } from '../../../../lib/train/optimizer.js';
import { Rng } from '../../../../lib/util/rng.js';
import { relativeDifference } from '../../../helpers/compare-backends.js';
import { restoreBackendAfter } from '../../../helpers/tf-backend.js';

/**
 * Issue acceptance: for each model type of the trainer, 20 training steps on ort-cpu (onnxruntime
 * kernels, element-wise fast paths, fused Adam / momentum with weight decay) match the cpu backend
 * (tfjs's kernels and optimiser) from the same seed, with relative difference <= 1e-4 on every
 * step's loss and on the final weights. (Recipe (c), backbone features + head, trains model (a).)
 */
const STEPS = 20;
const BATCH = 24; // 6 classes x 4

interface Run {
  losses: number[];
  weights: Float32Array[];
}

async function trainSteps(backend: 'cpu' | 'ort-cpu', spec: ModelSpec, inputShape: number[], lossName: string, kind: 'adam' | 'momentum'): Promise<Run> {
  await selectBackend(backend);
  const model = await buildModel(spec, 7);
  const loss = createLoss({ name: lossName } as Parameters<typeof createLoss>[0]);
  const kernels = decayedVariables(model);
  const kernelNames = new Set(kernels.map((v) => v.name));
  const config = { kind, learningRate: 0.003, momentum: 0.9, weightDecay: 0.01, milestones: [], gamma: 0.1 };
  const optimizer = createOptimizer(config, config.learningRate, { fused: FUSED_OPTIMIZER_BACKENDS.has(tf.getBackend()), decayed: (n) => kernelNames.has(n) });
  expect(appliesWeightDecay(optimizer)).to.equal(backend === 'ort-cpu');
  const variables = model.trainableWeights.map((w) => w.read() as tf.Variable);
  const rng = new Rng(11);
  const labels = Int32Array.from({ length: BATCH }, (_, i) => Math.floor(i / 4));
  const size = inputShape.reduce((a, b) => a * b, BATCH);
  const losses: number[] = [];
  for (let step = 0; step < STEPS; step++) {
    const x = tf.tensor(Float32Array.from({ length: size }, () => rng.nextGaussian()), [BATCH, ...inputShape]);
    const { value, grads } = tf.variableGrads(() => loss.compute(model.apply(x, { training: true }) as tf.Tensor2D, labels).loss, variables);
    losses.push(value.dataSync()[0] as number);
    optimizer.applyGradients(grads);
    if (!appliesWeightDecay(optimizer)) applyWeightDecay(kernels, config.learningRate, config.weightDecay);
    tf.dispose([x, value, grads]);
  }
  const weights = model.getWeights().map((w) => Float32Array.from(w.dataSync()));
  optimizer.dispose();
  model.dispose();
  return { losses, weights };
}

describe('ort-cpu backend: 20 training steps match the cpu backend', function () {
  this.timeout(120_000);
  restoreBackendAfter();

  const cases: Array<[string, ModelSpec, number[], string, 'adam' | 'momentum']> = [
    ['(a) MLP head (batch norm, relu), EPHN, Adam', { kind: 'mlp', inputDim: 48, hidden: [32], embeddingDim: 8, batchNorm: true }, [48], 'ephn', 'adam'],
    ['(a) linear head, triplet margin, SGD with momentum', { kind: 'mlp', inputDim: 48, hidden: [], embeddingDim: 8 }, [48], 'triplet-margin', 'momentum'],
    ['(b) small CNN, EPHN, Adam', { kind: 'cnn', inputShape: [12, 12, 1], filters: [4, 8], hidden: [16], embeddingDim: 8 }, [12, 12, 1], 'ephn', 'adam'],
    ['(b) small CNN with batch norm, multi-similarity, SGD with momentum', { kind: 'cnn', inputShape: [12, 12, 2], filters: [4], hidden: [], embeddingDim: 8, batchNorm: true }, [12, 12, 2], 'multi-similarity', 'momentum'],
    ["(b') convnet: stride-2 stages with batch norm, depth 2, GAP, EPHN, Adam", { kind: 'convnet', inputShape: [12, 12, 2], widths: [4, 8], depth: 2, hidden: [6], embeddingDim: 8 }, [12, 12, 2], 'ephn', 'adam'],
    ['(d) Keras model.json backbone, fine-tuned, EPHN, Adam', { kind: 'tfjs-backbone', modelJson: 'spec/fixtures/train/tiny-keras/model.json', embeddingDim: 6, hidden: [5] }, [5, 5, 2], 'ephn', 'adam'],
  ];
  for (const [name, spec, inputShape, lossName, kind] of cases) {
    it(name, async () => {
      const cpu = await trainSteps('cpu', spec, inputShape, lossName, kind);
      const ort = await trainSteps('ort-cpu', spec, inputShape, lossName, kind);
      expect(ort.losses).to.have.length(STEPS);
      expect(relativeDifference(cpu.losses, ort.losses), 'losses').to.be.at.most(1e-4);
      // the steps really changed the weights, so equal final weights mean equal updates
      expect(cpu.losses[0]).not.to.equal(cpu.losses[STEPS - 1]);
      cpu.weights.forEach((w, k) => expect(relativeDifference(w, ort.weights[k] as Float32Array), `weight ${k}`).to.be.at.most(1e-4));
    });
  }
});
