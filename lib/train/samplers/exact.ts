/**
 * @file The "exactly n per class" sampler (docs/methods.md section 7, variant iii; the LoOp authors always
 * draw N images of a class, with replacement when the class is too small).
 *
 * Every class contributes one group of exactly n images per round, in a random class order: n drawn
 * without replacement when the class has at least n images; otherwise all its images plus
 * n - size drawn with replacement from the class (so every image of a small class appears at least
 * once), shuffled. Batches of c·n images are then exactly c classes × n images each.
 */
import type { Rng } from '../../util/rng.js';
import type { SamplerClass } from './classes.js';
import { padWithReplacement, withoutReplacement } from './draw.js';
import type { RoundPlan } from './plan.js';

/** The exactly-n plan for `classes` (each with at least one image) and group size `n`. */
export function exactPlan(classes: readonly SamplerClass[], n: number): RoundPlan {
  const padded = classes.filter((c) => c.items.length < n).length;
  return {
    roundLength: classes.length * n,
    details: { classesPaddedWithReplacement: padded },
    drawRound(rng: Rng): Int32Array {
      const order = rng.shuffle(classes.map((_, i) => i));
      const out = new Int32Array(classes.length * n);
      order.forEach((ci, slot) => {
        const items = (classes[ci] as SamplerClass).items;
        const group = items.length >= n ? withoutReplacement(items, n, rng) : padWithReplacement(items, n, rng);
        out.set(group, slot * n);
      });
      return out;
    },
  };
}
