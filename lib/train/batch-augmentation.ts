/**
 * @file Training augmentation of preloaded image batches (`data.augmentation`): each row of an NHWC
 * batch gets torchvision's RandomResizedCrop box and horizontal flip, drawn with the same geometry as
 * the file-based pipeline (lib/image/geometry.ts `drawAugmentation`), then applied as tensor ops:
 * `tf.image.cropAndResize` (bilinear) back to the input size, and a per-row flip.
 *
 * The crop box [left, top, width, height] in pixels maps to cropAndResize's normalised corners
 * y1 = top / (H - 1), y2 = (top + height - 1) / (H - 1) (and likewise for x), so the first and last
 * output pixels sample the box's first and last pixel centres. That is the align-corners convention,
 * not sharp's, so a crop here differs from the file-based crop by sub-pixel offsets; both are random
 * augmentations, the draws (box and flip) are identical.
 *
 * Draws come from the caller's generator (one per epoch, see samplers/epoch-rng.ts), so batches stay a
 * pure function of (seed, epoch) and a resumed run repeats them.
 */
import * as tf from '@tensorflow/tfjs';
import { drawAugmentation } from '../image/geometry.js';
import type { TrainAugmentation } from '../image/preprocessing.js';
import type { Rng } from '../util/rng.js';

/** The random choices for one batch. */
export interface BatchAugmentationDraw {
  /** Normalised [y1, x1, y2, x2] per row, as cropAndResize takes them. */
  boxes: Float32Array;
  /** 1 to mirror the row, 0 to keep it. */
  flips: Float32Array;
}

/** Draws crop boxes and flips for `rows` images of `height` x `width` pixels, in row order. */
export function drawBatchAugmentation(rows: number, height: number, width: number, augmentation: TrainAugmentation, rng: Rng): BatchAugmentationDraw {
  const boxes = new Float32Array(rows * 4);
  const flips = new Float32Array(rows);
  const yScale = height > 1 ? 1 / (height - 1) : 0;
  const xScale = width > 1 ? 1 / (width - 1) : 0;
  for (let r = 0; r < rows; r++) {
    const { crop, flip } = drawAugmentation({ width, height }, augmentation, rng);
    boxes.set([crop.top * yScale, crop.left * xScale, (crop.top + crop.height - 1) * yScale, (crop.left + crop.width - 1) * xScale], r * 4);
    flips[r] = flip ? 1 : 0;
  }
  return { boxes, flips };
}

/** Applies `draw` to an NHWC batch; returns a new tensor of the same shape (the input is kept). */
export function applyBatchAugmentation(batch: tf.Tensor4D, draw: BatchAugmentationDraw): tf.Tensor4D {
  const [rows, height, width] = batch.shape;
  return tf.tidy(() => {
    const boxIndices = tf.tensor1d(Int32Array.from({ length: rows }, (_, i) => i), 'int32');
    const cropped = tf.image.cropAndResize(batch, tf.tensor2d(draw.boxes, [rows, 4]), boxIndices, [height, width], 'bilinear');
    const mirrored = tf.image.flipLeftRight(cropped);
    const flip = tf.tensor4d(draw.flips, [rows, 1, 1, 1]);
    return tf.add(tf.mul(mirrored, flip), tf.mul(cropped, tf.sub(1, flip))) as tf.Tensor4D;
  });
}
