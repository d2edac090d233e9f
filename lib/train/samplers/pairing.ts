/**
 * @file The LoOp "pairing" sampler (paper 001, Algorithm 1; the authors' `RandomSampler`, docs/methods.md
 * sections 3.7 and 3.8): batches of c = batchSize / n distinct classes × n images, n even, each class's
 * images consecutive, so that the LoOp losses pair them as (1st, 2nd), (3rd, 4th), ….
 *
 * As the authors, classes are chosen by walking a random permutation of the images: each image whose
 * class is not yet in the current batch starts a group of its class — itself, then n − 1 other images
 * of the class drawn without replacement when it has at least n − 1 others, else all of them plus
 * draws with replacement from them (a one-image class, possible only with minClassSize 1, repeats its
 * image); images whose class is already in the batch are skipped, and the class set resets with every
 * batch. Classes are therefore drawn in proportion to their size, unlike the `exact` sampler's one
 * group per class per round. When the permutation runs out a fresh one continues the walk.
 *
 * A round is `max(1, floor(images / batchSize))` whole batches (about one pass over the images as
 * group seeds), so every batch of the epoch keeps the c-distinct-classes property. The authors count an
 * epoch as #images × N samples; set `repeat` for longer epochs.
 */
import type { Rng } from '../../util/rng.js';
import type { SamplerClass } from './classes.js';
import { padWithReplacement, permutation, withoutReplacement } from './draw.js';
import type { RoundPlan } from './plan.js';

/** The pairing plan for `classes` (at least `batchSize / n` of them), group size `n` (even) and `batchSize`. */
export function pairingPlan(classes: readonly SamplerClass[], n: number, batchSize: number): RoundPlan {
  const classesPerBatch = batchSize / n;
  const images = Int32Array.from(classes.flatMap((c) => Array.from(c.items)));
  const classOf = new Map<number, number>();
  classes.forEach((c, ci) => c.items.forEach((item) => classOf.set(item, ci)));
  const batchesPerRound = Math.max(1, Math.floor(images.length / batchSize));
  return {
    roundLength: batchesPerRound * batchSize,
    details: { batchesPerRound, seedWalk: 'image permutation' },
    drawRound(rng: Rng): Int32Array {
      const out = new Int32Array(batchesPerRound * batchSize);
      let walk = permutation(images, rng);
      let position = 0;
      let offset = 0;
      for (let b = 0; b < batchesPerRound; b++) {
        const inBatch = new Set<number>();
        while (inBatch.size < classesPerBatch) {
          if (position === walk.length) {
            walk = permutation(images, rng);
            position = 0;
          }
          const seed = walk[position++]!;
          const ci = classOf.get(seed)!;
          if (inBatch.has(ci)) continue;
          inBatch.add(ci);
          const items = classes[ci]!.items;
          const others = items.filter((item) => item !== seed);
          const pool = others.length > 0 ? others : items;
          const rest = pool.length >= n - 1 ? withoutReplacement(pool, n - 1, rng) : padWithReplacement(pool, n - 1, rng);
          out[offset] = seed;
          out.set(rest, offset + 1);
          offset += n;
        }
      }
      return out;
    },
  };
}
