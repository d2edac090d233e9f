/**
 * The graph trainer against PyTorch: gradients and running statistics of three small networks
 * (spec/fixtures/graph-gradients, written by scripts/reference/torch_graph_gradients.py; reference values
 * in float64), optimiser
 * updates against torch.optim's formulas, and the errors for what it cannot train.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { GraphTrainer } from '../../../lib/engine/graph-trainer/graph-trainer.js';
import { encodeModel, floatTensor, node, tensorValueInfo } from '../../../lib/onnx/builder.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';
import { relativeError } from '../../helpers/relative-error.js';

const FIXTURES = new URL('../../fixtures/graph-gradients/', import.meta.url);

interface GradientFixture {
  inputDims: number[];
  input: number[];
  seed: number[];
  output: number[];
  gradients: Record<string, number[]>;
  torchFloat32Error: Record<string, number>;
  runningStatistics: Record<string, number[]>;
}

describe('GraphTrainer', function () {
  this.timeout(60_000);

  for (const name of ['convnet', 'resnet', 'zoo', 'mobile']) {
    it(`reproduces PyTorch's gradients and running statistics of the ${name} network`, async () => {
      const fixture = JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), 'utf8')) as GradientFixture;
      const trainer = await GraphTrainer.create({
        model: readFileSync(new URL(`${name}.onnx`, FIXTURES)),
        itemDims: fixture.inputDims.slice(1),
        optimizer: { kind: 'sgd' },
        recordGradients: true,
        threads: 1,
      });
      const input = Float32Array.from(fixture.input);
      expect(relativeError(await trainer.forward(input), fixture.output)).to.be.below(1e-5);
      const recomputed = await trainer.step(input, Float32Array.from(fixture.seed), 0.01);
      expect(relativeError(recomputed, fixture.output)).to.be.below(1e-5);
      expect(Object.keys(fixture.gradients)).to.not.be.empty;
      for (const [param, expected] of Object.entries(fixture.gradients)) {
        const gradient = trainer.gradient(param);
        expect(gradient, param).to.not.equal(undefined);
        // As close to the exact (float64) gradient as PyTorch's float32 gradient is, or within 1e-4.
        const tolerance = Math.max(1e-4, 3 * (fixture.torchFloat32Error[param] as number));
        expect(relativeError(gradient as Float32Array, expected), param).to.be.below(tolerance);
      }
      for (const [statistic, expected] of Object.entries(fixture.runningStatistics)) {
        expect(relativeError(trainer.value(statistic) as Float32Array, expected), statistic).to.be.below(1e-5);
      }
      await trainer.release();
    });
  }

  /** A linear layer y = x W + b as an ONNX model (x [4, 3], W [3, 2]), optionally followed by `extra` operator. */
  function linearModel(extra?: string): Uint8Array {
    const nodes = [node('Gemm', ['x', 'W', 'b'], [extra ? 'h' : 'y'])];
    if (extra) nodes.push(node(extra, ['h'], ['y']));
    return encodeModel({
      graphName: 'linear',
      inputs: [tensorValueInfo('x', 'float32', ['batch', 3])],
      outputs: [tensorValueInfo('y', 'float32', ['batch', 2])],
      nodes,
      initializers: [floatTensor('W', [3, 2], [0.5, -0.25, 1, 0.75, -0.5, 0.125]), floatTensor('b', [2], [0.1, -0.2])],
    });
  }
  const x = Float32Array.from([1, 2, 3, -1, 0.5, 2, 0, -2, 1, 0.25, 0.5, -0.75]);
  const seed = Float32Array.from([1, -1, 0.5, 2, -0.5, 0.25, 1.5, -2]);
  // d/dW of sum(y * seed) = xᵀ seed, d/db = Σ rows of seed (independent of W: the same every step).
  const gradW = [0, 1, 2].flatMap((i) => [0, 1].map((j) => [0, 1, 2, 3].reduce((s, r) => s + (x[r * 3 + i] as number) * (seed[r * 2 + j] as number), 0)));
  const gradB = [0, 1].map((j) => [0, 1, 2, 3].reduce((s, r) => s + (seed[r * 2 + j] as number), 0));

  /**
   * torch.optim's update formulas in float64, three steps at the rates `lrs`; `momenta`: each step's β1
   * (Adam) or momentum (SGD, Nesterov) as OneCycleLR sets them, default 0.9 throughout.
   */
  function reference(kind: 'adam' | 'adamw' | 'sgd', p0: number[], g: number[], lrs: number[], decay: number, momenta: number[] = lrs.map(() => 0.9)): number[] {
    const p = [...p0];
    const m = p.map(() => 0);
    const v = p.map(() => 0);
    lrs.forEach((lr, k) => {
      const t = k + 1;
      const mu = momenta[k] as number;
      p.forEach((_, i) => {
        let gi = g[i] as number;
        if (kind === 'adamw') p[i] = (p[i] as number) * (1 - lr * decay);
        else gi += decay * (p[i] as number);
        if (kind === 'sgd') {
          m[i] = t === 1 ? gi : mu * (m[i] as number) + gi;
          p[i] = (p[i] as number) - lr * (gi + mu * (m[i] as number));
          return;
        }
        m[i] = mu * (m[i] as number) + (1 - mu) * gi;
        v[i] = 0.999 * (v[i] as number) + 0.001 * gi * gi;
        const denominator = Math.sqrt(v[i] as number) / Math.sqrt(1 - 0.999 ** t) + 1e-8;
        p[i] = (p[i] as number) - (lr / (1 - mu ** t)) * (m[i] as number) / denominator;
      });
    });
    return p;
  }

  for (const kind of ['adam', 'adamw', 'sgd'] as const) {
    it(`applies torch.optim's ${kind === 'sgd' ? 'SGD with Nesterov momentum and L2 decay' : kind === 'adam' ? 'Adam with L2 decay' : 'AdamW'} update, decay on weights only`, async () => {
      const decay = 0.05;
      const optimizer = kind === 'sgd' ? ({ kind, momentum: 0.9, nesterov: true, weightDecay: decay } as const) : ({ kind, weightDecay: decay } as const);
      const trainer = await GraphTrainer.create({ model: linearModel(), itemDims: [3], optimizer, threads: 1 });
      const lrs = [0.1, 0.05, 0.2];
      for (const lr of lrs) await trainer.step(x, seed, lr);
      expect(trainer.stepCount).to.equal(3);
      expect(relativeError(trainer.value('W') as Float32Array, reference(kind, [0.5, -0.25, 1, 0.75, -0.5, 0.125], gradW, lrs, decay))).to.be.below(1e-6);
      expect(relativeError(trainer.value('b') as Float32Array, reference(kind, [0.1, -0.2], gradB, lrs, 0))).to.be.below(1e-6);
      await trainer.release();
    });

    it(`${kind}: a momentum set per step (OneCycle's cycle_momentum) replaces ${kind === 'sgd' ? 'the momentum' : 'β1, in 1 - β1^t too'}, as in torch.optim`, async () => {
      const decay = 0.05;
      const optimizer = kind === 'sgd' ? ({ kind, momentum: 0.9, nesterov: true, weightDecay: decay } as const) : ({ kind, weightDecay: decay } as const);
      const trainer = await GraphTrainer.create({ model: linearModel(), itemDims: [3], optimizer, threads: 1 });
      const lrs = [0.1, 0.05, 0.2];
      const momenta = [0.95, 0.85, 0.6];
      for (const [k, lr] of lrs.entries()) await trainer.step(x, seed, lr, momenta[k]);
      expect(relativeError(trainer.value('W') as Float32Array, reference(kind, [0.5, -0.25, 1, 0.75, -0.5, 0.125], gradW, lrs, decay, momenta))).to.be.below(1e-6);
      expect(relativeError(trainer.value('b') as Float32Array, reference(kind, [0.1, -0.2], gradB, lrs, 0, momenta))).to.be.below(1e-6);
      // Not the update at a constant 0.9.
      expect(relativeError(trainer.value('W') as Float32Array, reference(kind, [0.5, -0.25, 1, 0.75, -0.5, 0.125], gradW, lrs, decay))).to.be.above(1e-3);
      await expectDmlError(trainer.step(x, seed, 0.1, 1), 'E_ARG', /^Expected a number in \[0, 1\) for momentum/);
      await trainer.release();
    });
  }

  /**
   * y = pool(x + B) with B a trained [1, 1, 4, 4] offset (zeros), so that d loss / d B is the gradient
   * the pooling's backward routes to each input position.
   */
  async function routedGradient(pool: ReturnType<typeof node>, outputDims: number[], input: number[], seedValues: number[]): Promise<number[]> {
    const model = encodeModel({
      graphName: 'pool',
      inputs: [tensorValueInfo('x', 'float32', ['batch', 1, 4, 4])],
      outputs: [tensorValueInfo('y', 'float32', ['batch', ...outputDims])],
      nodes: [node('Add', ['x', 'B'], ['h']), pool],
      initializers: [floatTensor('B', [1, 1, 4, 4], new Array<number>(16).fill(0))],
    });
    const trainer = await GraphTrainer.create({ model, itemDims: [1, 4, 4], optimizer: { kind: 'sgd', momentum: 0, dampening: 0, nesterov: false, weightDecay: 0 }, trained: ['B'], recordGradients: true, threads: 1 });
    const images = Float32Array.from(input);
    await trainer.forward(images);
    await trainer.step(images, Float32Array.from(seedValues), 0.1);
    const gradient = Array.from(trainer.gradient('B') as Float32Array);
    await trainer.release();
    return gradient;
  }

  // Ties as ReLU leaves them: PyTorch gives each window's gradient to its first maximum (row-major), never
  // to padding, and adds up where overlapping windows pick the same element (the expected gradients are
  // those of PyTorch's max_pool2d and adaptive_max_pool2d backward on the same input and seeds).
  const tied = [0, 0, 3, 3, 0, 0, 3, 1, 2, 5, 0, 0, 5, 5, 0, 0];
  it('routes a MaxPool gradient to the first maximum of each window, ties included', async () => {
    const gradient = await routedGradient(node('MaxPool', ['h'], ['y'], { kernel_shape: { ints: [2, 2] }, strides: { ints: [2, 2] } }), [1, 2, 2], tied, [1, 2, 3, 4]);
    expect(gradient).to.deep.equal([1, 0, 2, 0, 0, 0, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0]);
  });

  it('routes an overlapping, padded MaxPool gradient to first maxima inside the input, adding up', async () => {
    // 3x3 windows, stride 2, padding 1 over the 4x4 input: window (0,0) covers rows/columns -1..1 (max 0 at
    // (0,0), padding excluded), (0,1) covers columns 1..3 (max 3 first at (0,2)), (1,0) rows 1..3 (max 5 at
    // (2,1)), (1,1) rows 1..3, columns 1..3 (max 5 first at (2,1) too: both gradients add up there).
    const gradient = await routedGradient(node('MaxPool', ['h'], ['y'], { kernel_shape: { ints: [3, 3] }, strides: { ints: [2, 2] }, pads: { ints: [1, 1, 1, 1] } }), [1, 2, 2], tied, [1, 2, 3, 4]);
    expect(gradient).to.deep.equal([1, 0, 2, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0]);
  });

  it('routes a GlobalMaxPool gradient to the first maximum, ties included', async () => {
    const gradient = await routedGradient(node('GlobalMaxPool', ['h'], ['y']), [1, 1, 1], tied, [2]);
    expect(gradient).to.deep.equal([0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0]);
  });

  // Values at and around the kinks, and PyTorch 1.13's gradients of hardswish and hardsigmoid there
  // (torch.nn.functional.hardswish / hardsigmoid backward with these seeds).
  const kinks = [-4, -3, -2.5, -1, 0, 0.5, 1, 2.75, 3, 3.5, 5, -3.25, 2, -2, 6, -6];
  const kinkSeeds = [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8];
  it("differentiates HardSwish and HardSigmoid as PyTorch does, at the kinks too", async () => {
    const hardSwish = await routedGradient(node('HardSwish', ['h'], ['y']), [1, 4, 4], kinks, kinkSeeds);
    const torchHardSwish = [0, -1, -0.9999999403953552, 0.6666666269302368, 2.5, 4, 5.833333492279053, 11.333333969116211, 1, 2, 3, 0, 5.833333969116211, -1.0000001192092896, 7, 0];
    hardSwish.forEach((v, i) => expect(v, `HardSwish at ${kinks[i]}`).to.be.closeTo(torchHardSwish[i] as number, 1e-6));
    const hardSigmoid = await routedGradient(node('HardSigmoid', ['h'], ['y'], { alpha: { f: 1 / 6 }, beta: { f: 0.5 } }), [1, 4, 4], kinks, kinkSeeds);
    const torchHardSigmoid = [0, 0, 0.5, 0.6666666865348816, 0.8333333730697632, 1, 1.1666667461395264, 1.3333333730697632, 0, 0, 0, 0, 0.8333333730697632, 1, 0, 0];
    hardSigmoid.forEach((v, i) => expect(v, `HardSigmoid at ${kinks[i]}`).to.be.closeTo(torchHardSigmoid[i] as number, 1e-6));
  });

  it('exports the forward model with the trained weights', async () => {
    const trainer = await GraphTrainer.create({ model: linearModel(), itemDims: [3], optimizer: { kind: 'sgd' }, threads: 1 });
    await trainer.step(x, seed, 0.1);
    const again = await GraphTrainer.create({ model: trainer.exportModel(), itemDims: [3], optimizer: { kind: 'sgd' }, threads: 1 });
    expect(Array.from(again.value('W') as Float32Array)).to.deep.equal(Array.from(trainer.value('W') as Float32Array));
    expect(Array.from(await again.forward(x))).to.deep.equal(Array.from(await trainer.forward(x)));
    await Promise.all([trainer.release(), again.release()]);
  });

  describe('micro-batches (gradient accumulation)', () => {
    const fixture = JSON.parse(readFileSync(new URL('resnet.json', FIXTURES), 'utf8')) as GradientFixture;
    const model = readFileSync(new URL('resnet.onnx', FIXTURES));
    const input = Float32Array.from(fixture.input);
    const outputGradient = Float32Array.from(fixture.seed);
    const itemDims = fixture.inputDims.slice(1);
    const per = input.length / 6;
    const dim = outputGradient.length / 6;
    const optimizer = { kind: 'sgd', momentum: 0.9 } as const;

    it('takes the whole batch\'s step when no layer uses batch statistics (frozen BatchNorm)', async () => {
      const whole = await GraphTrainer.create({ model, itemDims, optimizer, frozenBatchNorm: true, recordGradients: true, threads: 1 });
      const split = await GraphTrainer.create({ model, itemDims, optimizer, frozenBatchNorm: true, recordGradients: true, threads: 1, microBatch: 4 });
      for (let step = 0; step < 2; step++) {
        const embeddings = await whole.forward(input);
        expect(relativeError(await split.forward(input), Array.from(embeddings))).to.be.below(1e-6);
        await whole.step(input, outputGradient, 0.05);
        await split.step(input, outputGradient, 0.05);
        for (const param of whole.trainedNames) {
          expect(relativeError(split.gradient(param) as Float32Array, Array.from(whole.gradient(param) as Float32Array)), `${param} gradient`).to.be.below(1e-5);
          expect(relativeError(split.value(param) as Float32Array, Array.from(whole.value(param) as Float32Array)), param).to.be.below(1e-5);
        }
      }
      expect(split.stepCount).to.equal(2);
      await Promise.all([whole.release(), split.release()]);
    });

    it('normalises each micro-batch by its own statistics and updates the running statistics once per micro-batch, as PyTorch accumulates', async () => {
      // The reference: each micro-batch trained alone at learning rate 0 (its gradient recorded, its running statistics chained).
      const alone = await GraphTrainer.create({ model, itemDims, optimizer, recordGradients: true, threads: 1 });
      const split = await GraphTrainer.create({ model, itemDims, optimizer, recordGradients: true, threads: 1, microBatch: 4 });
      const sums = new Map<string, number[]>();
      const embeddings: number[] = [];
      for (const [start, count] of [[0, 4], [4, 2]] as const) {
        const rows = input.slice(start * per, (start + count) * per);
        embeddings.push(...(await alone.forward(rows)));
        await alone.step(rows, outputGradient.slice(start * dim, (start + count) * dim), 0);
        for (const param of alone.trainedNames) {
          const g = alone.gradient(param) as Float32Array;
          sums.set(param, Array.from(g, (v, i) => v + (sums.get(param)?.[i] ?? 0)));
        }
      }
      expect(relativeError(await split.forward(input), embeddings)).to.be.below(1e-6);
      const statistic = Object.keys(fixture.runningStatistics)[0] as string;
      const before = Array.from(split.value(statistic) as Float32Array);
      await split.step(input, outputGradient, 0.05);
      for (const [param, sum] of sums) expect(relativeError(split.gradient(param) as Float32Array, sum), `${param} gradient`).to.be.below(1e-5);
      for (const name of Object.keys(fixture.runningStatistics)) expect(relativeError(split.value(name) as Float32Array, Array.from(alone.value(name) as Float32Array)), name).to.be.below(1e-6);
      expect(Array.from(split.value(statistic) as Float32Array)).to.not.deep.equal(before);
      await Promise.all([alone.release(), split.release()]);
    });

    it('refuses a micro-batch that is not a positive integer, and one with a loss compiled into the step', async () => {
      await expectDmlError(GraphTrainer.create({ model, itemDims, optimizer, microBatch: 0 }), 'E_ARG', /Expected a positive integer for microBatch/);
      const loss = { name: 'ephn', build: () => { throw new Error('not compiled'); }, inputValues: () => new Map() };
      await expectDmlError(GraphTrainer.create({ model, itemDims, optimizer, microBatch: 2, loss }), 'E_ARG', /Expected none with a loss compiled into the step \(ephn would see one micro-batch, not the whole batch\) for microBatch/);
    });
  });

  it('names the operator without a gradient rule and its node, before any work', async () => {
    await expectDmlError(
      GraphTrainer.create({ model: linearModel('Elu'), itemDims: [3], optimizer: { kind: 'adam' } }),
      'E_MODEL',
      /^node 'y' \(Elu\): the graph trainer has no gradient rule for Elu \(it differentiates Add, /,
    );
  });

  it('refuses input dimensions that contradict the model', async () => {
    await expectDmlError(GraphTrainer.create({ model: linearModel(), itemDims: [5], optimizer: { kind: 'adam' } }), 'E_ARG', /itemDims\[0\]/);
    await expectDmlError(GraphTrainer.create({ model: linearModel(), itemDims: [], optimizer: { kind: 'adam' } }), 'E_ARG', /itemDims/);
  });
});
