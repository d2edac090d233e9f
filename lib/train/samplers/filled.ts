/**
 * @file The EPHN "filled" round-robin sampler (docs/methods.md section 7, variant i; the authors'
 * `BalanceSampler_filled`).
 *
 * Every class is resampled to exactly L images per round: a smaller class keeps all its images and is
 * padded with images drawn with replacement from itself, a larger one is subsampled without
 * replacement, and the result is shuffled. The classes are put in a random order and the stream is
 * emitted round-robin in groups of n: group 0 of every class in that order, then group 1 of every
 * class, and so on. With a batch of c·n images, a batch is c consecutive groups, i.e. c distinct
 * classes when there are at least c classes (a batch can span the end of one round of groups and the
 * start of the next).
 *
 * L comes from the largest class size M. Rule `nearest` (the authors' current code): M is rounded to a
 * multiple of n, down when M mod n < floor(0.3 n), else up. Rule `up` (their initial commit, used in
 * paper 000): M above 1000 is replaced by 100, then rounded up to a multiple of n. Either way L is at
 * least n.
 *
 * The authors cut group t of a class from the strided positions t, t + L/n, ... of the shuffled class
 * list; here it is the consecutive positions t·n .. t·n + n - 1. Both are uniform draws of the same
 * distribution.
 */
import type { Rng } from '../../util/rng.js';
import type { SamplerClass } from './classes.js';
import { padWithReplacement, permutation, withoutReplacement } from './draw.js';
import type { RoundPlan } from './plan.js';

/** How the class length L is derived from the largest class size. */
export type FilledLengthRule = 'nearest' | 'up';

/** L, the images per class per round, for largest class size `maxSize` and group size `n`. */
export function filledClassLength(maxSize: number, n: number, rule: FilledLengthRule): number {
  let length: number;
  if (rule === 'up') {
    const capped = maxSize > 1000 ? 100 : maxSize;
    length = Math.ceil(capped / n) * n;
  } else {
    const remainder = maxSize % n;
    length = remainder === 0 ? maxSize : remainder < Math.floor(0.3 * n) ? maxSize - remainder : maxSize - remainder + n;
  }
  return Math.max(length, n);
}

/** The filled plan for `classes` with group size `n`. */
export function filledPlan(classes: readonly SamplerClass[], n: number, rule: FilledLengthRule): RoundPlan {
  const maxSize = Math.max(...classes.map((c) => c.items.length));
  const length = filledClassLength(maxSize, n, rule);
  const groupsPerClass = length / n;
  return {
    roundLength: classes.length * length,
    details: { classLength: length, lengthRule: rule, largestClass: maxSize },
    drawRound(rng: Rng): Int32Array {
      const order = rng.shuffle(classes.map((_, i) => i));
      const filled = order.map((ci) => {
        const items = (classes[ci] as SamplerClass).items;
        if (items.length < length) return padWithReplacement(items, length, rng);
        if (items.length > length) return withoutReplacement(items, length, rng);
        return permutation(items, rng);
      });
      const out = new Int32Array(classes.length * length);
      let offset = 0;
      for (let t = 0; t < groupsPerClass; t++) {
        for (const list of filled) {
          out.set(list.subarray(t * n, (t + 1) * n), offset);
          offset += n;
        }
      }
      return out;
    },
  };
}
