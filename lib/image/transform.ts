/**
 * @file The pixel work of the eval and train transforms, on decoded raw images (sharp, raw in, raw out).
 *
 * Resampling kernel: `linear`, the counterpart of torchvision's default (bilinear with antialias, PIL's
 * `BILINEAR`). Measured against PIL 12 on a 500x375 noise image: downsampling to 341x256 differs by
 * 0.20 levels (of 255) on average, max 9; sharp's default `lanczos3` differs by 3.3, max 61. Upsampling
 * is not PIL-exact: libvips samples output pixel x at input x/s - 0.5 where PIL uses (x + 0.5)/s - 0.5,
 * a shift of half an output pixel (measured on ramps; 8.2 levels on average on the noise image at
 * 800x600). Training is unaffected in expectation (crops are
 * random); evaluation only upsamples images whose shorter side is below `resizeShorter`. With
 * `resample` set (a Hugging Face preprocessor config, `--resample`), the eval transform resizes with
 * image/resample.ts instead, which equals Pillow byte for byte when upscaling too (sharp's `linear`,
 * `cubic` and `lanczos3` are 3.5-7.4 levels off Pillow's bilinear, bicubic and Lanczos on upscaling,
 * 0.35-0.46 on downscaling: measured on spec/fixtures/hub/resample).
 */
import type { Preprocessing, TrainAugmentation } from './preprocessing.js';
import type { Rng } from '../util/rng.js';
import { centreCrop, drawAugmentation, resizedSize, type CentreCrop, type Size } from './geometry.js';
import { extractRaw, padRaw, rawInput, renderRaw } from './raw-image.js';
import { resampleRaw } from './resample.js';
import type { RawImage } from './raw-image.js';

/** sharp's resampling kernel for every resize of the pipeline (see the file comment). */
export const RESIZE_KERNEL = 'linear';

/** The fields of a {@link Preprocessing} that decide the eval transform's geometry and filter. */
export type EvalGeometry = Pick<
  Preprocessing,
  'height' | 'width' | 'resizeShorter' | 'resizeMode' | 'resizeLonger' | 'resizeWidth' | 'resizeHeight' | 'resample' | 'cropRounding'
>;

/**
 * torchvision's `Resize(resizeShorter)` + `CenterCrop((height, width))`: the shorter side becomes
 * `resizeShorter` (see {@link resizeShorterSize}), then the centred `height x width` box is cut out,
 * zero-padded along an axis where the resized image is shorter than the crop (see {@link centreCrop}).
 * A same-size resize is skipped, so pixels pass unchanged when no resizing is needed.
 *
 * `resizeMode` chooses another resize (longer side, exact size, none; see {@link resizedSize}),
 * `cropRounding` Hugging Face's crop offsets, and `resample` a Pillow-exact filter (image/resample.ts)
 * instead of sharp's `linear` kernel.
 */
export async function evalTransform(image: RawImage, size: EvalGeometry): Promise<RawImage> {
  const { resized, box, padding } = evalBoxes(image, size);
  if (size.resample !== undefined) {
    return padRaw(extractRaw(resampleRaw(image, resized.width, resized.height, size.resample), box), padding);
  }
  const cropped = await renderRaw(
    rawInput(image)
      .resize(resized.width, resized.height, { kernel: RESIZE_KERNEL, fit: 'fill' })
      .extract(box),
    image.channels,
  );
  return padRaw(cropped, padding);
}

/** The eval transform's geometry for an image of `image` size: its size after the resize, then the centre crop's box and padding. */
export function evalBoxes(image: Size, size: EvalGeometry): CentreCrop & { resized: Size } {
  const resized = resizedSize(image.width, image.height, size);
  return { resized, ...centreCrop(resized, size, size.cropRounding ?? 'round') };
}

/**
 * torchvision's `RandomResizedCrop((height, width), scale, ratio)` + `RandomHorizontalFlip(p)`: draws
 * the crop box and the flip from `rng` (see {@link drawAugmentation}), cuts the box out, resizes it to
 * `height x width` and mirrors the result if the flip was drawn (the output is then the exact mirror of
 * the unflipped output).
 */
export async function trainTransform(
  image: RawImage,
  size: Pick<Preprocessing, 'height' | 'width'>,
  augmentation: TrainAugmentation,
  rng: Rng,
): Promise<RawImage> {
  const { crop, flip } = drawAugmentation(image, augmentation, rng);
  const pipeline = rawInput(image)
    .extract(crop)
    .resize(size.width, size.height, { kernel: RESIZE_KERNEL, fit: 'fill' });
  return renderRaw(flip ? pipeline.flop() : pipeline, image.channels);
}
