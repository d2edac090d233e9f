import { expect } from 'chai';
import {
  blockedConvBackpropFilterModel,
  blockedConvBackpropInputApplies,
  blockedConvBackpropInputModel,
  blockedConvModel,
} from '../../../../lib/engine/tfjs/ort-cpu/blocked-conv-models.js';
import { nchwcReadsChannels } from '../../../../lib/onnx/nchwc.js';
import { axisPhases } from '../../../../lib/engine/graph/polyphase.js';
import { blockedLayoutBlockSize } from '../../../../lib/engine/tfjs/ort-cpu/heavy-kernels.js';
import type { ConvGeometry } from '../../../../lib/engine/tfjs/ort-cpu/op-models.js';
import { loadOrtSyncRuntime, type OrtSyncRuntime } from '../../../../lib/engine/tfjs/ort-cpu/ort-sync-runtime.js';
import { Rng } from '../../../../lib/util/rng.js';
import { relativeDifference } from '../../../helpers/compare-backends.js';

/** A convolution case: NHWC input, [kh, kw, ci, co] filter, explicit geometry. */
interface ConvCase {
  name: string;
  x: [number, number, number, number];
  w: [number, number, number, number];
  g: ConvGeometry;
}

function outSize(size: number, before: number, after: number, taps: number, stride: number, dilation: number): number {
  return Math.floor((size + before + after - (dilation * (taps - 1) + 1)) / stride) + 1;
}

function outShapeOf(c: ConvCase): [number, number, number, number] {
  const [b, h, w] = c.x;
  const [kh, kw, , co] = c.w;
  return [b, outSize(h, c.g.pads[0], c.g.pads[2], kh, c.g.strides[0], c.g.dilations[0]), outSize(w, c.g.pads[1], c.g.pads[3], kw, c.g.strides[1], c.g.dilations[1]), co];
}

/**
 * Float64 reference of the three convolution products: y = conv(x, w); dx and dW for an output
 * gradient dy, by visiting every (output position, tap) pair of the definition
 * y[b, o1, o2, co] = sum of x[b, o1*s + r*d - top, o2*s + c*d - left, ci] * w[r, c, ci, co].
 */
function referenceConv(c: ConvCase, x: Float32Array, w: Float32Array, dy: Float32Array): { y: Float64Array; dx: Float64Array; dw: Float64Array } {
  const [b, h, wd, ci] = c.x;
  const [kh, kw, , co] = c.w;
  const [, oh, ow] = outShapeOf(c);
  const y = new Float64Array(b * oh * ow * co);
  const dx = new Float64Array(x.length);
  const dw = new Float64Array(w.length);
  for (let n = 0; n < b; n++) {
    for (let o1 = 0; o1 < oh; o1++) {
      for (let o2 = 0; o2 < ow; o2++) {
        for (let r = 0; r < kh; r++) {
          const i1 = o1 * c.g.strides[0] + r * c.g.dilations[0] - c.g.pads[0];
          if (i1 < 0 || i1 >= h) continue;
          for (let s = 0; s < kw; s++) {
            const i2 = o2 * c.g.strides[1] + s * c.g.dilations[1] - c.g.pads[1];
            if (i2 < 0 || i2 >= wd) continue;
            for (let a = 0; a < ci; a++) {
              const xi = ((n * h + i1) * wd + i2) * ci + a;
              for (let o = 0; o < co; o++) {
                const wi = ((r * kw + s) * ci + a) * co + o;
                const yi = ((n * oh + o1) * ow + o2) * co + o;
                y[yi] = (y[yi] as number) + (x[xi] as number) * (w[wi] as number);
                dx[xi] = (dx[xi] as number) + (dy[yi] as number) * (w[wi] as number);
                dw[wi] = (dw[wi] as number) + (dy[yi] as number) * (x[xi] as number);
              }
            }
          }
        }
      }
    }
  }
  return { y, dx, dw };
}

function randomArray(rng: Rng, shape: readonly number[]): Float32Array {
  return Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, () => rng.nextGaussian());
}

const geometry = (strides: [number, number], pads: [number, number, number, number], dilations: [number, number] = [1, 1]): ConvGeometry => ({ strides, dilations, pads });

