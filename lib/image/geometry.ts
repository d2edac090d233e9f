/**
 * @file Pixel-free geometry of the image transforms: resized sizes, crop boxes and the random draws of
 * the training augmentation. Every function reproduces torchvision's arithmetic (including Python's
 * round-half-to-even and its integer truncations), so a crop here lands on the same pixels as there.
 */
import type { CropRounding, Preprocessing, TrainAugmentation } from './preprocessing.js';
import type { Rng } from '../util/rng.js';

/** A rectangle of pixels, in the shape sharp's `extract()` takes. */
export interface CropBox {
  left: number;
  top: number;
  width: number;
  height: number;
}

/** Width and height of an image. */
export interface Size {
  width: number;
  height: number;
}

/** Random choices of one training sample, drawn before any pixel work. */
export interface AugmentationDraw {
  /** Region of the (decoded, oriented) image to crop before resizing to the output size. */
  crop: CropBox;
  /** True to mirror the output horizontally. */
  flip: boolean;
}

/**
 * Python 3's `round()`: halves go to the even neighbour (`round(2.5) = 2`, `round(3.5) = 4`).
 * torchvision rounds crop offsets and sizes with it.
 */
export function roundHalfEven(x: number): number {
  return Math.abs(x % 1) === 0.5 ? 2 * Math.round(x / 2) : Math.round(x);
}

/**
 * Size after resizing the shorter side to `shorter`, keeping the aspect ratio. As torchvision's
 * `Resize(int)`: the longer side is `int(shorter * long / short)` (truncated, not rounded); a square
 * image counts as "width is the shorter side".
 */
export function resizeShorterSize(width: number, height: number, shorter: number): Size {
  return width <= height
    ? { width: shorter, height: Math.floor((shorter * height) / width) }
    : { width: Math.floor((shorter * width) / height), height: shorter };
}

/**
 * Size after resizing the longer side to `longer`, keeping the aspect ratio: the shorter side becomes
 * `int(longer * short / long)` (truncated, as {@link resizeShorterSize}); a square image counts as
 * "width is the longer side".
 */
export function resizeLongerSize(width: number, height: number, longer: number): Size {
  return width >= height
    ? { width: longer, height: Math.max(1, Math.floor((longer * height) / width)) }
    : { width: Math.max(1, Math.floor((longer * width) / height)), height: longer };
}

/** The size an image of `width x height` has after the resize of `p` (see {@link Preprocessing.resizeMode}). */
export function resizedSize(
  width: number,
  height: number,
  p: Pick<Preprocessing, 'resizeShorter' | 'resizeMode' | 'resizeLonger' | 'resizeWidth' | 'resizeHeight'>,
): Size {
  switch (p.resizeMode ?? 'shorter') {
    case 'longer':
      return resizeLongerSize(width, height, p.resizeLonger ?? p.resizeShorter);
    case 'exact':
      return { width: p.resizeWidth ?? width, height: p.resizeHeight ?? height };
    case 'none':
      return { width, height };
    default:
      return resizeShorterSize(width, height, p.resizeShorter);
  }
}

/** Zero pixels to add on each side. */
export interface Padding {
  top: number;
  bottom: number;
  left: number;
  right: number;
}

/** A centre crop: the box to cut out of the image, then the zero padding that brings it to the crop size. */
export interface CentreCrop {
  box: CropBox;
  padding: Padding;
}

/**
 * Centre crop of `crop` from an image of `image` size, as torchvision's `center_crop`: per axis,
 * offset `round((H - h) / 2)` with Python's rounding (a margin of 3 puts 2 pixels before the crop, a
 * margin of 5 also 2, a margin of 7 puts 4). Along an axis where the image is shorter than the crop,
 * the whole axis is kept and zeros are added, `(h - H) // 2` before and `(h - H + 1) // 2` after.
 * With `rounding` `floor`, Hugging Face's `center_crop`: offset `(H - h) // 2`, and
 * `ceil((h - H) / 2)` zeros before along an axis shorter than the crop.
 */
export function centreCrop(image: Size, crop: Size, rounding: CropRounding = 'round'): CentreCrop {
  const x = centreAxis(image.width, crop.width, rounding);
  const y = centreAxis(image.height, crop.height, rounding);
  return {
    box: { left: x.offset, top: y.offset, width: x.length, height: y.length },
    padding: { top: y.before, bottom: y.after, left: x.before, right: x.after },
  };
}

function centreAxis(size: number, crop: number, rounding: CropRounding): { offset: number; length: number; before: number; after: number } {
  if (crop > size) {
    // torchvision pads (crop - size) // 2 before; Hugging Face's center_crop pads ceil((crop - size) / 2) before.
    const before = rounding === 'floor' ? Math.ceil((crop - size) / 2) : Math.floor((crop - size) / 2);
    return { offset: 0, length: size, before, after: crop - size - before };
  }
  const offset = rounding === 'floor' ? Math.floor((size - crop) / 2) : roundHalfEven((size - crop) / 2);
  return { offset, length: crop, before: 0, after: 0 };
}

/**
 * torchvision's `RandomResizedCrop.get_params`: up to 10 attempts, each drawing an area fraction
 * uniformly from `scale` and an aspect ratio log-uniformly from `ratio`; the first box that fits gets
 * a uniform position. If none fits, the fallback is the largest centred box whose aspect ratio is
 * clamped to `ratio` (offsets truncated: `(H - h) // 2`). Draw order is torchvision's, from `rng`.
 */
export function randomResizedCropBox(
  image: Size,
  scale: readonly [number, number],
  ratio: readonly [number, number],
  rng: Rng,
): CropBox {
  const { width, height } = image;
  const area = width * height;
  const logRatioMin = Math.log(ratio[0]);
  const logRatioMax = Math.log(ratio[1]);
  for (let attempt = 0; attempt < 10; attempt++) {
    const targetArea = area * (scale[0] + (scale[1] - scale[0]) * rng.next());
    const aspect = Math.exp(logRatioMin + (logRatioMax - logRatioMin) * rng.next());
    const w = roundHalfEven(Math.sqrt(targetArea * aspect));
    const h = roundHalfEven(Math.sqrt(targetArea / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const top = rng.nextInt(height - h + 1);
      const left = rng.nextInt(width - w + 1);
      return { left, top, width: w, height: h };
    }
  }
  const inRatio = width / height;
  let w = width;
  let h = height;
  if (inRatio < ratio[0]) {
    h = roundHalfEven(w / ratio[0]);
  } else if (inRatio > ratio[1]) {
    w = roundHalfEven(h * ratio[1]);
  }
  // torchvision would return an empty box for an extreme ratio on a 1-pixel side; keep one pixel.
  w = Math.max(1, w);
  h = Math.max(1, h);
  return { left: Math.floor((width - w) / 2), top: Math.floor((height - h) / 2), width: w, height: h };
}

/**
 * The random choices for one training sample from an image of `image` size: the random resized crop
 * first, then the flip (`rng.next() < flipProbability`), the order of torchvision's
 * `Compose([RandomResizedCrop, RandomHorizontalFlip])`.
 */
export function drawAugmentation(image: Size, augmentation: TrainAugmentation, rng: Rng): AugmentationDraw {
  const crop = randomResizedCropBox(image, augmentation.scale, augmentation.ratio, rng);
  const flip = rng.next() < augmentation.flipProbability;
  return { crop, flip };
}
