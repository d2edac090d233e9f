/**
 * @file Decoding: an {@link ImageSource} (an encoded image file or one item of an IDX file) to oriented
 * 8-bit raw pixels with the channel count the model wants. Every failure is a one-line DmlError that
 * starts with the file's name: `<file>: <what is wrong> (<expected>)`.
 *
 * Decisions (measured with sharp 0.35.5 / libvips 8.18):
 * - `failOn: 'truncated'`: truncated and undecodable data are rejected (a JPEG cut in half throws
 *   `VipsJpeg: premature end of JPEG image`, as PIL refuses truncated files by default), while JPEGs
 *   with recoverable corruption ("extraneous bytes before marker", "bad Huffman code") still decode,
 *   as they do in PIL/torchvision; sharp's default `'warning'` rejects those. `'error'` behaved the
 *   same as `'truncated'` on every sample tried, so the documented level is kept.
 * - `limitInputPixels` defaults to 40e6 (sharp's own default, 0x3FFF², lets a 446 KB PNG of 12000x12000
 *   through): decompression bombs fail on the header, before any pixel is decoded.
 * - `autoOrient: true`: the EXIF orientation is applied, so widths and heights are the displayed ones.
 * - Alpha is dropped (`removeAlpha`), not flattened: the colour values stored under transparent pixels
 *   are kept, exactly as PIL's `convert('RGB')` in torchvision's image loader does.
 * - Grey (1 channel) is libvips' `'b-w'` colourspace: Y = 0.2126 R + 0.7152 G + 0.0722 B computed on
 *   linear light, re-encoded with the sRGB curve (red 255 -> 127, green 255 -> 220, blue 255 -> 76).
 *   That differs from PIL's `convert('L')` (0.299 R + 0.587 G + 0.114 B on the encoded values).
 * - RGB (3 channels) is sRGB: grey images are replicated to R = G = B, 16-bit images reduced to 8 bits,
 *   CMYK converted.
 * - Files are read whole (util/regular-file.ts: a regular file only, so a FIFO is one error, not a read
 *   that never ends) and decoded from memory, so a missing or unreadable file gets an errno-based error
 *   rather than a libvips message.
 */
import { readRegular, readRegularSync } from '../util/regular-file.js';
import sharp, { type Sharp } from 'sharp';
import type { ImageSource } from '../data/manifest.js';
import { readIdxFile } from '../data/idx-reader.js';
import { DmlError, invalidParameterError } from '../errors.js';
import { renderRaw } from './raw-image.js';
import type { RawImage } from './raw-image.js';

/** Default largest number of pixels (width x height) an input image may declare. */
export const DEFAULT_LIMIT_INPUT_PIXELS = 40_000_000;

/** Options of {@link decodeImageSource} and {@link decodeImageBuffer}. */
export interface DecodeOptions {
  /** Channels of the result: 1 = grey, 3 = RGB. */
  channels: 1 | 3;
  /** Largest width x height accepted; default {@link DEFAULT_LIMIT_INPUT_PIXELS}. */
  limitInputPixels?: number | undefined;
}

/** The name of a source in messages: the file path, or `<file>[<index>]` for an IDX item. */
export function describeImageSource(source: ImageSource): string {
  return source.kind === 'idx' ? `${source.file}[${source.index}]` : source.path;
}

/** Decodes one image of a manifest into raw pixels (see the file comment for the decisions). */
export async function decodeImageSource(source: ImageSource, options: DecodeOptions): Promise<RawImage> {
  const limit = checkDecodeOptions(options);
  if (source.kind === 'file') {
    return decodeImageBuffer(await readImageFile(source.path), source.path, options);
  }
  if (source.kind === 'idx') {
    return decodeIdxItem(source, options.channels, limit);
  }
  throw invalidParameterError('source.kind', "'file' or 'idx'", (source as { kind: unknown }).kind);
}

/**
 * Decodes an encoded image held in memory (an upload, a file already read). `name` is used in error
 * messages.
 */
export async function decodeImageBuffer(bytes: Uint8Array, name: string, options: DecodeOptions): Promise<RawImage> {
  const limit = checkDecodeOptions(options);
  try {
    // Inside the try: sharp's constructor itself throws for an empty buffer.
    return await renderRaw(encodedInput(bytes, limit).removeAlpha(), options.channels);
  } catch (err) {
    throw await imageError(err, name, bytes, limit);
  }
}

/**
 * A sharp pipeline reading the encoded image `bytes` as every decode here reads one (see the file
 * comment): failing on truncated data, at most `limit` pixels, EXIF orientation applied. Throws for
 * empty bytes.
 */
export function encodedInput(bytes: Uint8Array, limit: number): Sharp {
  return sharp(bytes, { limitInputPixels: limit, failOn: 'truncated', autoOrient: true });
}

/** Checks {@link DecodeOptions}; the pixel limit to apply. Errors: E_ARG naming the option. */
export function checkDecodeOptions(options: DecodeOptions): number {
  if (options.channels !== 1 && options.channels !== 3) {
    throw invalidParameterError('channels', '1 or 3', options.channels);
  }
  const limit = options.limitInputPixels ?? DEFAULT_LIMIT_INPUT_PIXELS;
  if (!Number.isInteger(limit) || limit <= 0) {
    throw invalidParameterError('limitInputPixels', 'a positive integer', limit);
  }
  return limit;
}