/**
 * The blocked-layout graphs (onnxruntime's NCHWc kernels) against a float64 reference over channel
 * counts below, at and above the block (padding of input and output channels), strides 1-3, kernels
 * 1-5, asymmetric and explicit padding, dilation and odd sizes; and which geometries the polyphase
 * input gradient takes.
 */
describe('blocked-layout convolution graphs (onnxruntime NCHWc kernels)', function () {
  this.timeout(60_000);
  let runtime: OrtSyncRuntime;
  let block: number;

  before(() => {
    runtime = loadOrtSyncRuntime({ threads: 2 });
    block = blockedLayoutBlockSize(runtime);
  });
  after(() => runtime.dispose());

  it('finds the block size of the processor (8 or 16 on x64, where onnxruntime has AVX2 or AVX-512 kernels)', () => {
    expect([0, 8, 16]).to.include(block);
    if (process.arch === 'x64') expect(block).to.be.oneOf([8, 16]);
  });

  it('splits a stride-2 3x3 input gradient into phases with their taps and padding (worked example)', () => {
    // 'same' on 8 rows: padding 0 before, 1 after; output 4 rows. Even rows use taps 2 and 0
    // (dy[m - 1] * w[2] + dy[m] * w[0]), odd rows tap 1 (dy[m] * w[1]).
    expect(axisPhases(3, 2, 0, 8, 4)).to.deep.equal([
      { taps: [2, 0], padBefore: 1, padAfter: 0 },
      { taps: [1], padBefore: 0, padAfter: 0 },
    ]);
    // Stride 1 is one phase: the flipped filter with padding k - 1 - before and k - 1 - after.
    expect(axisPhases(3, 1, 1, 7, 7)).to.deep.equal([{ taps: [2, 1, 0], padBefore: 1, padAfter: 1 }]);
    expect(axisPhases(3, 2, 1, 9, 5), 'a length not divisible by the stride').to.equal(null);
    expect(axisPhases(1, 2, 0, 8, 4), 'a phase without taps (kernel smaller than stride)').to.equal(null);
  });

  it('reads inputs the kernels support: fewer channels than a block, or a multiple of 4', () => {
    expect(nchwcReadsChannels(3, 16)).to.equal(true);
    expect(nchwcReadsChannels(16, 16)).to.equal(true);
    expect(nchwcReadsChannels(20, 16)).to.equal(true);
    expect(nchwcReadsChannels(18, 16)).to.equal(false);
    expect(nchwcReadsChannels(0, 16)).to.equal(false);
  });

  const cases: ConvCase[] = [
    { name: '3 channels (NCHW read), 3x3 same stride 2, even size', x: [2, 8, 8, 3], w: [3, 3, 3, 16], g: geometry([2, 2], [0, 0, 1, 1]) },
    { name: '16 channels (one block), 3x3 same stride 1', x: [2, 6, 7, 16], w: [3, 3, 16, 16], g: geometry([1, 1], [1, 1, 1, 1]) },
    { name: '20 input channels, 24 output channels (both padded), 3x3 stride 2', x: [3, 8, 6, 20], w: [3, 3, 20, 24], g: geometry([2, 2], [0, 0, 1, 1]) },
    { name: '32 channels to 5 (output padded), 5x3 asymmetric padding', x: [2, 6, 9, 32], w: [5, 3, 32, 5], g: geometry([1, 1], [2, 1, 2, 1]) },
    { name: '1 channel, 3x3 valid stride 2, odd size', x: [3, 9, 11, 1], w: [3, 3, 1, 17], g: geometry([2, 2], [0, 0, 0, 0]) },
    { name: '16 channels, 2x2 valid stride 2 (non-overlapping)', x: [2, 8, 6, 16], w: [2, 2, 16, 32], g: geometry([2, 2], [0, 0, 0, 0]) },
    { name: '16 channels, 3x3 stride 3, explicit padding 1 (no polyphase: a phase would start before dy)', x: [2, 9, 9, 16], w: [3, 3, 16, 16], g: geometry([3, 3], [1, 1, 1, 1]) },
    { name: '16 channels, 3x3 valid stride 3', x: [2, 9, 12, 16], w: [3, 3, 16, 16], g: geometry([3, 3], [0, 0, 0, 0]) },
    { name: '16 channels, 1x1 stride (1, 2)', x: [2, 4, 8, 16], w: [1, 1, 16, 8], g: geometry([1, 2], [0, 0, 0, 0]) },
    { name: '4 channels, 3x3 dilation 2', x: [2, 9, 9, 4], w: [3, 3, 4, 16], g: geometry([1, 1], [2, 2, 2, 2], [2, 2]) },
    { name: '8 channels, 3x3 valid stride 2 dropping a row and a column', x: [20, 10, 8, 8], w: [3, 3, 8, 16], g: geometry([2, 2], [0, 0, 0, 0]) },
    { name: 'a batch of 16 (the filter gradient\'s input blocked), 3x3 same stride 1: its padding written out first', x: [16, 6, 5, 8], w: [3, 3, 8, 16], g: geometry([1, 1], [1, 1, 1, 1]) },
    { name: 'a batch of 20 (blocked, padded to 32), 3x3 stride 2, padding after only', x: [20, 7, 6, 4], w: [3, 3, 4, 8], g: geometry([2, 2], [0, 0, 1, 1]) },
  ];
  for (const c of cases) {
    it(`forward, input gradient and filter gradient: ${c.name}`, () => {
      const rng = new Rng(31);
      const yShape = outShapeOf(c);
      const x = randomArray(rng, c.x);
      const w = randomArray(rng, c.w);
      const dy = randomArray(rng, yShape);
      const expected = referenceConv(c, x, w, dy);
      const linear = { biasShape: null, activation: 'linear' as const, preluShape: null, leakyreluAlpha: 0 };

      const [y] = runtime.compile(blockedConvModel(c.x, c.w, c.g, yShape, linear, block)).run({ x: { data: x, dims: c.x }, w: { data: w, dims: c.w } }, [yShape]);
      expect(relativeDifference(expected.y, y?.data as Float32Array), 'y').to.be.below(1e-5);

      const [, h, wd] = c.x;
      const polyphase = c.g.dilations.every((d) => d === 1) && axisPhases(c.w[0], c.g.strides[0], c.g.pads[0], h, yShape[1]) !== null && axisPhases(c.w[1], c.g.strides[1], c.g.pads[1], wd, yShape[2]) !== null;
      const inputGradient = blockedConvBackpropInputModel(yShape, c.w, c.g, c.x, block);
      expect(inputGradient !== null, 'input-gradient graph built exactly where the polyphase form applies').to.equal(polyphase);
      expect(blockedConvBackpropInputApplies(yShape, c.w, c.g, c.x, block), 'blockedConvBackpropInputApplies').to.equal(polyphase);
      if (inputGradient) {
        const [dx] = runtime.compile(inputGradient).run({ dy: { data: dy, dims: yShape }, w: { data: w, dims: c.w } }, [c.x]);
        expect(relativeDifference(expected.dx, dx?.data as Float32Array), 'dx').to.be.below(1e-5);
      }

      const filterGradient = blockedConvBackpropFilterModel(c.x, yShape, c.g, c.w, block);
      expect(filterGradient, 'filter-gradient graph (batch sizes 2, 3, 16 and 20 are all readable)').to.not.equal(null);
      const [dw] = runtime.compile(filterGradient as Uint8Array).run({ x: { data: x, dims: c.x }, dy: { data: dy, dims: yShape } }, [c.w]);
      expect(relativeDifference(expected.dw, dw?.data as Float32Array), 'dW').to.be.below(1e-5);
    });
  }

  it('has no filter-gradient graph for a batch the kernels cannot read (18: above a block, not a multiple of 4)', () => {
    expect(blockedConvBackpropFilterModel([18, 4, 4, 3], [18, 4, 4, 8], geometry([1, 1], [1, 1, 1, 1]), [3, 3, 3, 8], 16)).to.equal(null);
  });

  it('has no input-gradient graph at dilation 2 or for output-gradient channels the kernels cannot read', () => {
    expect(blockedConvBackpropInputModel([2, 9, 9, 16], [3, 3, 4, 16], geometry([1, 1], [2, 2, 2, 2], [2, 2]), [2, 9, 9, 4], 16)).to.equal(null);
    expect(blockedConvBackpropInputModel([2, 8, 8, 18], [3, 3, 4, 18], geometry([1, 1], [1, 1, 1, 1]), [2, 8, 8, 4], 16)).to.equal(null);
  });
});
