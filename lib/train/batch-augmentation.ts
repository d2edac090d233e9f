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
 * With `rescale` or `translate`, each row is then rescaled about its centre (zooming out as well as in)
 * and shifted by whole pixels, the exposed border filled as `fill` says (batch-affine.ts).
 *
 * Draws come from the caller's generator (one per epoch, see samplers/epoch-rng.ts), so batches stay a
 * pure function of (seed, epoch) and a resumed run repeats them. Per row: the crop box, the flip, then
 * (only when rescale or translate is set) the scale and the two shifts.
 */
import * as tf from '@tensorflow/tfjs';
import { invalidParameterError } from '../errors.js';
import { drawAugmentation } from '../image/geometry.js';
import type { TrainAugmentation } from '../image/preprocessing.js';
import { validateAugmentation } from '../image/validate.js';
import type { Rng } from '../util/rng.js';
import { applyAffine, drawAffine, type AffineDraw, type AffineFill } from './batch-affine.js';
import { z } from 'zod';

/** `data.augmentation`: RandomResizedCrop and flip, plus an optional random rescale and translation. */
export interface BatchAugmentation extends TrainAugmentation {
  /** Scale factor range [min, max] (0 < min <= max); below 1 the image shrinks inside the frame. */
  rescale?: [number, number] | undefined;
  /** Largest shift in whole pixels along each axis (0: none). */
  translate?: number | undefined;
  /** The colour of the border a zoom-out or shift exposes (default black). */
  fill?: AffineFill | undefined;
}

/** The random choices for one batch. */
export interface BatchAugmentationDraw {
  /** Normalised [y1, x1, y2, x2] per row, as cropAndResize takes them. */
  boxes: Float32Array;
  /** 1 to mirror the row, 0 to keep it. */
  flips: Float32Array;
  /** The rescale and shift per row, when the augmentation has them. */
  affine?: AffineDraw;
}

/** Whether `augmentation` rescales or translates. */
function hasAffine(augmentation: BatchAugmentation): boolean {
  return augmentation.rescale !== undefined || (augmentation.translate ?? 0) > 0;
}

/**
 * Checks a {@link BatchAugmentation}: the crop and flip as validateAugmentation, `rescale` finite with
 * 0 < min <= max, `translate` a non-negative integer, `fill` one of white, black, edge, mean.
 */
export function validateBatchAugmentation(augmentation: BatchAugmentation, name = 'augmentation'): void {
  validateAugmentation(augmentation, name);
  const { rescale, translate, fill } = augmentation;
  if (rescale !== undefined) {
    const ok = Array.isArray(rescale) && rescale.length === 2 && rescale.every((v) => typeof v === 'number' && Number.isFinite(v)) && rescale[0] > 0 && rescale[0] <= rescale[1];
    if (!ok) throw invalidParameterError(`${name}.rescale`, '[min, max] with 0 < min <= max (finite)', Array.isArray(rescale) ? `[${rescale.join(', ')}]` : rescale);
  }
  if (translate !== undefined && !(Number.isInteger(translate) && translate >= 0)) throw invalidParameterError(`${name}.translate`, 'a non-negative integer (pixels)', translate);
  if (fill !== undefined && !['white', 'black', 'edge', 'mean'].includes(fill)) throw invalidParameterError(`${name}.fill`, "'white', 'black', 'edge' or 'mean'", fill);
}

/**
 * Checks that `augmentation`'s rescale and translate keep something of an image of `height` x `width`
 * pixels in the frame: a shift of the smaller side or more moves an image out of it, and a scale below
 * one pixel per side shrinks it to nothing; either way a row is all fill, and batches of such rows have
 * no valid tuple (nothing trains). Errors: E_ARG naming the field, prefixed with `name`.
 */
export function checkAugmentationFitsImage(augmentation: BatchAugmentation, height: number, width: number, name = 'augmentation'): void {
  const side = Math.min(height, width);
  const { rescale, translate = 0 } = augmentation;
  if (translate >= side) {
    throw invalidParameterError(`${name}.translate`, `fewer pixels than the images' smaller side (${side}; a shift of that many moves an image out of the frame)`, translate);
  }
  if (rescale !== undefined && rescale[0] * side < 1) {
    throw invalidParameterError(`${name}.rescale`, `a minimum of at least 1/${side} (the images' smaller side is ${side} pixels; a smaller scale leaves less than one)`, `[${rescale.join(', ')}]`);
  }
}

