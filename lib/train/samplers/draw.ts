/**
 * @file Seeded draws of item indices from one class: a permutation, a subset without replacement,
 * and a padding with replacement.
 */
import type { Rng } from '../../util/rng.js';

/** A shuffled copy of `items`. */
export function permutation(items: Int32Array, rng: Rng): Int32Array {
  return rng.shuffle(Int32Array.from(items));
}

/** `k` distinct items of `items` (k <= items.length) in random order (partial Fisher-Yates). */
export function withoutReplacement(items: Int32Array, k: number, rng: Rng): Int32Array {
  const pool = Int32Array.from(items);
  for (let i = 0; i < k; i++) {
    const j = i + rng.nextInt(pool.length - i);
    const tmp = pool[i] as number;
    pool[i] = pool[j] as number;
    pool[j] = tmp;
  }
  return pool.slice(0, k);
}

/**
 * `k` items (k >= items.length) in random order: every item of `items` once, plus `k - items.length`
 * drawn uniformly with replacement from `items`.
 */
export function padWithReplacement(items: Int32Array, k: number, rng: Rng): Int32Array {
  const out = new Int32Array(k);
  out.set(items);
  for (let i = items.length; i < k; i++) out[i] = items[rng.nextInt(items.length)] as number;
  return permutation(out, rng);
}
