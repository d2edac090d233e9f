import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { selectBackend } from '../../../lib/engine/tfjs/backend.js';
import { batchNormalization } from '../../../lib/train/models/training-batch-norm.js';
import { BATCH_NORM_TRAINING_GRAD_KERNEL, BATCH_NORM_TRAINING_KERNEL, batchNormInTraining } from '../../../lib/engine/tfjs/ops/batch-norm-training.js';
import { Rng } from '../../../lib/util/rng.js';
import { relativeDifference } from '../../helpers/compare-backends.js';
import { restoreBackendAfter } from '../../helpers/tf-backend.js';

/**
 * The batch-normalisation layer of the model builders (lib/train/models/training-batch-norm.ts) and its fused
 * training pass (lib/engine/tfjs/ops/batch-norm-training.ts, kernels in lib/engine/tfjs/ort-cpu/batch-norm-kernels.ts): on ort-cpu
 * it must compute what tfjs-layers' stock BatchNormalization computes on the cpu backend (output,
 * moving statistics, gradients), its gradient must equal finite differences of the defining formula,
 * and it must stay a `BatchNormalization` for serialisation and export.
 */

type Case = { name: string; shape: number[]; mean: number; std: number; momentum: number; epsilon: number };
const CASES: Case[] = [
  { name: 'feature maps [6, 5, 4, 32]', shape: [6, 5, 4, 32], mean: 0, std: 1, momentum: 0.9, epsilon: 1e-5 },
  { name: 'a Dense layer output [24, 7], Keras defaults', shape: [24, 7], mean: 0.3, std: 2, momentum: 0.99, epsilon: 1e-3 },
  { name: 'activations far from zero (mean 50, std 0.05): no cancellation', shape: [16, 3, 3, 5], mean: 50, std: 0.05, momentum: 0.9, epsilon: 1e-5 },
];

function seeded(rng: Rng, shape: number[], mean = 0, std = 1): Float32Array {
  const size = shape.reduce((a, b) => a * b, 1);
  return Float32Array.from({ length: size }, () => mean + std * rng.nextGaussian());
}

interface LayerRun {
  outputs: Float32Array[];
  kernels: string[];
}

/**
 * Builds a batch-norm layer (stock or dmlkit's) with non-trivial gamma/beta, runs two training calls
 * and one inference call; returns the outputs, moving statistics and the gradients of a weighted sum
 * of the second training output with respect to x, gamma and beta, and the kernels the training call ran.
 */
async function runLayer(backend: 'cpu' | 'ort-cpu', stock: boolean, c: Case): Promise<LayerRun> {
  await selectBackend(backend);
  const channels = c.shape[c.shape.length - 1] as number;
  const rng = new Rng(5);
  const x1 = tf.tensor(seeded(rng, c.shape, c.mean, c.std), c.shape);
  const x2 = tf.tensor(seeded(rng, c.shape, c.mean, c.std), c.shape);
  const weights = tf.tensor(seeded(rng, c.shape), c.shape);
  const args = {
    momentum: c.momentum,
    epsilon: c.epsilon,
    gammaInitializer: tf.initializers.constant({ value: 1.5 }),
    betaInitializer: tf.initializers.constant({ value: -0.25 }),
  };
  const layer = stock ? tf.layers.batchNormalization(args) : batchNormalization(args);
  layer.build(c.shape);
  const [gamma, beta] = layer.trainableWeights.map((w) => w.read() as tf.Variable) as [tf.Variable, tf.Variable];
  gamma.assign(tf.add(gamma, tf.tensor(seeded(rng, [channels], 0, 0.1))));
  const weightedSum = (x: tf.Tensor): tf.Scalar => tf.sum(tf.mul(weights, layer.apply(x, { training: true }) as tf.Tensor));
  const first = layer.apply(x1, { training: true }) as tf.Tensor;
  const profile = await tf.profile(() => {
    const { value, grads } = tf.variableGrads(() => weightedSum(x2), [gamma, beta]);
    tf.dispose([value, grads]);
  });
  const kernels = profile.kernels.map((k) => k.name);
  // Every training call moves the moving statistics; both backends make the same calls in the same order.
  const second = layer.apply(x2, { training: true }) as tf.Tensor;
  const { grads } = tf.variableGrads(() => weightedSum(x2), [gamma, beta]);
  const dx = tf.grad((x: tf.Tensor) => weightedSum(x))(x2);
  const inference = layer.apply(x1, { training: false }) as tf.Tensor;
  const moving = layer.getWeights().slice(2);
  const outputs = [first, second, inference, ...moving, grads[gamma.name] as tf.Tensor, grads[beta.name] as tf.Tensor, dx].map((t) => Float32Array.from(t.dataSync()));
  return { outputs, kernels };
}

