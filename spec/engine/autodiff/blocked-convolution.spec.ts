/**
 * The convolutions in onnxruntime's blocked CPU layout (lib/engine/autodiff/rules/blocked-convolution.ts)
 * against the rule's ONNX-Conv form (which operator-gradients.spec.ts and the step-parity specs check
 * against PyTorch): for each geometry, a network `x -> Conv a (1x1) -> Conv b (the case) -> y`, both
 * weights trained, compiled both ways; the outputs and both weights' gradients (a's through b's input
 * gradient) agree within float rounding. Also which convolutions the blocked form takes (the compiled
 * graph's `com.microsoft.nchwc` Conv nodes) and which it leaves to ONNX's Conv.
 */
import { expect } from 'chai';
import { GraphTrainer } from '../../../lib/engine/graph-trainer/graph-trainer.js';
import { createGraphOptimizer } from '../../../lib/engine/graph-trainer/optimizer-graph.js';
import { compileStep } from '../../../lib/engine/graph-trainer/step-graph.js';
import { readOnnxGraph } from '../../../lib/engine/graph/onnx-ir.js';
import { decodeModel, encodeModel, floatTensor, node, tensorValueInfo, type AttributeValue } from '../../../lib/onnx/builder.js';
import { NCHWC_DOMAIN, nchwcBlockSize } from '../../../lib/onnx/nchwc.js';
import { Rng } from '../../../lib/util/rng.js';
import { relativeError } from '../../helpers/relative-error.js';

interface ConvolutionCase {
  name: string;
  batch: number;
  /** Conv b's input channels (Conv a's output), output channels, input size. */
  channels: number;
  outChannels: number;
  size: [number, number];
  kernel: [number, number];
  attributes: Record<string, AttributeValue>;
  bias?: boolean;
  group?: number;
  /** How many blocked convolutions the step graph has with a block of 16 (or 8): forward a and b, b's input gradient (one per output phase), a's and b's weight gradients. */
  blocked: number;
}

const CASES: ConvolutionCase[] = [
  { name: '3x3, pads 1, with bias', batch: 16, channels: 16, outChannels: 32, size: [8, 8], kernel: [3, 3], attributes: { pads: { ints: [1, 1, 1, 1] } }, bias: true, blocked: 5 },
  { name: '3x3, stride 2, pads 1, a row and a column no window reaches (the weight gradient cropped; the input gradient by four phases)', batch: 16, channels: 16, outChannels: 16, size: [10, 10], kernel: [3, 3], attributes: { strides: { ints: [2, 2] }, pads: { ints: [1, 1, 1, 1] } }, blocked: 8 },
  { name: '3x3, stride 2, pads 1 on a 9 x 9 input (odd: the input gradient by ConvTranspose)', batch: 16, channels: 16, outChannels: 16, size: [9, 9], kernel: [3, 3], attributes: { strides: { ints: [2, 2] }, pads: { ints: [1, 1, 1, 1] } }, blocked: 4 },
  { name: '1x1, stride 2, 8 output channels (a dY read plain; one phase without taps: ConvTranspose)', batch: 16, channels: 16, outChannels: 8, size: [8, 8], kernel: [1, 1], attributes: { strides: { ints: [2, 2] } }, blocked: 4 },
  { name: '2x2, stride 2, 8 output channels read plain (four one-tap phases)', batch: 16, channels: 24, outChannels: 8, size: [8, 6], kernel: [2, 2], attributes: { strides: { ints: [2, 2] } }, blocked: 8 },
  { name: '3x3, stride (2, 1), pads (1, 0, 0, 1), 20 output channels', batch: 16, channels: 16, outChannels: 20, size: [8, 7], kernel: [3, 3], attributes: { strides: { ints: [2, 1] }, pads: { ints: [1, 0, 0, 1] } }, blocked: 6 },
  { name: 'dilation 2, asymmetric pads, 2x3 kernel, 12 output channels (padded to a block)', batch: 32, channels: 8, outChannels: 12, size: [7, 6], kernel: [2, 3], attributes: { dilations: { ints: [2, 2] }, pads: { ints: [1, 0, 0, 2] } }, blocked: 5 },
  { name: '1x1, 24 input and 20 output channels', batch: 16, channels: 24, outChannels: 20, size: [5, 5], kernel: [1, 1], attributes: {}, blocked: 5 },
  { name: '5x5, pads 2, 4 input channels (fewer than a block: read as NCHW)', batch: 16, channels: 4, outChannels: 16, size: [7, 7], kernel: [5, 5], attributes: { pads: { ints: [2, 2, 2, 2] } }, blocked: 5 },
  { name: 'a batch of 6 (weight gradients by im2col)', batch: 6, channels: 16, outChannels: 16, size: [6, 6], kernel: [3, 3], attributes: { pads: { ints: [1, 1, 1, 1] } }, blocked: 3 },
  { name: '2 groups (Conv b as ONNX Conv)', batch: 16, channels: 16, outChannels: 16, size: [6, 6], kernel: [3, 3], attributes: { pads: { ints: [1, 1, 1, 1] } }, group: 2, blocked: 2 },
  { name: '18 channels, not a multiple of 4 (Conv b\'s forward and Conv a\'s weight gradient as ONNX Conv and im2col)', batch: 16, channels: 18, outChannels: 16, size: [6, 6], kernel: [3, 3], attributes: { pads: { ints: [1, 1, 1, 1] } }, blocked: 3 },
];

