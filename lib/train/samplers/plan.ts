/**
 * @file What a sampler variant contributes: how one round of an epoch is drawn. A round visits the
 * eligible classes once in a shuffled order; an epoch is `repeat` rounds, concatenated and cut into
 * batches by the sampler.
 */
import type { Rng } from '../../util/rng.js';

/** One variant's drawing rule, bound to the classes and the group size. */
export interface RoundPlan {
  /** Items one round emits (the same for every round). */
  readonly roundLength: number;
  /** Facts about the plan worth recording (e.g. the filled sampler's class length). */
  readonly details: Readonly<Record<string, number | string>>;
  /** Draws one round: item indices in emission order. Uses only `rng`. */
  drawRound(rng: Rng): Int32Array;
}
