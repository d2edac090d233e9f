/**
 * @file Raw 8-bit pixels between the pipeline stages, and the two sharp ends that produce and consume
 * them.
 *
 * Pitfalls (measured, sharp 0.35.5): sharp writes 1-channel raw *input* out as 3 channels unless the
 * output colourspace is set to `'b-w'`, so {@link renderRaw} always sets it and checks the result; and
 * after `resize().extract().extend()` the returned `info.width` is the extract's, not the extended
 * width (the pixels are right), so padding is done here in JavaScript ({@link padRaw}).
 */
import sharp from 'sharp';
import type { Sharp } from 'sharp';
import type { Padding } from './geometry.js';

/** Interleaved (HWC) uint8 pixels, row-major, `data.length = width * height * channels`. */
export interface RawImage {
  data: Buffer;
  width: number;
  height: number;
  /** 1 = grey, 3 = RGB (sRGB). */
  channels: 1 | 3;
}

/**
 * A sharp pipeline reading `image`. The pixel limit is off: raw images have already passed the limit
 * when they were decoded.
 */
export function rawInput(image: RawImage): Sharp {
  return sharp(image.data, {
    raw: { width: image.width, height: image.height, channels: image.channels },
    limitInputPixels: false,
  });
}

/**
 * Runs `pipeline` to raw uint8 pixels in `channels` channels: `'b-w'` (one channel) or `'srgb'`
 * (grey replicated to R = G = B). Throws if sharp returns another channel count or
 * a sample size other than one byte.
 */
export async function renderRaw(pipeline: Sharp, channels: 1 | 3): Promise<RawImage> {
  const { data, info } = await pipeline
    .toColourspace(channels === 1 ? 'b-w' : 'srgb')
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== channels || data.length !== info.width * info.height * channels) {
    throw new Error(
      `sharp returned ${data.length} bytes for ${info.width}x${info.height} pixels with ${info.channels} channels ` +
        `(expected ${channels} channels of one byte)`,
    );
  }
  return { data, width: info.width, height: info.height, channels };
}

/** The `box` of `image` (a copy; `image` itself when the box is the whole image). */
export function extractRaw(image: RawImage, box: { left: number; top: number; width: number; height: number }): RawImage {
  const { data, width, channels } = image;
  if (box.left === 0 && box.top === 0 && box.width === width && box.height === image.height) return image;
  const out = Buffer.alloc(box.width * box.height * channels);
  const rowBytes = box.width * channels;
  for (let y = 0; y < box.height; y++) {
    const from = ((box.top + y) * width + box.left) * channels;
    data.copy(out, y * rowBytes, from, from + rowBytes);
  }
  return { data: out, width: box.width, height: box.height, channels };
}

/** `image` with `padding` zero pixels added on each side (a copy; `image` itself if no padding). */
export function padRaw(image: RawImage, padding: Padding): RawImage {
  const { top, bottom, left, right } = padding;
  if (top === 0 && bottom === 0 && left === 0 && right === 0) return image;
  const { data, width, height, channels } = image;
  const outWidth = left + width + right;
  const out = Buffer.alloc(outWidth * (top + height + bottom) * channels);
  const rowBytes = width * channels;
  for (let y = 0; y < height; y++) {
    data.copy(out, ((top + y) * outWidth + left) * channels, y * rowBytes, (y + 1) * rowBytes);
  }
  return { data: out, width: outWidth, height: top + height + bottom, channels };
}