/** Draws crop boxes and flips (and rescales and shifts, when configured) for `rows` images of `height` x `width` pixels, in row order. */
export function drawBatchAugmentation(rows: number, height: number, width: number, augmentation: BatchAugmentation, rng: Rng): BatchAugmentationDraw {
  const boxes = new Float32Array(rows * 4);
  const flips = new Float32Array(rows);
  const affine = hasAffine(augmentation) ? { scales: new Float32Array(rows), shifts: new Int32Array(rows * 2) } : undefined;
  const yScale = height > 1 ? 1 / (height - 1) : 0;
  const xScale = width > 1 ? 1 / (width - 1) : 0;
  for (let r = 0; r < rows; r++) {
    const { crop, flip } = drawAugmentation({ width, height }, augmentation, rng);
    boxes.set([crop.top * yScale, crop.left * xScale, (crop.top + crop.height - 1) * yScale, (crop.left + crop.width - 1) * xScale], r * 4);
    flips[r] = flip ? 1 : 0;
    if (affine) {
      const { scale, dy, dx } = drawAffine(augmentation.rescale, augmentation.translate ?? 0, rng);
      affine.scales[r] = scale;
      affine.shifts[2 * r] = dy;
      affine.shifts[2 * r + 1] = dx;
    }
  }
  return { boxes, flips, ...(affine ? { affine } : {}) };
}

/** The fill of a rescale or shift and the batch's normalisation (what white and black are). */
export interface AffineFillOptions {
  fill: AffineFill;
  mean: readonly number[];
  std: readonly number[];
}

/**
 * Applies `draw` to an NHWC batch; returns a new tensor of the same shape (the input is kept). A draw
 * with a rescale and shift needs `fill` (default: black with mean 0 and std 1).
 */
export function applyBatchAugmentation(batch: tf.Tensor4D, draw: BatchAugmentationDraw, fill?: AffineFillOptions): tf.Tensor4D {
  const [rows, height, width, channels] = batch.shape;
  return tf.tidy(() => {
    const boxIndices = tf.tensor1d(Int32Array.from({ length: rows }, (_, i) => i), 'int32');
    const cropped = tf.image.cropAndResize(batch, tf.tensor2d(draw.boxes, [rows, 4]), boxIndices, [height, width], 'bilinear');
    const mirrored = tf.image.flipLeftRight(cropped);
    const flip = tf.tensor4d(draw.flips, [rows, 1, 1, 1]);
    const flipped = tf.add(tf.mul(mirrored, flip), tf.mul(cropped, tf.sub(1, flip))) as tf.Tensor4D;
    if (!draw.affine) return flipped;
    const options = fill ?? { fill: 'black', mean: new Array<number>(channels).fill(0), std: new Array<number>(channels).fill(1) };
    return applyAffine(flipped, draw.affine, options.fill, options.mean, options.std);
  });
}

/** Train augmentation (random resized crop + horizontal flip); torchvision's defaults. */
export const augmentationSchema = z
  .object({
    scale: z.tuple([z.number(), z.number()]).default([0.08, 1]),
    ratio: z.tuple([z.number(), z.number()]).default([3 / 4, 4 / 3]),
    flipProbability: z.number().default(0.5),
  })
  .strict();

/**
 * Augmentation of preloaded training images (`data.augmentation`): the crop and flip above, then a
 * random rescale about the centre (`rescale`, below 1 zooms out) and a shift by up to `translate`
 * pixels, the exposed border filled with `fill` (lib/train/batch-affine.ts).
 */
export const batchAugmentationSchema = augmentationSchema.extend({
  rescale: z.tuple([z.number().positive(), z.number().positive()]).optional(),
  translate: z.number().int().min(0).default(0),
  fill: z.enum(['white', 'black', 'edge', 'mean']).default('black'),
});
