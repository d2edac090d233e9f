/**
 * @file pytorch-metric-learning's `BatchHardMiner` ("batch hard" of Hermans, Beyer and Leibe, "In
 * Defense of the Triplet Loss for Person Re-Identification", 2017) on detached distances: per anchor
 * a with a positive and a negative, one triplet (a, p, n) of its farthest positive
 * `p = argmax_{P_ap} d_ap` and its nearest negative `n = argmin_{N_an} d_an` (the first on ties, as
 * torch's max and min). Anchors without a positive or a negative give no triplet; triplets come in
 * anchor order.
 */
import type { PairMasks } from '../similarity.js';
import { checkMatrix } from './anchor-selection.js';
import type { TripletList } from './triplet-margin-miner.js';

/** The hardest triplet of every anchor (see the file comment); `distances` row-major B×B. */
export function mineBatchHardTriplets(distances: ArrayLike<number>, masks: PairMasks): TripletList {
  checkMatrix(distances, masks, 'distances');
  const { size, columns } = masks;
  const anchors: number[] = [];
  const positives: number[] = [];
  const negatives: number[] = [];
  for (let a = 0; a < size; a++) {
    let positive = -1;
    let negative = -1;
    for (let j = 0; j < columns; j++) {
      const d = distances[a * columns + j]!;
      if (masks.positive[a * columns + j] === 1 && (positive < 0 || d > distances[a * columns + positive]!)) positive = j;
      if (masks.negative[a * columns + j] === 1 && (negative < 0 || d < distances[a * columns + negative]!)) negative = j;
    }
    if (positive < 0 || negative < 0) continue;
    anchors.push(a);
    positives.push(positive);
    negatives.push(negative);
  }
  return { anchors: Int32Array.from(anchors), positives: Int32Array.from(positives), negatives: Int32Array.from(negatives) };
}
