import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { FusedAdamOptimizer, FusedMomentumOptimizer, FusedSgdOptimizer } from '../../../lib/engine/tfjs/fused-optimizer.js';
import { applyWeightDecay, createOptimizer, setLearningRate, setMomentum, setOptimizerWeights, withLearningRate } from '../../../lib/train/optimizer.js';
import { Rng } from '../../../lib/util/rng.js';
import type { TrainConfig } from '../../../lib/train/config.js';

type OptimizerConfig = TrainConfig['optimizer'];

/**
 * The fused optimisers must give exactly tfjs's numbers (same float32 operation order): a few steps
 * of tfjs's optimiser + applyWeightDecay against the fused one on identical variables and gradients.
 */
function variables(rng: Rng, tag: string): tf.Variable[] {
  return [
    tf.variable(tf.tensor(Float32Array.from({ length: 24 }, () => rng.nextGaussian()), [4, 6]), true, `${tag}/dense/kernel`),
    tf.variable(tf.tensor(Float32Array.from({ length: 6 }, () => rng.nextGaussian()), [6]), true, `${tag}/dense/bias`),
  ];
}

function gradientsFor(step: number, vars: tf.Variable[], rng: Rng): tf.NamedTensorMap {
  const grads: tf.NamedTensorMap = {};
  for (const v of vars) grads[v.name] = tf.tensor(Float32Array.from({ length: v.size }, () => rng.nextGaussian() * (step + 1)), v.shape);
  return grads;
}

async function compare(config: OptimizerConfig, steps: number, changeLrAt?: number, how: 'recreate' | 'in place' = 'recreate'): Promise<number> {
  const tag = `${config.kind}${steps}${changeLrAt ?? ''}${how === 'in place' ? 'i' : ''}`;
  const reference = variables(new Rng(5), `ref${tag}`);
  const fused = variables(new Rng(5), `fused${tag}`);
  const kernelNames = new Set([reference[0]?.name, fused[0]?.name]);
  const options = { fused: true, decayed: (name: string) => kernelNames.has(name) };
  let tfjsOptimizer = createOptimizer(config, config.learningRate);
  let fusedOptimizer = createOptimizer(config, config.learningRate, options);
  const rngA = new Rng(9);
  const rngB = new Rng(9);
  let lr = config.learningRate;
  for (let step = 0; step < steps; step++) {
    if (step === changeLrAt) {
      lr = lr / 10;
      if (how === 'in place') {
        setLearningRate(tfjsOptimizer, lr);
        setLearningRate(fusedOptimizer, lr);
      } else {
        tfjsOptimizer = await withLearningRate(tfjsOptimizer, config, lr);
        fusedOptimizer = await withLearningRate(fusedOptimizer, config, lr, options);
      }
    }
    const ga = gradientsFor(step, reference, rngA);
    tfjsOptimizer.applyGradients(ga);
    applyWeightDecay([reference[0] as tf.Variable], lr, config.weightDecay);
    const gb = gradientsFor(step, fused, rngB);
    fusedOptimizer.applyGradients(gb);
    tf.dispose([ga, gb]);
  }
  let maxDiff = 0;
  reference.forEach((v, k) => {
    const a = v.dataSync();
    const b = (fused[k] as tf.Variable).dataSync();
    for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs((a[i] as number) - (b[i] as number)));
  });
  const [wa, wb] = [await tfjsOptimizer.getWeights(), await fusedOptimizer.getWeights()];
  expect(wb.map((w) => w.name.replace(/^fused/, ''))).to.deep.equal(wa.map((w) => w.name.replace(/^ref/, '')));
  wa.forEach((w, k) => {
    const a = w.tensor.dataSync();
    const b = (wb[k] as { tensor: tf.Tensor }).tensor.dataSync();
    for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs((a[i] as number) - (b[i] as number)));
  });
  tf.dispose([...reference, ...fused]);
  tfjsOptimizer.dispose();
  fusedOptimizer.dispose();
  return maxDiff;
}

