/**
 * @file Encoded image bytes (an upload) to the model input of one image: decode with the pixel limit,
 * the eval transform (resize shorter side, centre crop) and normalisation, exactly as the batch loader
 * prepares gallery images, so an uploaded copy of a gallery image embeds to the same vector.
 */
import { decodeImageBuffer } from './decode.js';
import type { Preprocessing } from './preprocessing.js';
import { toTensor } from './to-tensor.js';
import { evalTransform } from './transform.js';

/** Options of {@link preprocessImageBytes}. */
export interface PreprocessImageOptions {
  /** Names the image in error messages (`request body`, `file "cat.jpg"`). */
  name: string;
  /** Largest width x height accepted; decode.ts's default when absent. */
  limitInputPixels?: number | undefined;
}

/**
 * The Float32 model input (`channels * height * width` values in `preprocessing.layout`) of one encoded
 * image. Errors: DmlError E_IMAGE for data that is not a complete image or declares too many pixels.
 */
export async function preprocessImageBytes(bytes: Uint8Array, preprocessing: Preprocessing, options: PreprocessImageOptions): Promise<Float32Array> {
  const raw = await decodeImageBuffer(bytes, options.name, { channels: preprocessing.channels, limitInputPixels: options.limitInputPixels });
  const image = await evalTransform(raw, preprocessing);
  const out = new Float32Array(preprocessing.channels * preprocessing.height * preprocessing.width);
  toTensor(image, preprocessing, out);
  return out;
}
