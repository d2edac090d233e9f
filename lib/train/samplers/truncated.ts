/**
 * @file The EPHN "sample" sampler (docs/methods.md section 7, variant ii; the authors'
 * `BalanceSampler_sample`): one group of min(n, class size) random images per class and round.
 *
 * A class with at most n images contributes all of them (shuffled), a larger one n drawn without
 * replacement; the groups follow a random class order and are concatenated. Groups therefore vary in
 * size, and the batch cut can split a class across two batches or leave a single image of a class in
 * a batch ("If the last class in the batch does not have space for n images, we just include enough
 * images to fill the batch", paper 002). Such an image has no positive; the losses drop that anchor.
 */
import type { Rng } from '../../util/rng.js';
import type { SamplerClass } from './classes.js';
import { permutation, withoutReplacement } from './draw.js';
import type { RoundPlan } from './plan.js';

/** The truncating one-group-per-class plan for `classes` with group size `n`. */
export function truncatedPlan(classes: readonly SamplerClass[], n: number): RoundPlan {
  const roundLength = classes.reduce((sum, c) => sum + Math.min(n, c.items.length), 0);
  const truncated = classes.filter((c) => c.items.length < n).length;
  return {
    roundLength,
    details: { classesSmallerThanGroup: truncated },
    drawRound(rng: Rng): Int32Array {
      const order = rng.shuffle(classes.map((_, i) => i));
      const out = new Int32Array(roundLength);
      let offset = 0;
      for (const ci of order) {
        const items = (classes[ci] as SamplerClass).items;
        const group = items.length > n ? withoutReplacement(items, n, rng) : permutation(items, rng);
        out.set(group, offset);
        offset += group.length;
      }
      return out;
    },
  };
}
