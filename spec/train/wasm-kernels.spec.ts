import { expect } from 'chai';
import { AdamKernel, type AdamScalars } from '../../lib/train/wasm/adam-kernel.js';
import { Rng } from '../../lib/util/rng.js';
import { assembleWat, WASM_KERNELS } from '../../scripts/wasm-assembler.js';

/**
 * The WebAssembly SIMD kernels (lib/train/wasm/): each module's committed bytes are the assembly of its
 * text. The Adam kernel computes what tfjs's kernels compute, i.e. every operation rounded to
 * float32, bit for bit, for any length (padding lanes), special values and a growing memory. (The
 * fused optimiser's spec compares the whole optimiser with tfjs's AdamOptimizer.) The ReLU and
 * max-pooling kernels are compared with tfjs's cpu kernels through the ort-cpu backend in
 * spec/train/ort-backend/light-kernels.spec.ts.
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

describe('train/wasm: WebAssembly kernels', () => {
  for (const kernel of WASM_KERNELS) {
    it(`${kernel.constant} (${kernel.file}) holds the assembly of its text (run scripts/assemble-wasm.ts after editing a text)`, async () => {
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

  it('Adam rejects arrays of different lengths, naming them', () => {
    const kernel = new AdamKernel();
    const a = new Float32Array(4);
    expect(() => kernel.step(a, new Float32Array(3), a.slice(), a.slice(), SCALARS)).to.throw('Adam kernel: arrays of 4, 3, 4 and 4 elements; expected equal lengths');
  });
});
