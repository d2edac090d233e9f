/**
 * @file What a JPEG file's header says about its pixels, read in JavaScript from the bytes (no decoder
 * call): the frame's size, sample precision and component count (its SOF marker) and the EXIF
 * orientation libvips will apply. The eval pipeline (eval-image.ts) needs the displayed size before it
 * can ask libvips for the resize and crop; reading it here saves a libvips call per image.
 *
 * Strict by design: whatever is unusual gives `undefined`, and the caller then takes the path that asks
 * libvips itself (never a guess). libvips reads the orientation (through libexif) from IFD0 of the
 * `Exif` APP1 segment, and treats a value outside 1-8 as 1 (libvips' foreign/exif.c); so `undefined`
 * comes back for: no SOI, a marker or segment running past the end, no SOF or more than one before the
 * scan, a height of 0 (defined later by a DNL marker), more than one `Exif` APP1, an `Exif` APP1 that
 * is not `Exif\0\0` + a TIFF header with an in-bounds IFD0, an orientation that is not one SHORT, or
 * several orientation entries.
 */

/** The header fields the eval pipeline decides on. */
export interface JpegHeader {
  /** Size of the stored frame, before the EXIF orientation is applied. */
  width: number;
  height: number;
  /** Bits per sample (8 for nearly every JPEG; 12 exists). */
  precision: number;
  /** Components of the frame: 1 grey, 3 YCbCr (or RGB), 4 CMYK (or YCCK). */
  components: number;
  /** EXIF orientation of IFD0 as stored (1-8; libvips applies any other value as 1), 1 when there is none. */
  orientation: number;
}

/** SOF markers (0xC0-0xCF less DHT 0xC4, JPG 0xC8 and DAC 0xCC): each starts a frame header. */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

/** Markers that stand alone, without a length: TEM, RST0-RST7, SOI, EOI. */
function hasNoLength(marker: number): boolean {
  return marker === 0x01 || (marker >= 0xd0 && marker <= 0xd9);
}

const ORIENTATION_TAG = 0x0112;
const SHORT = 3;

/**
 * The orientation IFD0 of an EXIF block (the APP1 payload after `Exif\0\0`: a TIFF header and its
 * IFDs) holds, 1 when none; undefined when the block is not well-formed or the entry is not one SHORT
 * (see the file comment).
 */
function exifOrientation(tiff: Uint8Array): number | undefined {
  if (tiff.length < 8) return undefined;
  const view = new DataView(tiff.buffer, tiff.byteOffset, tiff.byteLength);
  const order = view.getUint16(0);
  if (order !== 0x4949 && order !== 0x4d4d) return undefined;
  const little = order === 0x4949;
  if (view.getUint16(2, little) !== 42) return undefined;
  const ifd0 = view.getUint32(4, little);
  if (ifd0 < 8 || ifd0 + 2 > tiff.length) return undefined;
  const end = ifd0 + 2 + view.getUint16(ifd0, little) * 12;
  if (end > tiff.length) return undefined;
  let orientation: number | undefined;
  for (let entry = ifd0 + 2; entry < end; entry += 12) {
    if (view.getUint16(entry, little) !== ORIENTATION_TAG) continue;
    // One SHORT, stored in the first two bytes of the value field; any other form is left to libvips.
    if (orientation !== undefined || view.getUint16(entry + 2, little) !== SHORT || view.getUint32(entry + 4, little) !== 1) return undefined;
    orientation = view.getUint16(entry + 8, little);
  }
  return orientation ?? 1;
}

/** The header of the JPEG in `bytes`; undefined when it is not a JPEG or not certain (see the file comment). */
export function readJpegHeader(bytes: Uint8Array): JpegHeader | undefined {
  if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return undefined;
  let frame: Omit<JpegHeader, 'orientation'> | undefined;
  let exif: Uint8Array | undefined;
  let at = 2;
  for (;;) {
    if (at >= bytes.length || bytes[at] !== 0xff) return undefined;
    // Fill bytes: any number of 0xFF before the marker code.
    while (at < bytes.length && bytes[at] === 0xff) at++;
    if (at >= bytes.length) return undefined;
    const marker = bytes[at] as number;
    at++;
    if (marker === 0xd9) return undefined; // EOI before any scan
    if (hasNoLength(marker)) continue;
    if (at + 2 > bytes.length) return undefined;
    const length = ((bytes[at] as number) << 8) | (bytes[at + 1] as number);
    if (length < 2 || at + length > bytes.length) return undefined;
    const body = bytes.subarray(at + 2, at + length);
    at += length;
    if (marker === 0xda) break; // SOS: libjpeg has read every marker the decoder will use
    if (isStartOfFrame(marker)) {
      if (frame !== undefined || body.length < 6) return undefined;
      frame = {
        precision: body[0] as number,
        height: ((body[1] as number) << 8) | (body[2] as number),
        width: ((body[3] as number) << 8) | (body[4] as number),
        components: body[5] as number,
      };
    } else if (marker === 0xe1 && body.length >= 4 && body[0] === 0x45 && body[1] === 0x78 && body[2] === 0x69 && body[3] === 0x66) {
      // "Exif": libvips keeps the last such segment; more than one is left to it.
      if (exif !== undefined || body.length < 6 || body[4] !== 0 || body[5] !== 0) return undefined;
      exif = body.subarray(6);
    }
  }
  if (frame === undefined || frame.width === 0 || frame.height === 0) return undefined;
  const orientation = exif === undefined ? 1 : exifOrientation(exif);
  return orientation === undefined ? undefined : { ...frame, orientation };
}