describe('train/models: batch normalisation with the fused training pass', function () {
  this.timeout(60_000);
  restoreBackendAfter();

  for (const c of CASES) {
    it(`${c.name}: on ort-cpu equals the stock layer on cpu (outputs, moving statistics, gradients for x, gamma, beta)`, async () => {
      const reference = await runLayer('cpu', true, c);
      const fused = await runLayer('ort-cpu', false, c);
      const names = ['first training output', 'second training output', 'inference output', 'moving mean', 'moving variance', 'dgamma', 'dbeta', 'dx'];
      reference.outputs.forEach((ref, k) => {
        expect(fused.outputs[k], names[k]).to.have.length(ref.length);
        expect(relativeDifference(ref, fused.outputs[k] as Float32Array), names[k]).to.be.at.most(2e-5);
      });
      // The moving statistics really moved (momentum applied twice from 0 and 1).
      expect(Math.abs((reference.outputs[3] as Float32Array)[0] as number)).to.be.greaterThan(0);
      expect(fused.kernels).to.include.members([BATCH_NORM_TRAINING_KERNEL, BATCH_NORM_TRAINING_GRAD_KERNEL]);
      expect(fused.kernels).not.to.include('FusedBatchNorm');
      expect(reference.kernels).to.include('FusedBatchNorm');
      expect(reference.kernels).not.to.include(BATCH_NORM_TRAINING_KERNEL);
    });
  }

  it('on cpu (no fused kernels) runs exactly the stock layer', async () => {
    const c = CASES[0] as Case;
    const stock = await runLayer('cpu', true, c);
    const ours = await runLayer('cpu', false, c);
    expect(ours.kernels).to.deep.equal(stock.kernels);
    stock.outputs.forEach((ref, k) => expect(Array.from(ours.outputs[k] as Float32Array)).to.deep.equal(Array.from(ref)));
  });

  it('the fused gradient equals central finite differences of the defining formula (float64)', async () => {
    await selectBackend('ort-cpu');
    const shape = [5, 2, 3];
    const rng = new Rng(9);
    const x = seeded(rng, shape, 0.5, 1.3);
    const gamma = Float64Array.from(Float32Array.of(0.7, -1.2, 2.0));
    const beta = Float64Array.from(Float32Array.of(0.1, 0.2, -0.3));
    const w = seeded(rng, shape);
    const epsilon = 1e-3;
    // L = Σ w · (gamma · (x - mean) / sqrt(var + eps) + beta), per channel over every other axis, in float64.
    const loss = (xs: Float64Array, g: Float64Array, b: Float64Array): number => {
      const channels = 3;
      const rows = xs.length / channels;
      let total = 0;
      for (let c = 0; c < channels; c++) {
        let mean = 0;
        for (let r = 0; r < rows; r++) mean += xs[r * channels + c] as number;
        mean /= rows;
        let variance = 0;
        for (let r = 0; r < rows; r++) variance += ((xs[r * channels + c] as number) - mean) ** 2;
        variance /= rows;
        for (let r = 0; r < rows; r++) {
          const k = r * channels + c;
          total += (w[k] as number) * ((g[c] as number) * (((xs[k] as number) - mean) / Math.sqrt(variance + epsilon)) + (b[c] as number));
        }
      }
      return total;
    };
    const numeric = (values: Float64Array, evaluate: (v: Float64Array) => number): number[] =>
      Array.from(values, (_, i) => {
        const h = 1e-6;
        const plus = Float64Array.from(values);
        const minus = Float64Array.from(values);
        plus[i] = (plus[i] as number) + h;
        minus[i] = (minus[i] as number) - h;
        return (evaluate(plus) - evaluate(minus)) / (2 * h);
      });
    const x64 = Float64Array.from(x);
    const expected = [
      numeric(x64, (v) => loss(v, gamma, beta)),
      numeric(gamma, (v) => loss(x64, v, beta)),
      numeric(beta, (v) => loss(x64, gamma, v)),
    ];
    const weights = tf.tensor(w, shape);
    const g = tf.grads((xt: tf.Tensor, gt: tf.Tensor, bt: tf.Tensor) => {
      const { y, mean, variance } = batchNormInTraining(xt, gt as tf.Tensor1D, bt as tf.Tensor1D, epsilon);
      tf.dispose([mean, variance]);
      return tf.sum(tf.mul(weights, y));
    })([tf.tensor(x, shape), tf.tensor(Float32Array.from(gamma), [3]), tf.tensor(Float32Array.from(beta), [3])]);
    g.forEach((t, k) => {
      const got = Array.from(t.dataSync());
      const want = expected[k] as number[];
      const scale = Math.max(...want.map(Math.abs));
      got.forEach((v, i) => expect(Math.abs(v - (want[i] as number)) / scale, `gradient ${k}, element ${i}`).to.be.below(1e-5));
    });
  });

  it('stays a BatchNormalization for serialisation: model.json reloads with the stock layer and the same inference', async () => {
    await selectBackend('cpu');
    const input = tf.input({ shape: [4, 4, 3] });
    const output = batchNormalization({ name: 'bn', momentum: 0.9, epsilon: 1e-5 }).apply(input) as tf.SymbolicTensor;
    const model = tf.model({ inputs: input, outputs: output });
    model.apply(tf.randomNormal([8, 4, 4, 3], 2, 3, 'float32', 1), { training: true });
    expect(model.getLayer('bn').getClassName()).to.equal('BatchNormalization');
    let saved: tf.io.ModelArtifacts | undefined;
    await model.save(tf.io.withSaveHandler(async (artifacts) => ((saved = artifacts), { modelArtifactsInfo: { dateSaved: new Date(), modelTopologyType: 'JSON' } })));
    const reloaded = await tf.loadLayersModel(tf.io.fromMemory(saved as tf.io.ModelArtifacts));
    expect(reloaded.getLayer('bn').getClassName()).to.equal('BatchNormalization');
    const x = tf.randomNormal([2, 4, 4, 3], 0, 1, 'float32', 2);
    expect(Array.from((reloaded.predict(x) as tf.Tensor).dataSync())).to.deep.equal(Array.from((model.predict(x) as tf.Tensor).dataSync()));
  });

  it('the kernels reject parameters of the wrong size with the kernel, input and expectation named', async () => {
    await selectBackend('ort-cpu');
    const x = tf.zeros([4, 3]);
    expect(() => tf.engine().runKernel(BATCH_NORM_TRAINING_KERNEL, { x, scale: tf.ones([2]), offset: tf.zeros([3]) }, { epsilon: 1e-3 })).to.throw(
      `${BATCH_NORM_TRAINING_KERNEL}: input scale must be float32 with 3 elements, got float32 [2]`,
    );
  });
});