const base: OptimizerConfig = { kind: 'adam', learningRate: 0.01, momentum: 0.9, weightDecay: 0, milestones: [], gamma: 0.1, schedule: { kind: 'milestones' } };

describe('fused optimisers', () => {
  before(async () => {
    await tf.setBackend('cpu');
  });

  for (const kind of ['adam', 'momentum', 'sgd'] as const) {
    it(`${kind}: a learning rate set in place (per-step schedules) equals a recreated optimiser, fused and tfjs alike`, async () => {
      const config: OptimizerConfig = { ...base, kind, weightDecay: 0.01 };
      expect(await compare(config, 6, 3, 'in place')).to.equal(0);
      // The change takes effect: tfjs's optimiser with the rate set in place ends where the recreated one does, not where an unchanged one does.
      const finalWeights = async (how: 'in place' | 'recreate' | 'unchanged'): Promise<Float32Array> => {
        const [v] = variables(new Rng(5), `${kind}-${how}`);
        let optimizer = createOptimizer(config, config.learningRate);
        const rng = new Rng(9);
        for (let step = 0; step < 4; step++) {
          if (step === 2 && how === 'in place') setLearningRate(optimizer, config.learningRate / 10);
          if (step === 2 && how === 'recreate') optimizer = await withLearningRate(optimizer, config, config.learningRate / 10);
          const g = gradientsFor(step, [v as tf.Variable], rng);
          optimizer.applyGradients(g);
          tf.dispose(g);
        }
        const values = (v as tf.Variable).dataSync() as Float32Array;
        tf.dispose(v);
        optimizer.dispose();
        return values;
      };
      const [inPlace, recreated, unchanged] = [await finalWeights('in place'), await finalWeights('recreate'), await finalWeights('unchanged')];
      const maxDiff = (a: Float32Array, b: Float32Array): number => a.reduce((m, v, i) => Math.max(m, Math.abs(v - (b[i] as number))), 0);
      // Recreating tfjs's Adam recomputes beta^t as a power where the running product kept it: equal to rounding.
      expect(maxDiff(inPlace, recreated)).to.be.at.most(kind === 'adam' ? 1e-6 : 0);
      expect(maxDiff(inPlace, unchanged)).to.be.above(1e-3);
    });
  }

  it('Adam equals tfjs Adam bit for bit over 7 steps (weights and both moments)', async () => {
    expect(await compare(base, 7)).to.equal(0);
  });

  it('Adam with weight decay equals tfjs Adam + decoupled decay bit for bit', async () => {
    expect(await compare({ ...base, weightDecay: 0.05 }, 5)).to.equal(0);
  });

  it('Adam keeps equal through a learning-rate change (state moved by getWeights/setWeights)', async () => {
    expect(await compare({ ...base, weightDecay: 0.01 }, 6, 3)).to.equal(0);
  });

  for (const [kind, make] of [
    ['fused Adam', () => new FusedAdamOptimizer(0.001)],
    ["tfjs's Adam (through setOptimizerWeights)", () => tf.train.adam(0.001)],
  ] as const) {
    it(`${kind} restored from its weights after 150 steps continues bit for bit like the uninterrupted one (float32 running bias products)`, async () => {
      const run = async (restoreAt: number | undefined, tag: string): Promise<number[]> => {
        const vars = variables(new Rng(3), tag);
        const rng = new Rng(4);
        let optimizer: tf.Optimizer = make();
        for (let step = 0; step < 300; step++) {
          if (step === restoreAt) {
            const restored = make();
            await setOptimizerWeights(restored, await optimizer.getWeights());
            optimizer.dispose();
            optimizer = restored;
          }
          const grads = gradientsFor(step, vars, rng);
          optimizer.applyGradients(grads);
          tf.dispose(grads);
        }
        const values = vars.flatMap((v) => Array.from(v.dataSync()));
        tf.dispose(vars);
        optimizer.dispose();
        return values;
      };
      const tag = kind.replace(/\W/g, '');
      expect(await run(150, `resumed${tag}`)).to.deep.equal(await run(undefined, `whole${tag}`));
    });
  }

  it('momentum SGD with weight decay equals tfjs MomentumOptimizer + decay bit for bit', async () => {
    expect(await compare({ ...base, kind: 'momentum', weightDecay: 0.02 }, 6, 4)).to.equal(0);
  });

  it('plain SGD equals tfjs SGD bit for bit', async () => {
    expect(await compare({ ...base, kind: 'sgd', learningRate: 0.1, weightDecay: 0.01 }, 4)).to.equal(0);
  });

  for (const kind of ['adam', 'momentum'] as const) {
    it(`${kind}: a momentum set per step (setMomentum, OneCycle's cycleMomentum) takes effect, in tfjs's and the fused optimiser alike (${kind === 'adam' ? 'β1 and 1 - β1^t' : 'the momentum'} against the float64 formula)`, () => {
      const momenta = [0.95, 0.8, 0.6, 0.9];
      const lr = 0.05;
      const w0 = [0.5, -1, 2];
      const gradients = [[1, -2, 0.5], [0.3, 0.1, -1], [-0.5, 2, 1], [1, 1, -0.2]];
      // tfjs's formulas (Adam's ε 1e-7 inside sqrt(v / (1 - β2^t)); momentum a <- μ a + g, w <- w - lr a) in float64.
      const w = [...w0];
      const m = w.map(() => 0);
      const v = w.map(() => 0);
      momenta.forEach((mu, k) => {
        const t = k + 1;
        w.forEach((_, i) => {
          const g = gradients[k]?.[i] as number;
          if (kind === 'momentum') {
            m[i] = mu * (m[i] as number) + g;
            w[i] = (w[i] as number) - lr * (m[i] as number);
            return;
          }
          m[i] = mu * (m[i] as number) + (1 - mu) * g;
          v[i] = 0.999 * (v[i] as number) + 0.001 * g * g;
          w[i] = (w[i] as number) - (lr * ((m[i] as number) / (1 - mu ** t))) / (Math.sqrt((v[i] as number) / (1 - 0.999 ** t)) + 1e-7);
        });
      });
      for (const fused of [false, true]) {
        const variable = tf.variable(tf.tensor(w0), true, `setMomentum/${kind}/${fused}`);
        const optimizer = createOptimizer({ ...base, kind, weightDecay: 0 }, lr, { fused, decayed: () => false });
        momenta.forEach((mu, k) => {
          setMomentum(optimizer, mu);
          const g = tf.tensor(gradients[k] as number[]);
          optimizer.applyGradients({ [variable.name]: g });
          g.dispose();
        });
        Array.from(variable.dataSync()).forEach((value, i) => expect(value, `${fused ? 'fused' : 'tfjs'} w[${i}]`).to.be.closeTo(w[i] as number, 2e-6));
        optimizer.dispose();
        variable.dispose();
      }
    });
  }

  it('reports tfjs class names so checkpoints move between the two', () => {
    expect(new FusedAdamOptimizer(0.1).getClassName()).to.equal('Adam');
    expect(new FusedMomentumOptimizer(0.1, 0.9).getClassName()).to.equal('Momentum');
    expect(new FusedSgdOptimizer(0.1).getClassName()).to.equal('SGD');
  });

  it('updates a variable that shares its storage with another tensor without changing that tensor', async () => {
    const v = tf.variable(tf.tensor([1, 2, 3]), true);
    const alias = tf.reshape(v, [3]);
    const before = Array.from(alias.dataSync());
    new FusedSgdOptimizer(1).applyGradients({ [v.name]: tf.tensor([1, 1, 1]) });
    expect(Array.from(alias.dataSync())).to.deep.equal(before);
    expect(Array.from(v.dataSync())).to.deep.equal([0, 1, 2]);
    tf.dispose([v, alias]);
  });
});