/** The case's two-convolution network, seeded weights. */
function modelOf(c: ConvolutionCase): Uint8Array {
  const rng = new Rng(7);
  const values = (n: number, scale: number): number[] => Array.from({ length: n }, () => scale * rng.nextGaussian());
  const group = c.group ?? 1;
  const [kh, kw] = c.kernel;
  const wb = [c.outChannels, c.channels / group, kh, kw];
  return encodeModel({
    graphName: c.name,
    inputs: [tensorValueInfo('x', 'float32', ['batch', 4, ...c.size])],
    outputs: [tensorValueInfo('y', 'float32', [])],
    nodes: [
      node('Conv', ['x', 'wa'], ['h'], { kernel_shape: { ints: [1, 1] } }),
      node('Conv', ['h', 'wb', ...(c.bias ? ['bb'] : [])], ['y'], { kernel_shape: { ints: c.kernel }, group: { i: group }, ...c.attributes }),
    ],
    initializers: [
      floatTensor('wa', [c.channels, 4, 1, 1], values(c.channels * 4, 0.5)),
      floatTensor('wb', wb, values(wb.reduce((a, b) => a * b, 1), 0.2)),
      ...(c.bias ? [floatTensor('bb', [c.outChannels], values(c.outChannels, 0.1))] : []),
    ],
  });
}

