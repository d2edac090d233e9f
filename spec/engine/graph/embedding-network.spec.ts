/**
 * prepareEmbeddingNetwork: a PyTorch-exported network (spec/fixtures/graph-trainer/resnet-triplet) cut
 * at its last feature map and given a new head computes what the head's formula gives on that feature
 * map; NHWC input; seeded PyTorch-default initialisation; the graph trainer trains it; GeM pooling by
 * its formula, with its gradient against central finite differences; the errors.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { prepareEmbeddingNetwork } from '../../../lib/engine/graph/embedding-network.js';
import { readOnnxGraph } from '../../../lib/engine/graph/onnx-ir.js';
import { GraphTrainer } from '../../../lib/engine/graph-trainer/graph-trainer.js';
import { decodeModel, encodeModel, floatTensor, int64Value, node, tensorValueInfo } from '../../../lib/onnx/builder.js';
import ort from '../../../lib/onnx/ort.js';
import { Rng } from '../../../lib/util/rng.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

const RESNET = new Uint8Array(readFileSync(new URL('../../fixtures/graph-trainer/resnet-triplet/initial.onnx', import.meta.url)));
const FEATURES = '/block2/relu_1/Relu_output_0'; // block 2's output, [N, 32, 8, 8]
const ITEM = [3, 16, 16];

/** The model's output `name` (a graph output or an inner value) for `input` of `dims`. */
async function run(model: Uint8Array, input: Float32Array, dims: number[], name?: string): Promise<Float32Array> {
  let bytes = model;
  if (name !== undefined) {
    // Expose an inner value as an extra graph output.
    const m = decodeModel(model, 'model');
    const g = m.graph ?? {};
    bytes = encodeModel({
      graphName: g.name ?? 'm',
      inputs: g.input ?? [],
      outputs: [...(g.output ?? []), { name, type: { tensorType: { elemType: 1 } } }],
      nodes: g.node ?? [],
      initializers: g.initializer ?? [],
      opsetImports: (m.opsetImport ?? []).map((o) => ({ domain: o.domain ?? '', version: int64Value(o.version) ?? 0 })),
      irVersion: int64Value(m.irVersion) ?? 8,
    });
  }
  const session = await ort.InferenceSession.create(bytes);
  const out = await session.run({ input: new ort.Tensor('float32', input, dims) });
  await session.release();
  return out[name ?? (session.outputNames[0] as string)]?.data as Float32Array;
}

