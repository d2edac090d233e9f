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
 * accumulates it. Measured against Pillow 9.4 (scripts/reference/make_hub_fixtures.py writes the
 * cases): identical bytes on every case of spec/image/resample.spec.ts. Cost, 640x480 RGB to 341x256 on a
 * 2-vCPU machine under heavy load (load average 9-10, so only the ratio means much): bilinear 28-55
 * ms, bicubic 36-107 ms, Lanczos 48-97 ms, against 2.7-5.9 ms for sharp's `linear` (SIMD) in the same
 * runs, about ten times as slow; decode processes run it in parallel, one image each.
 */
import { invalidParameterError } from '../errors.js';
import type { ResampleFilter } from './preprocessing.js';
import type { RawImage } from './raw-image.js';

const PRECISION_BITS = 32 - 8 - 2;
const ONE = 2 ** PRECISION_BITS;
/** Pillow's rounding offset of the fixed-point sums. */
const HALF = ONE / 2;

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
  weights: Int32Array;
}

/** Pillow's `precompute_coeffs` followed by `normalize_coeffs_8bpc`. */
function coefficients(inSize: number, outSize: number, filter: Filter): Coefficients {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = filter.support * filterScale;
  const taps = Math.ceil(support) * 2 + 1;
  const first = new Int32Array(outSize);
  const count = new Int32Array(outSize);
  const weights = new Int32Array(outSize * taps);
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

/** Pillow's `clip8`: the sums are integers, below 2^30 once clamped, so the shift is exact. */
function clip8(value: number): number {
  if (value >= ONE * 256) return 255;
  if (value <= 0) return 0;
  return value >> PRECISION_BITS;
}

/**
 * The horizontal pass: each output value is clip8(2^21 + sum of pixel x weight), as Pillow's
 * `ImagingResampleHorizontal_8bpc`. The sums stay far below 2^53, so float64 arithmetic is exact.
 */
function horizontalPass(src: Buffer, width: number, height: number, channels: number, outWidth: number, filter: Filter): Buffer {
  const { first, count, taps, weights } = coefficients(width, outWidth, filter);
  const out = Buffer.alloc(outWidth * height * channels);
  // Output column by output column: its taps and weights stay the same down the rows.
  for (let o = 0; o < outWidth; o++) {
    const n = count[o] as number;
    const base = o * taps;
    for (let y = 0; y < height; y++) {
      const from = (y * width + (first[o] as number)) * channels;
      const to = (y * outWidth + o) * channels;
      if (channels === 3) {
        let r = HALF;
        let g = HALF;
        let b = HALF;
        for (let i = 0, at = from; i < n; i++, at += 3) {
          const w = weights[base + i] as number;
          r += (src[at] as number) * w;
          g += (src[at + 1] as number) * w;
          b += (src[at + 2] as number) * w;
        }
        out[to] = clip8(r);
        out[to + 1] = clip8(g);
        out[to + 2] = clip8(b);
      } else {
        for (let c = 0; c < channels; c++) {
          let acc = HALF;
          for (let i = 0, at = from + c; i < n; i++, at += channels) acc += (src[at] as number) * (weights[base + i] as number);
          out[to + c] = clip8(acc);
        }
      }
    }
  }
  return out;
}

/** The vertical pass, as Pillow's `ImagingResampleVertical_8bpc`, a whole row of taps at a time. */
function verticalPass(src: Buffer, width: number, height: number, channels: number, outHeight: number, filter: Filter): Buffer {
  const { first, count, taps, weights } = coefficients(height, outHeight, filter);
  const rowLength = width * channels;
  const out = Buffer.alloc(outHeight * rowLength);
  const acc = new Float64Array(rowLength);
  for (let o = 0; o < outHeight; o++) {
    acc.fill(HALF);
    const base = o * taps;
    for (let i = 0, n = count[o] as number; i < n; i++) {
      const w = weights[base + i] as number;
      const row = ((first[o] as number) + i) * rowLength;
      for (let x = 0; x < rowLength; x++) acc[x] = (acc[x] as number) + (src[row + x] as number) * w;
    }
    const to = o * rowLength;
    for (let x = 0; x < rowLength; x++) out[to + x] = clip8(acc[x] as number);
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
    data = horizontalPass(data, image.width, image.height, image.channels, width, kernel);
    current = width;
  }
  if (height !== image.height) data = verticalPass(data, current, image.height, image.channels, height, kernel);
  return { data, width, height, channels: image.channels };
}
