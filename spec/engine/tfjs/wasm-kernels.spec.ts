import { expect } from 'chai';
import { AdamKernel, type AdamScalars } from '../../../lib/engine/tfjs/wasm/adam-kernel.js';
import { batchNormTrainingBackward, batchNormTrainingForward } from '../../../lib/engine/tfjs/wasm/batch-norm-simd.js';
import { maxPoolPositions, reluGradInto, reluInto } from '../../../lib/engine/tfjs/wasm/relu-pool-kernels.js';
import { Rng } from '../../../lib/util/rng.js';
import { assembleWat, WASM_KERNELS } from '../../../scripts/tools/wasm-assembler.js';

/**
 * The WebAssembly SIMD kernels (lib/engine/tfjs/wasm/): each module's committed bytes are the assembly of its
 * text. The Adam kernel computes what tfjs's kernels compute, i.e. every operation rounded to
 * float32, bit for bit, for any length (padding lanes), special values and a growing memory. (The
 * fused optimiser's spec compares the whole optimiser with tfjs's AdamOptimizer.) The ReLU and
 * max-pooling kernels are compared with tfjs's cpu kernels through the ort-cpu backend in
 * spec/engine/tfjs/ort-cpu/light-kernels.spec.ts.
 */
const f32 = Math.fround;

/** The reference: tfjs's Adam arithmetic emulated in JavaScript, one float32 rounding per operation. */
function referenceStep(w: Float32Array, g: Float32Array, m: Float32Array, v: Float32Array, s: AdamScalars, decayFactor?: number): void {
  for (let j = 0; j < w.length; j++) {
    const gj = g[j] as number;
    const mj = f32(f32((m[j] as number) * s.beta1) + f32(gj * s.oneMinusBeta1));
    const vj = f32(f32((v[j] as number) * s.beta2) + f32(f32(gj * gj) * s.oneMinusBeta2));
    m[j] = mj;
    v[j] = vj;
    const update = f32(f32(f32(mj / s.bias1) / f32(f32(Math.sqrt(f32(vj / s.bias2))) + s.epsilon)) * s.negLearningRate);
    w[j] = f32(update + (w[j] as number));
    if (decayFactor !== undefined) w[j] = f32((w[j] as number) * decayFactor);
  }
}

const SCALARS: AdamScalars = {
  beta1: f32(0.9),
  beta2: f32(0.999),
  oneMinusBeta1: f32(1 - 0.9),
  oneMinusBeta2: f32(1 - 0.999),
  bias1: f32(1 - f32(0.9 ** 3)),
  bias2: f32(1 - f32(0.999 ** 3)),
  epsilon: f32(1e-7),
  negLearningRate: f32(-3e-3),
};

function arrays(length: number, seed: number): [Float32Array, Float32Array, Float32Array, Float32Array] {
  const rng = new Rng(seed);
  const specials = [0, -0, 1e-42, -1e-40, 3e38, -2.5e-30, 1, -1];
  const value = (i: number): number => (i % 11 < specials.length && i % 3 === 0 ? (specials[i % 11] as number) : rng.nextGaussian() * 10 ** ((i % 5) - 2));
  const w = Float32Array.from({ length }, (_, i) => value(i));
  const g = Float32Array.from({ length }, (_, i) => value(i + 7));
  const m = Float32Array.from({ length }, (_, i) => value(i + 3) / 10);
  const v = Float32Array.from({ length }, (_, i) => Math.abs(value(i + 5)) / 100);
  return [w, g, m, v];
}

function bits(a: Float32Array): number[] {
  return Array.from(new Int32Array(a.buffer, a.byteOffset, a.length));
}

