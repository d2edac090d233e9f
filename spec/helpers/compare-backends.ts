import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { selectBackend } from '../../lib/engine/tfjs/backend.js';
import type { Rng } from '../../lib/util/rng.js';
import { restoreBackendAfter } from './tf-backend.js';

/** A tensor of `shape` filled with seeded standard normal values. */
export function random(rng: Rng, shape: number[]): tf.Tensor {
  const size = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(Float32Array.from({ length: size }, () => rng.nextGaussian()), shape);
}

/**
 * Runs `f` on the cpu and ort-cpu backends and returns the largest difference over all outputs,
 * relative to each output's largest finite magnitude (NaN matching NaN and equal infinities count as
 * equal; any other mismatch involving them, and +0 against -0, is Infinity). 0 means bit-identical values.
 */
export async function compareBackends(f: () => tf.Tensor[]): Promise<{ maxRel: number; shapes: string }> {
  const run = async (backend: string): Promise<{ values: Float32Array[]; shapes: string }> => {
    await tf.setBackend(backend);
    const outs = f();
    const values = outs.map((t) => t.dataSync() as Float32Array);
    const shapes = outs.map((t) => `[${t.shape.join(',')}]`).join(' ');
    tf.dispose(outs);
    return { values, shapes };
  };
  const cpu = await run('cpu');
  const ort = await run('ort-cpu');
  expect(ort.shapes).to.equal(cpu.shapes);
  let maxRel = 0;
  cpu.values.forEach((c, k) => {
    const o = ort.values[k] as Float32Array;
    let scale = 0;
    for (const v of c) if (Number.isFinite(v)) scale = Math.max(scale, Math.abs(v));
    for (let i = 0; i < c.length; i++) {
      const a = c[i] as number;
      const b = o[i] as number;
      if (Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b))) continue;
      if (a === 0 && b === 0) {
        maxRel = Number.POSITIVE_INFINITY; // +0 against -0: not the same bits
        continue;
      }
      const diff = Math.abs(a - b) / Math.max(scale, 1e-12);
      maxRel = Math.max(maxRel, Number.isFinite(diff) ? diff : Number.POSITIVE_INFINITY);
    }
  });
  return { maxRel, shapes: cpu.shapes };
}

/** The largest absolute difference between `a` and `b`, relative to the largest magnitude in `a`. */
export function relativeDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    diff = Math.max(diff, Math.abs((a[i] as number) - (b[i] as number)));
    scale = Math.max(scale, Math.abs(a[i] as number));
  }
  return diff / Math.max(scale, 1e-12);
}

/** Mocha hooks for a suite that runs on ort-cpu: select it before, restore the previous backend after. */
export function useOrtCpuBackend(): void {
  restoreBackendAfter();
  before(async () => {
    await selectBackend('ort-cpu');
  });
}
