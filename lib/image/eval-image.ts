/**
 * @file The eval transform from an image source: read, decode, resize and centre-crop into HWC uint8
 * pixels, exactly the bytes of {@link decodeImageSource} followed by {@link evalTransform}, in one
 * libvips pipeline where that gives the same bytes.
 *
 * Why: each sharp call costs about 0.45 ms of CPU whatever the image (an 8x8 JPEG: JavaScript options,
 * libvips objects, thread hand-offs), and the two-step path makes two calls plus a full-size raw copy
 * between them. One pipeline, with the size taken from the JPEG header in JavaScript (jpeg-header.ts,
 * no third call), costs 3.47 ms of CPU instead of 4.09 per 480x320 JPEG to a 224x224 crop (2 vCPUs,
 * one image at a time, medians of 5 alternating rounds of 400 images:
 * scripts/experiments/eval-image-cost.ts; docs/benchmarks.md).
 *
 * When: a JPEG file of 8-bit samples with EXIF orientation 1-4 (or none), without a Pillow-exact
 * `resample`, into 3 channels (from grey, YCbCr or CMYK) or into 1 from a grey JPEG. Everything else
 * takes the two steps, because one pipeline gives other bytes there (measured on generated JPEG, PNG,
 * WebP, GIF and TIFF images of 50x400 to 2000x600 pixels under every resize mode):
 * - images with alpha: sharp premultiplies alpha for the resize and drops it at the end, where the two
 *   steps drop it first (colour differences up to 245 levels);
 * - 16-bit images: resized at 16 bits, then reduced (1-2 levels);
 * - colour into 1 channel: the grey conversion comes after the resize instead of before (up to 43);
 * - EXIF orientations 5-8: sharp resizes before the 90-degree rotation (1 level on upscaled pixels).
 *
 * The whole image is also given as a pre-resize extract where the resize shrinks both sides at least twice:
 * without one, sharp decodes a JPEG shrunk by 2, 4 or 8 in the DCT domain when the resize shrinks it
 * 3 times or more (`shrink-on-load`; sharp 0.35's pipeline.cc), which gives
 * other pixels (up to 18-27 levels on the 1600x1200 test images) than decoding at full size and then
 * resizing, and than PIL, which torchvision uses and which never shrinks on load.
 *
 * A failure of the one pipeline (a corrupt or truncated file, too many pixels) is decoded again the two-step
 * way, which throws the error decode.ts words for it.
 */
import type { ImageSource } from '../data/manifest.js';
import { checkDecodeOptions, decodeImageBuffer, decodeImageSource, encodedInput, readImageFile, readImageFileSync, type DecodeOptions } from './decode.js';
import { readJpegHeader, type JpegHeader } from './jpeg-header.js';
import type { Preprocessing } from './preprocessing.js';
import { padRaw, renderRaw, type RawImage } from './raw-image.js';
import { evalBoxes, evalTransform, RESIZE_KERNEL, type EvalGeometry } from './transform.js';

/** Options of {@link loadEvalImage}. */
export interface EvalImageOptions {
  /** Largest width x height an input may declare; decode.ts's default when absent. */
  limitInputPixels?: number | undefined;
  /**
   * Read the file in one blocking call (decode.ts, `readImageFileSync`): for a process that does
   * nothing else meanwhile, an image decode child. Default false.
   */
  syncRead?: boolean | undefined;
}

/** Whether one pipeline gives the two steps' bytes for a JPEG with `header` into `channels` (see the file comment). */
export function onePipelineFits(header: JpegHeader, channels: 1 | 3): boolean {
  if (header.precision !== 8 || header.orientation < 1 || header.orientation > 4) return false;
  return channels === 3 ? header.components === 1 || header.components === 3 || header.components === 4 : header.components === 1;
}

/**
 * The eval transform of the JPEG `bytes`, whose header is `header`, in one libvips pipeline: the bytes
 * of the two steps only where {@link onePipelineFits}. Errors: sharp's.
 */
export async function evalTransformJpeg(bytes: Uint8Array, header: JpegHeader, size: EvalGeometry & Pick<Preprocessing, 'channels'>, limit: number): Promise<RawImage> {
  // Orientations 1-4 keep the stored width and height.
  const { resized, box, padding } = evalBoxes(header, size);
  let pipeline = encodedInput(bytes, limit);
  // The whole-image extract only where a shrink on load is possible: libvips' JPEG loader shrinks by an
  // integer factor of 2, 4 or 8, so a resize that shrinks either side less than twice never takes it,
  // and one libvips operation fewer costs 2-4% less CPU per image (480x320 JPEGs to 224x224).
  if (Math.min(header.width / resized.width, header.height / resized.height) >= 2) {
    pipeline = pipeline.extract({ left: 0, top: 0, width: header.width, height: header.height });
  }
  pipeline = pipeline.resize(resized.width, resized.height, { kernel: RESIZE_KERNEL, fit: 'fill' }).extract(box);
  return padRaw(await renderRaw(pipeline, size.channels), padding);
}

/**
 * The eval transform of `source` ({@link evalTransform} of {@link decodeImageSource}'s pixels, the same
 * bytes), in one libvips pipeline where it can (see the file comment). Errors: those of the two.
 */
export async function loadEvalImage(source: ImageSource, preprocessing: EvalGeometry & Pick<Preprocessing, 'channels'>, options: EvalImageOptions = {}): Promise<RawImage> {
  const decodeOptions: DecodeOptions = { channels: preprocessing.channels, limitInputPixels: options.limitInputPixels };
  const limit = checkDecodeOptions(decodeOptions);
  if (source.kind !== 'file') return evalTransform(await decodeImageSource(source, decodeOptions), preprocessing);
  const bytes = options.syncRead === true ? readImageFileSync(source.path) : await readImageFile(source.path);
  const header = preprocessing.resample === undefined ? readJpegHeader(bytes) : undefined;
  if (header !== undefined && onePipelineFits(header, preprocessing.channels)) {
    try {
      return await evalTransformJpeg(bytes, header, preprocessing, limit);
    } catch {
      // Decoded again below, so that the error is the one decode.ts words for this file.
    }
  }
  return evalTransform(await decodeImageBuffer(bytes, source.path, decodeOptions), preprocessing);
}
