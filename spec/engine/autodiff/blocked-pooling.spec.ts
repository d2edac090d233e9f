/**
 * The max-pooling gradient on onnxruntime's blocked CPU layout (lib/engine/autodiff/rules/pooling.ts)
 * against the unblocked rule (which operator-gradients.spec.ts checks against PyTorch): a network
 * `x -> Add(x, p) -> MaxPool -> y` with p [1, C, H, W] trained, so that p's gradient is dx summed over
 * the batch, position by position. Inputs with ties (many zeros), +inf and NaN: the two rules give the
 * same values bit for bit. Also where the blocked form is used and where not.
 */
import { expect } from 'chai';
import { GraphTrainer } from '../../../lib/engine/graph-trainer/graph-trainer.js';
import { createGraphOptimizer } from '../../../lib/engine/graph-trainer/optimizer-graph.js';
import { compileStep } from '../../../lib/engine/graph-trainer/step-graph.js';
import { readOnnxGraph } from '../../../lib/engine/graph/onnx-ir.js';
import { decodeModel, encodeModel, floatTensor, node, tensorValueInfo, type AttributeValue } from '../../../lib/onnx/builder.js';
import { NCHWC_DOMAIN, nchwcBlockSize } from '../../../lib/onnx/nchwc.js';
import { Rng } from '../../../lib/util/rng.js';

interface PoolCase {
  name: string;
  batch: number;
  channels: number;
  size: [number, number];
  attributes: Record<string, AttributeValue>;
  /** Whether the blocked form applies. */
  blocked: boolean;
}

const CASES: PoolCase[] = [
  { name: '2x2, stride 2, 16 channels', batch: 4, channels: 16, size: [8, 8], attributes: { kernel_shape: { ints: [2, 2] }, strides: { ints: [2, 2] } }, blocked: true },
  { name: '3x3, stride 3, 8 channels (padded to a block), 9 x 6', batch: 3, channels: 8, size: [9, 6], attributes: { kernel_shape: { ints: [3, 3] }, strides: { ints: [3, 3] } }, blocked: true },
  { name: '3x3, stride 2, pads 1 (ResNet\'s: overlapping windows)', batch: 2, channels: 16, size: [8, 8], attributes: { kernel_shape: { ints: [3, 3] }, strides: { ints: [2, 2] }, pads: { ints: [1, 1, 1, 1] } }, blocked: true },
  { name: '3x3, stride 1, pads 1 (every input in nine windows)', batch: 2, channels: 16, size: [5, 6], attributes: { kernel_shape: { ints: [3, 3] }, strides: { ints: [1, 1] }, pads: { ints: [1, 1, 1, 1] } }, blocked: true },
  { name: '3x2, stride (2, 1), pads (0, 1, 1, 0), 7 x 5', batch: 2, channels: 12, size: [7, 5], attributes: { kernel_shape: { ints: [3, 2] }, strides: { ints: [2, 1] }, pads: { ints: [0, 1, 1, 0] } }, blocked: true },
  { name: '2x2, stride 2 on 7 x 7 (the last row and column in no window)', batch: 2, channels: 16, size: [7, 7], attributes: { kernel_shape: { ints: [2, 2] }, strides: { ints: [2, 2] } }, blocked: true },
  { name: '2x2, stride 2, 6 channels (not a multiple of 4: unblocked)', batch: 2, channels: 6, size: [4, 4], attributes: { kernel_shape: { ints: [2, 2] }, strides: { ints: [2, 2] } }, blocked: false },
  { name: '1x1, stride 2 (a kernel smaller than its stride: unblocked)', batch: 2, channels: 16, size: [6, 6], attributes: { kernel_shape: { ints: [1, 1] }, strides: { ints: [2, 2] } }, blocked: false },
];

function modelOf(c: PoolCase): Uint8Array {
  const rng = new Rng(5);
  const dims = [1, c.channels, ...c.size];
  return encodeModel({
    graphName: c.name,
    inputs: [tensorValueInfo('x', 'float32', ['batch', c.channels, ...c.size])],
    outputs: [tensorValueInfo('y', 'float32', [])],
    nodes: [node('Add', ['x', 'p'], ['h']), node('MaxPool', ['h'], ['y'], c.attributes)],
    // p of zeros and ones: sums with x keep x's ties.
    initializers: [floatTensor('p', dims, Array.from({ length: dims.reduce((a, b) => a * b, 1) }, () => (rng.next() < 0.5 ? 0 : 1)))],
  });
}

/** Seeded inputs with ties (a third zeros), and one +inf and one NaN per image. */
function inputOf(c: PoolCase): Float32Array {
  const rng = new Rng(9);
  const per = c.channels * c.size[0] * c.size[1];
  const x = Float32Array.from({ length: c.batch * per }, () => (rng.next() < 0.33 ? 0 : Math.round(4 * rng.nextGaussian())));
  for (let i = 0; i < c.batch; i++) {
    x[i * per + 5] = Infinity;
    x[i * per + per - 3] = Number.NaN;
  }
  return x;
}

describe('autodiff: the max-pooling gradient on the blocked CPU layout', function () {
  this.timeout(60_000);
  let block: number | undefined;
  before(async () => {
    block = await nchwcBlockSize();
  });

  for (const c of CASES) {
    it(`${c.name}: the gradient bit for bit as the unblocked rule's, ties, +inf and NaN included`, async function () {
      if (block === undefined) this.skip();
      const x = inputOf(c);
      const gradients: Float32Array[] = [];
      for (const blockedConvolutions of [false, true]) {
        const trainer = await GraphTrainer.create({ model: modelOf(c), itemDims: [c.channels, ...c.size], optimizer: { kind: 'sgd' }, recordGradients: true, threads: 2, blockedConvolutions });
        try {
          const y = await trainer.forward(x);
          const seed = new Rng(3);
          await trainer.step(x, Float32Array.from(y, () => seed.nextGaussian()), 0);
          gradients.push(trainer.gradient('p') as Float32Array);
        } finally {
          await trainer.release();
        }
      }
      const [plain, blocked] = gradients as [Float32Array, Float32Array];
      expect(plain.some((v) => v !== 0), 'some gradient reaches p').to.equal(true);
      const differing = plain.reduce((count, v, i) => count + (Object.is(v, blocked[i]) ? 0 : 1), 0);
      expect(differing).to.equal(0);
    });

    it(`${c.name}: the blocked form ${c.blocked ? 'is' : 'is not'} used`, async function () {
      if (block === undefined) this.skip();
      const compiled = compileStep({
        graph: readOnnxGraph(modelOf(c), c.name),
        inputDims: new Map([['x', [c.batch, c.channels, ...c.size]]]),
        trained: ['p'],
        decayed: new Set(),
        output: 'y',
        optimizer: createGraphOptimizer({ kind: 'sgd' }),
        nchwcBlock: block,
      });
      const blockedNodes = (decodeModel(compiled.stepModel, 'step').graph?.node ?? []).filter((n) => n.domain === NCHWC_DOMAIN);
      expect(blockedNodes.length > 0).to.equal(c.blocked);
    });
  }
});
