/**
 * @file Seeded pseudo-random numbers. All randomness in dmlkit flows from an explicit seed through a
 * {@link Rng} object passed down, so the same seed and inputs give byte-identical results.
 */

/**
 * xoshiro128** (Blackman & Vigna), 32-bit state words, seeded through splitmix32 so that small
 * consecutive seeds give unrelated streams. Period 2^128 - 1.
 */
export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number) {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
      throw new RangeError(`Expected an integer in [0, 2^32) for seed but received ${seed}`);
    }
    let x = seed >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
  }

  /** The four state words, to save (e.g. in a checkpoint) and restore with {@link setState}. */
  getState(): [number, number, number, number] {
    return [this.s0, this.s1, this.s2, this.s3];
  }

  /** Restores a state from {@link getState}; the generator then continues exactly from there. */
  setState(state: readonly number[]): void {
    if (state.length !== 4 || !state.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffffffff) || state.every((w) => w === 0)) {
      throw new RangeError(`Expected four 32-bit state words, not all zero, but received [${state.join(', ')}]`);
    }
    [this.s0, this.s1, this.s2, this.s3] = state as [number, number, number, number];
  }

  /** Next raw 32-bit unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.s1 << 9) >>> 0;
    this.s2 = (this.s2 ^ this.s0) >>> 0;
    this.s3 = (this.s3 ^ this.s1) >>> 0;
    this.s1 = (this.s1 ^ this.s2) >>> 0;
    this.s0 = (this.s0 ^ this.s3) >>> 0;
    this.s2 = (this.s2 ^ t) >>> 0;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform float in [0, 1) with 32 bits of randomness. */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform integer in [0, n), without modulo bias. */
  nextInt(n: number): number {
    if (!Number.isInteger(n) || n <= 0 || n > 4294967296) {
      throw new RangeError(`Expected an integer in [1, 2^32] for n but received ${n}`);
    }
    const limit = 4294967296 - (4294967296 % n);
    let r = this.nextUint32();
    while (r >= limit) r = this.nextUint32();
    return r % n;
  }

  /** Standard normal sample (Box-Muller). */
  nextGaussian(): number {
    let u = 0;
    while (u === 0) u = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** Shuffles `array` (an array or a typed array) in place (Fisher-Yates) and returns it. */
  shuffle<A extends { length: number; [index: number]: unknown }>(array: A): A {
    for (let i = array.length - 1; i > 0; i--) {
      const j = this.nextInt(i + 1);
      const tmp = array[i];
      array[i] = array[j];
      array[j] = tmp;
    }
    return array;
  }

  /** A new generator whose stream is derived from this one (for independent sub-tasks). */
  fork(): Rng {
    return new Rng(this.nextUint32());
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
