/**
 * @file Random rescale and translation of preloaded image batches (`data.augmentation.rescale`,
 * `translate`, `fill`): each row is scaled about its centre by a factor s (s < 1 shrinks the image
 * inside the frame and exposes a border, s > 1 zooms in) and shifted by whole pixels, the exposed
 * border filled with a constant colour (white, black, the row's mean colour) or the nearest edge pixel.
 * torchvision's `RandomAffine(degrees=0, translate, scale, fill)` draws the same kind of transform.
 *
 * Output pixel i of an axis of n pixels samples the input at u = c + (i - c - t) / s, with
 * c = (n - 1) / 2 and t the shift (pixel centres, the convention of batch-augmentation.ts's crops),
 * bilinearly. Sampling is separable, so each row is two matrix products: `Ay · image · Axᵀ`, with one
 * interpolation matrix per axis whose row i holds the two bilinear weights at u. With a constant fill a
 * position outside [0, n - 1] on either axis is border: its matrix row is zero and the fill is added
 * through the mask (inside on y) x (inside on x); with `edge`, u is clamped into [0, n - 1].
 *
 * Values are the batch's normalised ones: white and black are the pixel values 255 and 0 after the
 * preprocessing's `(x / 255 - mean) / std`.
 */
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../util/rng.js';

/** How the border a zoom-out or a shift exposes is filled. */
export type AffineFill = 'white' | 'black' | 'edge' | 'mean';

/** The random rescale and translation of one batch: per row a scale and a shift in pixels. */
export interface AffineDraw {
  /** Scale factor per row. */
  scales: Float32Array;
  /** Shift per row in whole pixels, [dy, dx] pairs (positive moves the content down and right). */
  shifts: Int32Array;
}

/**
 * Draws one row's scale (uniform in `rescale`, 1 without) and shift (each axis `round(U(-translate,
 * translate))`, torchvision's RandomAffine draw), from `rng`, in that order.
 */
export function drawAffine(rescale: readonly [number, number] | undefined, translate: number, rng: Rng): { scale: number; dy: number; dx: number } {
  const scale = rescale ? rescale[0] + (rescale[1] - rescale[0]) * rng.next() : 1;
  // `+ 0` turns a rounded -0 into 0.
  const shift = (): number => (translate > 0 ? Math.round(-translate + 2 * translate * rng.next()) + 0 : 0);
  const dy = shift();
  const dx = shift();
  return { scale, dy, dx };
}

/**
 * The interpolation matrix of one axis of `n` pixels (row-major [n, n]: output i, input j) for scale
 * `s` and shift `t`, and which outputs lie inside the input (1) or on the border (0).
 */
export function axisInterpolation(n: number, s: number, t: number, clamp: boolean): { matrix: Float32Array; inside: Float32Array } {
  const matrix = new Float32Array(n * n);
  const inside = new Float32Array(n);
  const c = (n - 1) / 2;
  for (let i = 0; i < n; i++) {
    let u = c + (i - c - t) / s;
    if (clamp) u = Math.min(Math.max(u, 0), n - 1);
    // A hair outside from rounding still counts as the edge pixel.
    if (u < -1e-9 || u > n - 1 + 1e-9) continue;
    u = Math.min(Math.max(u, 0), n - 1);
    inside[i] = 1;
    const j0 = Math.floor(u);
    const w = u - j0;
    const j1 = Math.min(j0 + 1, n - 1);
    matrix[i * n + j0] = (matrix[i * n + j0] as number) + (1 - w);
    matrix[i * n + j1] = (matrix[i * n + j1] as number) + w;
  }
  return { matrix, inside };
}

/** The normalised value of pixel value `pixel` (0-255) per channel: (pixel / 255 - mean) / std. */
function normalisedColour(pixel: number, mean: readonly number[], std: readonly number[]): number[] {
  return mean.map((m, c) => (pixel / 255 - m) / (std[c] as number));
}

/**
 * Rescales and shifts every row of an NHWC batch as `draw` says, filling the exposed border with
 * `fill`; `mean` and `std` are the batch's normalisation (one per channel). Returns a new tensor.
 */
export function applyAffine(batch: tf.Tensor4D, draw: AffineDraw, fill: AffineFill, mean: readonly number[], std: readonly number[]): tf.Tensor4D {
  const [rows, height, width, channels] = batch.shape;
  const clamp = fill === 'edge';
  const ay = new Float32Array(rows * height * height);
  const ax = new Float32Array(rows * width * width);
  const insideY = new Float32Array(rows * height);
  const insideX = new Float32Array(rows * width);
  for (let r = 0; r < rows; r++) {
    const s = draw.scales[r] as number;
    const y = axisInterpolation(height, s, draw.shifts[2 * r] as number, clamp);
    const x = axisInterpolation(width, s, draw.shifts[2 * r + 1] as number, clamp);
    ay.set(y.matrix, r * height * height);
    ax.set(x.matrix, r * width * width);
    insideY.set(y.inside, r * height);
    insideX.set(x.inside, r * width);
  }
  return tf.tidy(() => {
    // Along y: [rows, H, H] x [rows, H, W * C].
    const alongY = tf.matMul(tf.tensor3d(ay, [rows, height, height]), tf.reshape(batch, [rows, height, width * channels]));
    // Along x: bring width forward, [rows, W, W] x [rows, W, H * C], and back.
    const widthFirst = tf.reshape(tf.transpose(tf.reshape(alongY, [rows, height, width, channels]), [0, 2, 1, 3]), [rows, width, height * channels]);
    const alongX = tf.matMul(tf.tensor3d(ax, [rows, width, width]), widthFirst);
    const sampled = tf.transpose(tf.reshape(alongX, [rows, width, height, channels]), [0, 2, 1, 3]) as tf.Tensor4D;
    if (clamp) return sampled;
    const colour =
      fill === 'mean'
        ? tf.mean(batch, [1, 2], true)
        : tf.reshape(tf.tensor1d(normalisedColour(fill === 'white' ? 255 : 0, mean, std)), [1, 1, 1, channels]);
    const inside = tf.mul(tf.reshape(tf.tensor2d(insideY, [rows, height]), [rows, height, 1, 1]), tf.reshape(tf.tensor2d(insideX, [rows, width]), [rows, 1, width, 1]));
    return tf.add(sampled, tf.mul(tf.sub(1, inside), colour)) as tf.Tensor4D;
  });
}
