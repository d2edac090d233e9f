/**
 * @file Dense tensors of a triplet set grouped by anchor (mining/triplet-margin-miner.ts
 * `TripletSlots`), shared by the triplet margin and margin losses. With B anchors, `width` positive
 * slots per anchor and C columns (the batch itself, or a cross-batch memory's items) everything is
 * elementwise over [B, width, C]: no gather, no per-triplet matMul.
 */
import * as tf from '@tensorflow/tfjs';
import type { TripletSlots } from '../mining/triplet-margin-miner.js';

/** The live distances and constant masks of a triplet set. */
export interface TripletTensors {
  /** [B, width]: `d(a, positive in slot s)`, 0 in empty slots. */
  readonly positive: tf.Tensor2D;
  /** [B, 1, C]: `d(a, n)` for every column n (broadcasts over the slots). */
  readonly negative: tf.Tensor3D;
  /** [B, width, C]: 1 where (a, slot s, n) is a triplet of the set. */
  readonly tripletMask: tf.Tensor3D;
  /** Row-major B×width: the number of triplets of each slot (0 for an empty slot). */
  readonly tripletsPerSlot: Float32Array;
}

/** Builds the {@link TripletTensors} of `slots` from a live [B, C] distance matrix. */
export function tripletTensors(distances: tf.Tensor2D, slots: TripletSlots): TripletTensors {
  const [size, columns] = distances.shape;
  const { width } = slots;
  const positiveOneHot = new Float32Array(size * width * columns);
  const tripletsPerSlot = new Float32Array(size * width);
  for (let slot = 0; slot < size * width; slot++) {
    const p = slots.positives[slot]!;
    if (p < 0) continue;
    positiveOneHot[slot * columns + p] = 1;
    for (let n = 0; n < columns; n++) tripletsPerSlot[slot]! += slots.negatives[slot * columns + n]!;
  }
  const negative = tf.expandDims(distances, 1) as tf.Tensor3D;
  return {
    positive: tf.sum(tf.mul(negative, tf.tensor3d(positiveOneHot, [size, width, columns])), 2),
    negative,
    tripletMask: tf.tensor3d(Float32Array.from(slots.negatives), [size, width, columns]),
    tripletsPerSlot,
  };
}