describe('engine/tfjs/wasm: WebAssembly kernels', () => {
  for (const kernel of WASM_KERNELS) {
    it(`${kernel.constant} (${kernel.file}) holds the assembly of its text (run scripts/tools/assemble-wasm.ts after editing a text)`, async () => {
      expect(Buffer.from(await assembleWat(kernel.wat)).toString('base64')).to.equal(kernel.base64);
    });
  }

  for (const [length, decay] of [
    [1, undefined],
    [3, f32(1 - 3e-3 * 5e-4)],
    [4, undefined],
    [1027, f32(0.5)],
    [300_001, f32(1 - 1e-3 * 1e-2)],
  ] as Array<[number, number | undefined]>) {
    it(`Adam equals float32 arithmetic bit for bit: ${length} element(s), ${decay === undefined ? 'no weight decay' : `decay factor ${decay}`}`, () => {
      const kernel = new AdamKernel();
      const [w, g, m, v] = arrays(length, length);
      const expected = [w.slice(), g, m.slice(), v.slice()] as const;
      // Three steps, the moments carried over, as in training.
      for (let step = 0; step < 3; step++) {
        referenceStep(expected[0], expected[1], expected[2], expected[3], SCALARS, decay);
        kernel.step(w, g, m, v, SCALARS, decay);
      }
      expect(bits(w)).to.deep.equal(bits(expected[0]));
      expect(bits(m)).to.deep.equal(bits(expected[2]));
      expect(bits(v)).to.deep.equal(bits(expected[3]));
      expect(bits(w)).not.to.deep.equal(bits(arrays(length, length)[0]));
    });
  }

  it('Adam grows its memory for a larger variable and keeps working for smaller ones after', () => {
    const kernel = new AdamKernel();
    for (const length of [10, 2_000_000, 10]) {
      const [w, g, m, v] = arrays(length, 3);
      const expected = w.slice();
      referenceStep(expected, g, m.slice(), v.slice(), SCALARS);
      kernel.step(w, g, m, v, SCALARS);
      expect(bits(w.subarray(0, 1000))).to.deep.equal(bits(expected.subarray(0, 1000)));
      expect(bits(w.subarray(length - 5))).to.deep.equal(bits(expected.subarray(length - 5)));
    }
  });

  describe('operands larger than a chunk go through the memory in pieces, with the results of one call', () => {
    const rng = new Rng(17);
    const gaussian = (n: number): Float32Array => Float32Array.from({ length: n }, () => rng.nextGaussian());

    it('relu and its gradient (chunks of 37 values: not whole SIMD vectors)', () => {
      const x = gaussian(1001);
      const dy = gaussian(1001);
      const [whole, pieces] = [new Float32Array(1001), new Float32Array(1001)];
      reluInto(x, whole);
      reluInto(x, pieces, 37);
      expect(bits(pieces)).to.deep.equal(bits(whole));
      reluGradInto(dy, x, whole);
      reluGradInto(dy, x, pieces, 37);
      expect(bits(pieces)).to.deep.equal(bits(whole));
    });

    it('max pooling (one or two images per call; positions stay indices into the whole input)', () => {
      const geometry = { batchSize: 5, inHeight: 7, inWidth: 6, channels: 6, outHeight: 4, outWidth: 3, strideHeight: 2, strideWidth: 2, filterHeight: 3, filterWidth: 2, padTop: 1, padLeft: 0 };
      const x = gaussian(5 * 7 * 6 * 6);
      const whole = new Float32Array(5 * 4 * 3 * 6);
      const positions = maxPoolPositions(x, geometry, whole);
      for (const chunk of [1, 7 * 6 * 6 * 2]) {
        const pieces = new Float32Array(whole.length);
        expect(Array.from(maxPoolPositions(x, geometry, pieces, chunk))).to.deep.equal(Array.from(positions));
        expect(bits(pieces)).to.deep.equal(bits(whole));
      }
      expect(Math.max(...positions)).to.be.greaterThan(4 * 7 * 6 * 6); // the last image's positions
      positions.forEach((p, o) => expect(x[p]).to.equal(whole[o]));
    });

    it('Adam (chunks of 1,000 weights)', () => {
      const [w, g, m, v] = arrays(4099, 8);
      const whole = [w.slice(), m.slice(), v.slice()] as const;
      new AdamKernel().step(whole[0], g, whole[1], whole[2], SCALARS, f32(0.99));
      new AdamKernel().step(w, g, m, v, SCALARS, f32(0.99), 1000);
      expect(bits(w)).to.deep.equal(bits(whole[0]));
      expect(bits(m)).to.deep.equal(bits(whole[1]));
      expect(bits(v)).to.deep.equal(bits(whole[2]));
    });

    it('batch normalisation forward and backward (chunks of 3 rows of 10 channels)', () => {
      const [rows, channels] = [23, 10];
      const x = gaussian(rows * channels).map((v) => 3 + v);
      const dy = gaussian(rows * channels);
      const gamma = gaussian(channels);
      const beta = gaussian(channels);
      const run = (chunk: number | undefined): Float32Array[] => {
        const y = new Float32Array(x.length);
        const dx = new Float32Array(x.length);
        const stats = batchNormTrainingForward(x, rows, channels, gamma, beta, 1e-3, y, chunk);
        const grads = batchNormTrainingBackward(dy, x, rows, channels, stats.mean, stats.inverseStd, gamma, dx, chunk);
        return [y, stats.mean, stats.variance, stats.inverseStd, dx, grads.dScale, grads.dOffset];
      };
      const whole = run(undefined);
      // The per-channel sums add the chunks' partial sums (double precision): equal to float32 rounding.
      run(30).forEach((values, k) => values.forEach((v, i) => expect(v, `output ${k}, element ${i}`).to.be.closeTo((whole[k] as Float32Array)[i] as number, 1e-5 * Math.max(1, Math.abs(v)))));
    });
  });

  it('Adam rejects arrays of different lengths, naming them', () => {
    const kernel = new AdamKernel();
    const a = new Float32Array(4);
    expect(() => kernel.step(a, new Float32Array(3), a.slice(), a.slice(), SCALARS)).to.throw('Adam kernel: arrays of 4, 3, 4 and 4 elements; expected equal lengths');
  });
});