/** The bytes of image file `path`; E_NOT_FOUND or E_IO naming it when it cannot be read. */
export async function readImageFile(path: string): Promise<Buffer> {
  try {
    return await readRegular(path, notAnImageFile(path));
  } catch (err) {
    throw imageFileError(path, err);
  }
}

/**
 * {@link readImageFile} in one blocking call, for a process that does nothing else meanwhile (an image
 * decode child; see util/regular-file.ts, `readRegularSync`). Same errors.
 */
export function readImageFileSync(path: string): Buffer {
  try {
    return readRegularSync(path, notAnImageFile(path));
  } catch (err) {
    throw imageFileError(path, err);
  }
}

/** The E_IO error of `path` when it is not a regular file, from the reason. */
function notAnImageFile(path: string): (reason: string) => DmlError {
  return (reason) => new DmlError('E_IO', `${path}: ${reason} (expected an image file)`);
}

/** A failure to read image file `path` as the DmlError that names it (E_NOT_FOUND, E_IO). */
function imageFileError(path: string, err: unknown): DmlError {
  if (err instanceof DmlError) return err;
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') {
    return new DmlError('E_NOT_FOUND', `${path}: no such file (expected an existing image file)`, { cause: err });
  }
  const reason = code ?? (err as Error).message;
  return new DmlError('E_IO', `${path}: cannot read the file, ${reason} (expected a readable file)`, { cause: err });
}

/** One item of an IDX image file (dims count x rows x cols), fed to sharp as 1-channel raw pixels. */
async function decodeIdxItem(
  source: Extract<ImageSource, { kind: 'idx' }>,
  channels: 1 | 3,
  limit: number,
): Promise<RawImage> {
  const { file, index } = source;
  const { dims, data } = await readIdxFile(file);
  const [count, rows, cols] = dims;
  if (dims.length !== 3 || count === undefined || rows === undefined || cols === undefined) {
    throw new DmlError(
      'E_DATASET',
      `${file}: IDX file has dims ${dims.join('x')} (expected 3 dims, count x rows x cols, for an image file)`,
    );
  }
  if (!Number.isInteger(index) || index < 0 || index >= count) {
    throw new DmlError(
      'E_IMAGE',
      `${file}: IDX image index ${index} out of range (expected an integer in [0, ${count}))`,
    );
  }
  const size = rows * cols;
  const pixels = Buffer.from(data.buffer, data.byteOffset + index * size, size);
  try {
    return await renderRaw(
      sharp(pixels, { raw: { width: cols, height: rows, channels: 1 }, limitInputPixels: limit }),
      channels,
    );
  } catch (err) {
    throw await imageError(err, describeImageSource(source), undefined, limit);
  }
}

/** The decoder's message as one line: lines de-duplicated and joined with '; '. */
function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const lines = [...new Set(text.split('\n').map((l) => l.trim().replace(/:$/, '')).filter((l) => l !== ''))];
  const line = lines.join('; ');
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}

/** Formats sharp can read from memory, for the "unsupported format" message. */
function readableFormats(): string {
  return Object.values(sharp.format)
    .filter((f) => f.input.buffer && f.id !== 'raw')
    .map((f) => f.id.toUpperCase())
    .join(', ');
}

/** Maps a sharp failure to a DmlError naming `name`. */
async function imageError(err: unknown, name: string, bytes: Uint8Array | undefined, limit: number): Promise<DmlError> {
  const detail = oneLine(err);
  if (/exceeds pixel limit/i.test(detail)) {
    const size = bytes === undefined ? undefined : await declaredSize(bytes);
    const what =
      size === undefined ? 'too many pixels' : `too many pixels, ${size.width}x${size.height} = ${size.width * size.height}`;
    return new DmlError('E_IMAGE', `${name}: ${what} (expected at most limitInputPixels = ${limit} pixels)`, {
      cause: err,
    });
  }
  if (/unsupported image format/i.test(detail)) {
    return new DmlError('E_IMAGE', `${name}: not an image in a supported format (expected ${readableFormats()} data)`, {
      cause: err,
    });
  }
  if (/buffer is empty/i.test(detail)) {
    return new DmlError('E_IMAGE', `${name}: empty file (expected encoded image data)`, { cause: err });
  }
  if (/premature end|truncated|unexpected end/i.test(detail)) {
    return new DmlError('E_IMAGE', `${name}: truncated image data, ${detail} (expected a complete image file)`, {
      cause: err,
    });
  }
  return new DmlError('E_IMAGE', `${name}: corrupt image data, ${detail} (expected a decodable image file)`, {
    cause: err,
  });
}

/** Width and height an image header declares, read without the pixel limit; undefined if unreadable. */
async function declaredSize(bytes: Uint8Array): Promise<{ width: number; height: number } | undefined> {
  return sharp(bytes, { limitInputPixels: false }).metadata().then(
    (m) => ({ width: m.width, height: m.height }),
    () => undefined,
  );
}
