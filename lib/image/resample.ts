/**
 * @file Resizing 8-bit images as Pillow's `Image.resize` does, so that the preprocessing of Hugging
 * Face image processors (which resize through Pillow) and of torchvision on PIL images is reproduced
 * pixel for pixel, upscaling included (libvips, behind sharp, samples upscaled images on another grid).
 *
 * Bilinear, bicubic and Lanczos follow Pillow's `ImagingResample` (libImaging/Resample.c): per output
 * pixel, the filter (support 1, 2 and 3; bicubic with a = -0.5; Lanczos-3) is centred on
 * `(x + 0.5) * scale` and widened by the scale when downscaling, its weights normalised to sum 1,
 * converted to fixed point with 22 fraction bits, and applied horizontally then vertically, rounding
 * and clamping to 8 bits after each pass. Nearest follows Pillow's affine nearest-neighbour transform:
 * output pixel x takes input pixel `floor((x + 0.5) * scale)`, the coordinate accumulated as Pillow
 * accumulates it. Measured against Pillow 9.4 (scripts/reference/resample_reference.py): identical
 * bytes on every case of spec/image/resample.spec.ts.
 */
import { invalidParameterError } from '../errors.js';
import type { ResampleFilter } from './preprocessing.js';
import type { RawImage } from './raw-image.js';

const PRECISION_BITS = 32 - 8 - 2;
const ONE = 2 ** PRECISION_BITS;

interface Filter {
  support: number;
  weight(x: number): number;
}

function sinc(x: number): number {
  if (x === 0) return 1;
  const px = x * Math.PI;
  return Math.sin(px) / px;
}

const FILTERS: Readonly<Record<Exclude<ResampleFilter, 'nearest'>, Filter>> = {
  bilinear: {
    support: 1,
    weight: (x) => {
      const a = Math.abs(x);
      return a < 1 ? 1 - a : 0;
    },
  },
  bicubic: {
    support: 2,
    weight: (x) => {
      const a = -0.5;
      const t = Math.abs(x);
      if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
      if (t < 2) return (((t - 5) * t + 8) * t - 4) * a;
      return 0;
    },
  },
  lanczos: {
    support: 3,
    weight: (x) => (x >= -3 && x < 3 ? sinc(x) * sinc(x / 3) : 0),
  },
};

/** Per output pixel: the first input pixel, the number of taps and the fixed-point weights. */
interface Coefficients {
  first: Int32Array;
  count: Int32Array;
  taps: number;
  weights: Float64Array;
}

/** Pillow's `precompute_coeffs` followed by `normalize_coeffs_8bpc`. */
function coefficients(inSize: number, outSize: number, filter: Filter): Coefficients {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = filter.support * filterScale;
  const taps = Math.ceil(support) * 2 + 1;
  const first = new Int32Array(outSize);
  const count = new Int32Array(outSize);
  const weights = new Float64Array(outSize * taps);
  const ss = 1 / filterScale;
  const k = new Float64Array(taps);
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    const xmin = Math.max(0, Math.trunc(center - support + 0.5));
    const xmax = Math.min(inSize, Math.trunc(center + support + 0.5)) - xmin;
    let sum = 0;
    for (let x = 0; x < xmax; x++) {
      const w = filter.weight((x + xmin - center + 0.5) * ss);
      k[x] = w;
      sum += w;
    }
    for (let x = 0; x < xmax; x++) {
      const w = sum !== 0 ? (k[x] as number) / sum : (k[x] as number);
      weights[xx * taps + x] = w < 0 ? Math.trunc(-0.5 + w * ONE) : Math.trunc(0.5 + w * ONE);
    }
    first[xx] = xmin;
    count[xx] = Math.max(0, xmax);
  }
  return { first, count, taps, weights };
}

function clip8(value: number): number {
  if (value >= ONE * 256) return 255;
  if (value <= 0) return 0;
  return Math.floor(value / ONE);
}

/** One pass along rows (`horizontal`) or columns. */
function pass(src: Buffer, width: number, height: number, channels: number, outSize: number, horizontal: boolean, filter: Filter): Buffer {
  const inSize = horizontal ? width : height;
  const { first, count, taps, weights } = coefficients(inSize, outSize, filter);
  const outWidth = horizontal ? outSize : width;
  const outHeight = horizontal ? height : outSize;
  const out = Buffer.alloc(outWidth * outHeight * channels);
  const half = ONE / 2;
  for (let y = 0; y < outHeight; y++) {
    for (let x = 0; x < outWidth; x++) {
      const o = horizontal ? x : y;
      const start = first[o] as number;
      const n = count[o] as number;
      const base = o * taps;
      for (let c = 0; c < channels; c++) {
        let acc = half;
        for (let i = 0; i < n; i++) {
          const pixel = horizontal ? src[(y * width + start + i) * channels + c] : src[((start + i) * width + x) * channels + c];
          acc += (pixel as number) * (weights[base + i] as number);
        }
        out[(y * outWidth + x) * channels + c] = clip8(acc);
      }
    }
  }
  return out;
}

/** Pillow's nearest-neighbour resize (an affine transform sampling pixel centres). */
function nearest(image: RawImage, width: number, height: number): Buffer {
  const { data, channels } = image;
  const out = Buffer.alloc(width * height * channels);
  const ax = image.width / width;
  const ay = image.height / height;
  let yy = ay * 0.5;
  for (let y = 0; y < height; y++, yy += ay) {
    const yin = Math.min(image.height - 1, Math.trunc(yy));
    let xx = ax * 0.5;
    for (let x = 0; x < width; x++, xx += ax) {
      const xin = Math.min(image.width - 1, Math.trunc(xx));
      data.copy(out, (y * width + x) * channels, (yin * image.width + xin) * channels, (yin * image.width + xin + 1) * channels);
    }
  }
  return out;
}

/**
 * `image` resized to `width x height` with `filter`, as Pillow's `Image.resize` (see the file
 * comment). A same-size resize returns the image unchanged.
 */
export function resampleRaw(image: RawImage, width: number, height: number, filter: ResampleFilter): RawImage {
  for (const [name, value] of [
    ['width', width],
    ['height', height],
  ] as const) {
    if (!Number.isInteger(value) || value < 1) throw invalidParameterError(name, 'a positive integer', value);
  }
  if (width === image.width && height === image.height) return image;
  if (filter === 'nearest') return { data: nearest(image, width, height), width, height, channels: image.channels };
  const kernel = FILTERS[filter];
  if (kernel === undefined) throw invalidParameterError('filter', `one of ${['nearest', ...Object.keys(FILTERS)].join(', ')}`, filter);
  let data = image.data;
  let current = image.width;
  if (width !== image.width) {
    data = pass(data, image.width, image.height, image.channels, width, true, kernel);
    current = width;
  }
  if (height !== image.height) data = pass(data, current, image.height, image.channels, height, false, kernel);
  return { data, width, height, channels: image.channels };
}
