/**
 * @file The per-epoch random generator of the samplers. Batches of epoch `e` depend only on
 * (seed, e), never on how many epochs ran before in this process, so a run resumed at
 * (epoch, batchIndex) reproduces the remaining batches exactly.
 */
import { Rng } from '../../util/rng.js';

/**
 * A 32-bit seed mixed from `seed` and `epoch` (both words multiplied by odd constants, then murmur3's
 * finaliser), so that nearby (seed, epoch) pairs give unrelated streams.
 */
export function epochSeed(seed: number, epoch: number): number {
  let h = Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul((epoch >>> 0) + 0x7f4a7c15, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The generator of epoch `epoch` for a sampler seeded with `seed`. */
export function epochRng(seed: number, epoch: number): Rng {
  return new Rng(epochSeed(seed, epoch));
}