describe('autodiff: convolutions in onnxruntime\'s blocked CPU layout (NCHWc)', function () {
  this.timeout(60_000);
  let block: number | undefined;

  before(async () => {
    block = await nchwcBlockSize();
  });

  it('nchwcBlockSize: the CPU kernels\' channel block (16 with AVX-512, 8 with AVX2), the same promise every call', async () => {
    expect(nchwcBlockSize()).to.equal(nchwcBlockSize());
    // The machines dmlkit is tested on are x86-64 with AVX2 at least; an ARM machine may have none.
    if (process.arch === 'x64') expect([8, 16]).to.include(block);
  });

  for (const c of CASES) {
    it(`${c.name}: outputs and gradients as with ONNX's Conv`, async function () {
      if (block === undefined) this.skip();
      const model = modelOf(c);
      const rng = new Rng(11);
      const x = Float32Array.from({ length: c.batch * 4 * c.size[0] * c.size[1] }, () => rng.nextGaussian());
      const results = [];
      for (const blockedConvolutions of [false, true]) {
        const trainer = await GraphTrainer.create({ model, name: c.name, itemDims: [4, ...c.size], optimizer: { kind: 'sgd' }, recordGradients: true, threads: 2, blockedConvolutions });
        try {
          const output = await trainer.forward(x);
          const seedRng = new Rng(5);
          await trainer.step(x, Float32Array.from(output, () => seedRng.nextGaussian()), 0);
          results.push({ output, gradients: ['wa', 'wb', ...(c.bias ? ['bb'] : [])].map((p) => trainer.gradient(p) as Float32Array) });
        } finally {
          await trainer.release();
        }
      }
      const [plain, blocked] = results as [(typeof results)[0], (typeof results)[0]];
      expect(relativeError(blocked.output, plain.output), 'output').to.be.below(1e-5);
      blocked.gradients.forEach((g, i) => expect(relativeError(g, plain.gradients[i] as Float32Array), `gradient ${i}`).to.be.below(2e-5));
    });

    it(`${c.name}: ${c.blocked} of the step's convolutions blocked`, async function () {
      if (block === undefined) this.skip();
      const graph = readOnnxGraph(modelOf(c), c.name);
      const compiled = compileStep({
        graph,
        inputDims: new Map([['x', [c.batch, 4, ...c.size]]]),
        trained: ['wa', 'wb', ...(c.bias ? ['bb'] : [])],
        decayed: new Set(),
        output: 'y',
        optimizer: createGraphOptimizer({ kind: 'sgd' }),
        nchwcBlock: block,
      });
      const nodes = [...(decodeModel(compiled.forwardModel, 'forward').graph?.node ?? []), ...(decodeModel(compiled.stepModel, 'step').graph?.node ?? [])];
      // Without the depthwise 1 x 1 Convs that write a weight gradient's padding out.
      const blockedConvolutions = nodes.filter((n) => n.opType === 'Conv' && n.domain === NCHWC_DOMAIN && !n.attribute?.some((a) => a.name === 'group'));
      // Conv a's input gradient is not needed (x is data); each blocked Conv node is one of the five.
      expect(blockedConvolutions.length).to.equal(c.blocked);
      const plain = compileStep({ graph, inputDims: new Map([['x', [c.batch, 4, ...c.size]]]), trained: ['wa', 'wb'], decayed: new Set(), output: 'y', optimizer: createGraphOptimizer({ kind: 'sgd' }) });
      expect(decodeModel(plain.stepModel, 'step').graph?.node?.some((n) => (n.domain ?? '') !== '')).to.equal(false);
    });
  }

  it('GraphTrainer: on `auto` landing on the CPU, the graphs are compiled again with the blocked layout; `blockedConvolutions: false` keeps ONNX\'s Conv', async function () {
    if (block === undefined) this.skip();
    const c = CASES[0] as ConvolutionCase;
    const rng = new Rng(3);
    const x = Float32Array.from({ length: c.batch * 4 * c.size[0] * c.size[1] }, () => rng.nextGaussian());
    const gradients: Float32Array[] = [];
    for (const [device, blockedConvolutions, expected] of [['auto', true, block], ['cpu', false, undefined]] as const) {
      const trainer = await GraphTrainer.create({ model: modelOf(c), itemDims: [4, ...c.size], optimizer: { kind: 'sgd' }, recordGradients: true, device, blockedConvolutions });
      try {
        expect(trainer.nchwcBlock, 'before any graph').to.equal(undefined);
        const output = await trainer.forward(x);
        if (trainer.provider !== 'cpu') this.skip(); // a GPU took the graphs: nothing to check here
        expect(trainer.nchwcBlock, `${device}, blockedConvolutions ${blockedConvolutions}`).to.equal(expected);
        await trainer.step(x, output.map(() => 1), 0);
        gradients.push(trainer.gradient('wb') as Float32Array);
      } finally {
        await trainer.release();
      }
    }
    expect(relativeError(gradients[0] as Float32Array, gradients[1] as Float32Array)).to.be.below(2e-5);
  });

  it('compileStep rejects an NCHWc block that is not onnxruntime\'s (a multiple of 4, at least 8)', () => {
    const c = CASES[0] as ConvolutionCase;
    const graph = readOnnxGraph(modelOf(c), c.name);
    for (const nchwcBlock of [4, 12.5, 0]) {
      expect(() => compileStep({ graph, inputDims: new Map([['x', [16, 4, 8, 8]]]), trained: ['wa'], decayed: new Set(), output: 'y', optimizer: createGraphOptimizer({ kind: 'sgd' }), nchwcBlock })).to.throw(/nchwcBlock/);
    }
  });
});