describe('prepareEmbeddingNetwork', () => {
  const rng = new Rng(3);
  const batch = 4;
  const images = Float32Array.from({ length: batch * 3 * 16 * 16 }, () => rng.nextGaussian());
  const head = { pooling: 'avgmax', batchNorm: true, embeddingDim: 8 } as const;

  it('cuts at a named value and adds [average, max] pooling, a BatchNorm neck, a Linear layer and L2 normalisation', async () => {
    const model = prepareEmbeddingNetwork(RESNET, { itemDims: ITEM, output: FEATURES, head, seed: 5 });
    const graph = readOnnxGraph(model, 'prepared');
    expect(graph.outputs.map((o) => [o.name, o.dims])).to.deep.equal([['embedding', ['batch', 8]]]);
    expect(graph.initializers.has('head.weight'), 'the old head is cut away').to.equal(false);
    const weight = graph.initializers.get('head/fc.weight')?.data as Float32Array;
    const bias = graph.initializers.get('head/fc.bias')?.data as Float32Array;
    expect([weight.length, bias.length]).to.deep.equal([8 * 64, 8]);
    const bound = 1 / Math.sqrt(64); // PyTorch's Linear: uniform in ±1/sqrt(fan_in)
    expect(Math.max(...Array.from(weight, Math.abs), ...Array.from(bias, Math.abs))).to.be.at.most(bound).and.above(0.9 * bound);

    // The head by its formula on the cut network's feature map.
    const map = await run(RESNET, images, [batch, ...ITEM], FEATURES);
    expect(map.length).to.equal(batch * 32 * 64);
    const expected: number[] = [];
    for (let n = 0; n < batch; n++) {
      const pooled: number[] = [];
      const channel = (c: number): Float32Array => map.subarray((n * 32 + c) * 64, (n * 32 + c + 1) * 64);
      for (let c = 0; c < 32; c++) pooled.push(channel(c).reduce((a, b) => a + b, 0) / 64);
      for (let c = 0; c < 32; c++) pooled.push(Math.max(...channel(c)));
      const neck = pooled.map((v) => v / Math.sqrt(1 + 1e-5)); // untrained BatchNorm: mean 0, variance 1
      const row = Array.from({ length: 8 }, (_, d) => neck.reduce((sum, v, k) => sum + v * (weight[d * 64 + k] as number), bias[d] as number));
      const norm = Math.sqrt(row.reduce((s, v) => s + v * v, 0) + 1e-12);
      expected.push(...row.map((v) => v / norm));
    }
    const actual = await run(model, images, [batch, ...ITEM]);
    expect(actual.length).to.equal(expected.length);
    actual.forEach((v, i) => expect(v).to.be.closeTo(expected[i] as number, 1e-5));
  });

  it("keeps node names unique when the network's own nodes are named like the new ones (models/default.onnx ends in a node named 'embedding')", async () => {
    const shipped = new Uint8Array(readFileSync(new URL('../../../models/default.onnx', import.meta.url)));
    const prepared = prepareEmbeddingNetwork(shipped, { itemDims: [1, 28, 28] });
    const names = (decodeModel(prepared, 'prepared').graph?.node ?? []).map((n) => n.name);
    expect(new Set(names).size).to.equal(names.length);
    const pixels = Float32Array.from({ length: 2 * 784 }, () => rng.next());
    // The network's LpNormalization already normalised: the added one changes nothing.
    const embed = async (model: Uint8Array): Promise<Float32Array> => {
      const session = await ort.InferenceSession.create(model);
      const result = await session.run({ image: new ort.Tensor('float32', pixels, [2, 1, 28, 28]) });
      await session.release();
      return result[session.outputNames[0] as string]?.data as Float32Array;
    };
    const [own, out] = [await embed(shipped), await embed(prepared)];
    expect(out.length).to.equal(128);
    out.forEach((v, i) => expect(v).to.be.closeTo(own[i] as number, 1e-6));
  });

  it('takes NHWC images with inputLayout NHWC, and the same seed draws the same head', async () => {
    const nchw = prepareEmbeddingNetwork(RESNET, { itemDims: ITEM, output: FEATURES, head, seed: 5 });
    const nhwc = prepareEmbeddingNetwork(RESNET, { itemDims: ITEM, output: FEATURES, head, seed: 5, inputLayout: 'NHWC' });
    const transposed = new Float32Array(images.length);
    for (let n = 0; n < batch; n++) for (let c = 0; c < 3; c++) for (let p = 0; p < 256; p++) transposed[(n * 256 + p) * 3 + c] = images[(n * 3 + c) * 256 + p] as number;
    const [a, b] = [await run(nchw, images, [batch, ...ITEM]), await run(nhwc, transposed, [batch, 16, 16, 3])];
    a.forEach((v, i) => expect(b[i]).to.be.closeTo(v, 1e-6));
    const weights = (m: Uint8Array, seed: number): number[] =>
      Array.from(readOnnxGraph(prepareEmbeddingNetwork(m, { itemDims: ITEM, output: FEATURES, head, seed }), 'p').initializers.get('head/fc.weight')?.data ?? []);
    expect(weights(RESNET, 5)).to.deep.equal(weights(RESNET, 5));
    expect(weights(RESNET, 6)).to.not.deep.equal(weights(RESNET, 5));
  });

  it('the graph trainer trains the prepared network: backbone and head move', async () => {
    const model = prepareEmbeddingNetwork(RESNET, { itemDims: ITEM, output: FEATURES, head, seed: 5 });
    const trainer = await GraphTrainer.create({ model, itemDims: ITEM, optimizer: { kind: 'sgd', momentum: 0.9 }, threads: 1 });
    expect(trainer.trainedNames).to.include.members(['head/fc.weight', 'head/neck.weight', 'stem.0.weight']);
    const before = new Map([...trainer.weights()].map(([k, v]) => [k, v.slice()]));
    const embeddings = await trainer.forward(images);
    await trainer.step(images, Float32Array.from(embeddings, (_, i) => (i % 3) - 1), 0.1);
    for (const name of ['head/fc.weight', 'stem.0.weight', 'head/neck.running_mean']) {
      expect(Array.from(trainer.value(name) as Float32Array), name).to.not.deep.equal(Array.from(before.get(name) as Float32Array));
    }
    await trainer.release();
  });

  it('freezeUpTo: the weights up to a named value stay, the rest trains; an unknown value is named', async () => {
    const model = prepareEmbeddingNetwork(RESNET, { itemDims: ITEM, output: FEATURES, head, seed: 5 });
    const all = await GraphTrainer.create({ model, itemDims: ITEM, optimizer: { kind: 'sgd' }, threads: 1 });
    const frozenPart = (await GraphTrainer.create({ model, itemDims: ITEM, optimizer: { kind: 'sgd' }, threads: 1, freezeUpTo: FEATURES }));
    const stem = all.trainedNames.filter((n) => n.startsWith('stem.') || n.startsWith('block'));
    expect(stem.length).to.be.above(0);
    expect(frozenPart.trainedNames.filter((n) => stem.includes(n))).to.deep.equal([]);
    expect(frozenPart.trainedNames).to.include.members(['head/fc.weight', 'head/neck.weight']);
    const before = new Map([...frozenPart.weights()].map(([k, v]) => [k, v.slice()]));
    const embeddings = await frozenPart.forward(images);
    await frozenPart.step(images, Float32Array.from(embeddings, (_, i) => (i % 3) - 1), 0.1);
    expect(frozenPart.value('head/fc.weight')).to.not.deep.equal(before.get('head/fc.weight'));
    for (const name of stem) expect(frozenPart.value(name), name).to.equal(undefined);
    const exported = readOnnxGraph(frozenPart.exportModel(), 'exported');
    const original = readOnnxGraph(model, 'original');
    for (const name of stem) expect(Array.from(exported.initializers.get(name)?.data ?? []), name).to.deep.equal(Array.from(original.initializers.get(name)?.data ?? []));
    await all.release();
    await frozenPart.release();
    await expectDmlError(() => GraphTrainer.create({ model, itemDims: ITEM, optimizer: { kind: 'sgd' }, freezeUpTo: 'no/such/value' }), 'E_ARG', 'Expected the output of a node of the network for freezeUpTo but received "no/such/value"');
  });

  it('learningRateScale: a parameter group steps at its factor of the rate (SGD and AdamW), the rest at the rate', async () => {
    const model = prepareEmbeddingNetwork(RESNET, { itemDims: ITEM, output: FEATURES, head, seed: 5 });
    const original = readOnnxGraph(model, 'original');
    for (const optimizer of [{ kind: 'sgd' }, { kind: 'adamw', weightDecay: 0.05 }] as const) {
      const plain = await GraphTrainer.create({ model, itemDims: ITEM, optimizer, threads: 1 });
      const backbone = plain.trainedNames.filter((n) => !n.startsWith('head/'));
      const scaled = await GraphTrainer.create({ model, itemDims: ITEM, optimizer, threads: 1, learningRateScale: (n) => (backbone.includes(n) ? 0.1 : 1) });
      const gradient = Float32Array.from({ length: batch * 8 }, (_, i) => Math.sin(i));
      for (const trainer of [plain, scaled]) await trainer.step(images, gradient, 0.05);
      const delta = (trainer: GraphTrainer, name: string): number[] => {
        const before = original.initializers.get(name)?.data as Float32Array;
        return Array.from(trainer.value(name) as Float32Array, (v, i) => v - (before[i] as number));
      };
      for (const name of ['stem.0.weight', 'head/fc.weight', 'head/neck.weight']) {
        const factor = name.startsWith('head/') ? 1 : 0.1;
        const [a, b] = [delta(plain, name), delta(scaled, name)];
        expect(Math.max(...a.map(Math.abs)), `${optimizer.kind} ${name} moved`).to.be.above(0);
        a.forEach((v, i) => expect(b[i], `${optimizer.kind} ${name}[${i}]`).to.be.closeTo(factor * v, 1e-6 + 1e-4 * Math.abs(v)));
      }
      await plain.release();
      await scaled.release();
    }
    await expectDmlError(() => GraphTrainer.create({ model, itemDims: ITEM, optimizer: { kind: 'sgd' }, learningRateScale: (n) => (n === 'head/fc.weight' ? 0 : 1) }), 'E_ARG', 'Expected a positive number for learningRateScale(head/fc.weight) but received 0');
  });

  it('frozenBatchNorm: the training forward is the inference one, running statistics stay, the gradient is that of the affine map', async () => {
    /** `model` with the initializers of `values` replaced. */
    const withInitializers = (bytes: Uint8Array, values: ReadonlyMap<string, Float32Array>): Uint8Array => {
      const m = decodeModel(bytes, 'model');
      const g = m.graph ?? {};
      return encodeModel({
        graphName: g.name ?? 'm',
        inputs: g.input ?? [],
        outputs: g.output ?? [],
        nodes: g.node ?? [],
        initializers: (g.initializer ?? []).map((t) => {
          const replaced = values.get(t.name ?? '');
          return replaced ? floatTensor(t.name ?? '', (t.dims ?? []).map((d) => int64Value(d) ?? 0), replaced) : t;
        }),
        opsetImports: (m.opsetImport ?? []).map((o) => ({ domain: o.domain ?? '', version: int64Value(o.version) ?? 0 })),
        irVersion: int64Value(m.irVersion) ?? 8,
      });
    };
    // Running statistics far from a fresh network's (mean 0, variance 1), so that using them shows.
    const prepared = prepareEmbeddingNetwork(RESNET, { itemDims: ITEM, output: FEATURES, head: { pooling: 'avg', embeddingDim: 8 }, seed: 5 });
    const statistics = new Map<string, Float32Array>();
    for (const [name, tensor] of readOnnxGraph(prepared, 'prepared').initializers) {
      if (name.endsWith('running_mean')) statistics.set(name, Float32Array.from(tensor.data, (_, i) => 0.2 * Math.sin(i + 1)));
      if (name.endsWith('running_var')) statistics.set(name, Float32Array.from(tensor.data, (_, i) => 0.3 + 0.5 * Math.abs(Math.cos(i))));
    }
    expect(statistics.size).to.be.above(2);
    const model = withInitializers(prepared, statistics);
    const trainer = await GraphTrainer.create({ model, itemDims: ITEM, optimizer: { kind: 'sgd' }, threads: 1, frozenBatchNorm: true });
    // With running statistics, training mode computes what inference computes.
    const inference = await run(model, images, [batch, ...ITEM]);
    const training = await trainer.forward(images);
    training.forEach((v, i) => expect(v).to.be.closeTo(inference[i] as number, 1e-5));
    // One plain SGD step with lr 1 moves a weight by -dL/dw, L = Σ embeddings ⊙ G; against central
    // finite differences of the inference model (the same function when BatchNorm is frozen).
    const G = Float32Array.from({ length: batch * 8 }, (_, i) => Math.cos(i * 0.7));
    const weightName = 'stem.0.weight';
    const weight = readOnnxGraph(model, 'model').initializers.get(weightName)?.data as Float32Array;
    await trainer.step(images, G, 1);
    const moved = trainer.value(weightName) as Float32Array;
    const exported = readOnnxGraph(trainer.exportModel(), 'exported');
    for (const [name, values] of statistics) expect(Array.from(exported.initializers.get(name)?.data ?? []), name).to.deep.equal(Array.from(values));
    await trainer.release();
    const lossAt = async (values: Float32Array): Promise<number> =>
      (await run(withInitializers(model, new Map([[weightName, values]])), images, [batch, ...ITEM])).reduce((sum, v, i) => sum + v * (G[i] as number), 0);
    const h = 1e-3;
    for (const i of [0, 7, 30, 100]) {
      const plus = Float32Array.from(weight);
      const minus = Float32Array.from(weight);
      plus[i]! += h;
      minus[i]! -= h;
      const numeric = ((await lossAt(plus)) - (await lossAt(minus))) / (2 * h);
      expect((weight[i] as number) - (moved[i] as number), `${weightName}[${i}]`).to.be.closeTo(numeric, 2e-3 + 2e-2 * Math.abs(numeric));
    }
  });

  describe('GeM pooling (pooling: gem)', () => {
    // A one-convolution network [N, 2, 4, 4] -> [N, 3, 4, 4], so that a weight sits before the pooling.
    const convWeight = Float32Array.from({ length: 3 * 2 * 3 * 3 }, (_, i) => Math.sin(i * 1.7) * 0.4);
    const convNet = (weight: Float32Array): Uint8Array =>
      encodeModel({
        graphName: 'conv',
        inputs: [tensorValueInfo('input', 'float32', ['batch', 2, 4, 4])],
        outputs: [tensorValueInfo('features', 'float32', ['batch', 3, 4, 4])],
        nodes: [node('Conv', ['input', 'conv.weight'], ['features'], { pads: { ints: [1, 1, 1, 1] } })],
        initializers: [floatTensor('conv.weight', [3, 2, 3, 3], weight)],
      });
    const gemHead = { pooling: 'gem', gemP: 3, embeddingDim: 4 } as const;
    const gemRng = new Rng(11);
    const x = Float32Array.from({ length: 3 * 2 * 16 }, () => gemRng.nextGaussian());

    it('computes (mean(max(x, 1e-6)^p))^(1/p) per channel before the Linear layer', async () => {
      const model = prepareEmbeddingNetwork(convNet(convWeight), { itemDims: [2, 4, 4], head: gemHead, seed: 2 });
      const graph = readOnnxGraph(model, 'gem');
      const weight = graph.initializers.get('head/fc.weight')?.data as Float32Array;
      const bias = graph.initializers.get('head/fc.bias')?.data as Float32Array;
      const map = await run(convNet(convWeight), x, [3, 2, 4, 4]);
      const actual = await run(model, x, [3, 2, 4, 4]);
      for (let n = 0; n < 3; n++) {
        const pooled = Array.from({ length: 3 }, (_, c) => {
          const values = Array.from(map.subarray((n * 3 + c) * 16, (n * 3 + c + 1) * 16), (v) => Math.max(v, 1e-6) ** 3);
          return (values.reduce((a, b) => a + b, 0) / 16) ** (1 / 3);
        });
        const row = Array.from({ length: 4 }, (_, d) => pooled.reduce((sum, v, k) => sum + v * (weight[d * 3 + k] as number), bias[d] as number));
        const norm = Math.sqrt(row.reduce((a, v) => a + v * v, 0) + 1e-12);
        row.forEach((v, d) => expect(actual[n * 4 + d]).to.be.closeTo(v / norm, 1e-5));
      }
    });

    it("the graph trainer's gradient through GeM matches central finite differences of the convolution's weight", async () => {
      const model = prepareEmbeddingNetwork(convNet(convWeight), { itemDims: [2, 4, 4], head: gemHead, seed: 2 });
      // L = Σ embeddings ⊙ G; one plain SGD step with lr 1 moves each weight by -dL/dw.
      const G = Float32Array.from({ length: 3 * 4 }, (_, i) => Math.cos(i * 0.9));
      const trainer = await GraphTrainer.create({ model, itemDims: [2, 4, 4], optimizer: { kind: 'sgd' }, threads: 1 });
      expect(trainer.trainedNames).to.include('conv.weight');
      await trainer.step(x, G, 1);
      const moved = trainer.value('conv.weight') as Float32Array;
      await trainer.release();
      const lossAt = async (weight: Float32Array): Promise<number> => {
        const prepared = prepareEmbeddingNetwork(convNet(weight), { itemDims: [2, 4, 4], head: gemHead, seed: 2 });
        const out = await run(prepared, x, [3, 2, 4, 4]);
        return out.reduce((sum, v, i) => sum + v * (G[i] as number), 0);
      };
      const h = 1e-2;
      for (const i of [0, 5, 13, 27, 40, 53]) {
        const plus = Float32Array.from(convWeight);
        const minus = Float32Array.from(convWeight);
        plus[i]! += h;
        minus[i]! -= h;
        const numeric = ((await lossAt(plus)) - (await lossAt(minus))) / (2 * h);
        const analytic = (convWeight[i] as number) - (moved[i] as number);
        expect(analytic, `conv.weight[${i}]`).to.be.closeTo(numeric, 2e-3 + 2e-2 * Math.abs(numeric));
      }
    });

    it('refuses an exponent that is not a positive number', async () => {
      for (const gemP of [0, 1e-30, 1e6]) {
        await expectDmlError(
          () => prepareEmbeddingNetwork(convNet(convWeight), { itemDims: [2, 4, 4], head: { ...gemHead, gemP } }),
          'E_ARG',
          `Expected a number in [0.1, 50] (float32 keeps GeM meaningful there) for head.gemP but received ${gemP}`,
        );
      }
    });
  });

  it('names a missing cut point and a shape the head cannot take', async () => {
    await expectDmlError(() => prepareEmbeddingNetwork(RESNET, { itemDims: ITEM, output: 'nope', head }), 'E_MODEL', "model has no node output named 'nope' to end the network at");
    await expectDmlError(() => prepareEmbeddingNetwork(RESNET, { itemDims: ITEM, output: FEATURES }), 'E_MODEL', `model: '${FEATURES}' has shape [N, 32, 8, 8]; without a head the network must end in features [N, D]`);
    await expectDmlError(() => prepareEmbeddingNetwork(RESNET, { itemDims: [3, 16], head }), 'E_ARG', /itemDims/);
    await expectDmlError(() => prepareEmbeddingNetwork(RESNET, { itemDims: [3, 28, 28], head }), 'E_ARG', "Expected 16, as model's input input [batch, 3, 16, 16] says for itemDims[1] but received 28");
  });

  it('a head too large for an ONNX file, and an initializer whose dims disagree with its data, are one line each (not "Invalid typed array length")', async () => {
    await expectDmlError(
      () => prepareEmbeddingNetwork(RESNET, { itemDims: ITEM, output: FEATURES, head: { embeddingDim: 1e9 } }),
      'E_ARG',
      'Expected at most 16777215 (its Linear layer from 32 features must fit in an ONNX file, 2 GiB) for head.embeddingDim but received 1000000000',
    );
    // A weight whose dims say 10^10 values over 10 stored ones (the builder checks dims, so they are changed after).
    const weight = { ...floatTensor('w', [10], new Float32Array(10)), dims: [100000, 100000] };
    const bytes = encodeModel({
      graphName: 'huge',
      inputs: [tensorValueInfo('x', 'float32', ['batch', 100000])],
      outputs: [tensorValueInfo('y', 'float32', ['batch', 100000])],
      initializers: [weight],
      nodes: [node('MatMul', ['x', 'w'], ['y'])],
    });
    await expectDmlError(() => readOnnxGraph(bytes, 'huge.onnx'), 'E_MODEL', 'huge.onnx: tensor w holds 40 bytes, expected 40000000000 bytes for dims [100000, 100000]');
  });
});
