import { expect } from 'chai';
import sharp from 'sharp';
import { readJpegHeader } from '../../lib/image/jpeg-header.js';

/** A `width x height` JPEG of a colour gradient (`channels` 1 grey, 3 sRGB, 4 CMYK), EXIF orientation `orientation` if given. */
async function jpeg(width: number, height: number, channels: 1 | 3 | 4, orientation?: number): Promise<Buffer> {
  const pixels = Buffer.alloc(width * height * 3);
  for (let i = 0; i < pixels.length; i++) pixels[i] = (i * 7) % 256;
  let image = sharp(pixels, { raw: { width, height, channels: 3 } });
  if (channels === 1) image = image.toColourspace('b-w');
  if (channels === 4) image = image.toColourspace('cmyk');
  if (orientation !== undefined) image = image.withMetadata({ orientation });
  return image.jpeg({ quality: 80 }).toBuffer();
}

/** A segment: marker, then its 16-bit big-endian length (payload + 2) and the payload. */
function segment(marker: number, payload: number[]): number[] {
  const length = payload.length + 2;
  return [0xff, marker, length >> 8, length & 0xff, ...payload];
}

/** An `Exif` APP1 payload: little-endian TIFF header, IFD0 with the given 12-byte entries, next IFD 0. */
function exifPayload(entries: number[][]): number[] {
  const tiff = [0x49, 0x49, 42, 0, 8, 0, 0, 0, entries.length, 0, ...entries.flat(), 0, 0, 0, 0];
  return [0x45, 0x78, 0x69, 0x66, 0, 0, ...tiff];
}

/** An IFD entry (little-endian): tag, type, count, value. */
function entry(tag: number, type: number, count: number, value: number): number[] {
  return [tag & 0xff, tag >> 8, type, 0, count, 0, 0, 0, value & 0xff, value >> 8, 0, 0];
}

/** A minimal JPEG header (SOI, the given segments, an 8-bit 3-component 40x30 SOF0, an SOS) for the parser alone. */
function header(...segments: number[][]): Uint8Array {
  const sof = segment(0xc0, [8, 0, 30, 0, 40, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
  const sos = segment(0xda, [3, 1, 0, 2, 0x11, 3, 0x11, 0, 63, 0]);
  return Uint8Array.from([0xff, 0xd8, ...segments.flat(), ...sof, ...sos, 0x12, 0x34, 0xff, 0xd9]);
}

describe('readJpegHeader', () => {
  it('reads size, components, precision and EXIF orientation as libvips does (sharp metadata), for encoded JPEGs', async () => {
    const cases: Array<[number, number, 1 | 3 | 4, number | undefined]> = [
      [37, 23, 3, undefined],
      [640, 480, 1, undefined],
      [300, 200, 4, undefined],
      ...[1, 2, 3, 4, 5, 6, 7, 8].map((o): [number, number, 1 | 3 | 4, number] => [61, 45, 3, o]),
    ];
    for (const [width, height, channels, orientation] of cases) {
      const bytes = await jpeg(width, height, channels, orientation);
      const meta = await sharp(bytes).metadata();
      expect(readJpegHeader(bytes), `${width}x${height}x${channels} orientation ${orientation}`).to.deep.equal({
        width: meta.width,
        height: meta.height,
        precision: 8,
        components: meta.channels,
        orientation: meta.orientation ?? 1,
      });
    }
  });

  it('reads a hand-made header: fill bytes before a marker, orientation in a big- or little-endian IFD0', () => {
    const withFill = header(segment(0xe0, [0x4a, 0x46, 0x49, 0x46, 0])).slice();
    expect(readJpegHeader(Uint8Array.from([0xff, 0xd8, 0xff, 0xff, ...withFill.subarray(2)]))).to.deep.equal({ width: 40, height: 30, precision: 8, components: 3, orientation: 1 });
    expect(readJpegHeader(header(segment(0xe1, exifPayload([entry(0x0112, 3, 1, 3)]))))?.orientation).to.equal(3);
    const bigEndian = [0x45, 0x78, 0x69, 0x66, 0, 0, 0x4d, 0x4d, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0];
    expect(readJpegHeader(header(segment(0xe1, bigEndian)))?.orientation).to.equal(6);
    // Orientation absent from IFD0: 1, as libvips (it reads IFD0 only).
    expect(readJpegHeader(header(segment(0xe1, exifPayload([entry(0x010f, 2, 1, 0)]))))?.orientation).to.equal(1);
  });

  it('answers undefined wherever it would have to guess what libvips does', () => {
    const orientation = (e: number[]): Uint8Array => header(segment(0xe1, exifPayload([e])));
    const cases: Record<string, Uint8Array> = {
      'not a JPEG': Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]),
      'cut inside a segment': header().subarray(0, 12),
      'orientation as a LONG': orientation(entry(0x0112, 4, 1, 6)),
      'orientation with two values': orientation(entry(0x0112, 3, 2, 6)),
      'two orientation entries': header(segment(0xe1, exifPayload([entry(0x0112, 3, 1, 1), entry(0x0112, 3, 1, 6)]))),
      'two Exif segments': header(segment(0xe1, exifPayload([])), segment(0xe1, exifPayload([]))),
      'Exif without its two zero bytes': header(segment(0xe1, [0x45, 0x78, 0x69, 0x66, 0x20, 0x20, 0x49, 0x49, 42, 0, 8, 0, 0, 0])),
      'IFD0 past the end': header(segment(0xe1, [0x45, 0x78, 0x69, 0x66, 0, 0, 0x49, 0x49, 42, 0, 200, 0, 0, 0])),
      'no SOF before the scan': Uint8Array.from([0xff, 0xd8, ...segment(0xda, [0]), 0xff, 0xd9]),
      'two SOFs': header(segment(0xc2, [8, 0, 30, 0, 40, 3])),
    };
    for (const [name, bytes] of Object.entries(cases)) expect(readJpegHeader(bytes), name).to.equal(undefined);
    // Height 0: the size comes later, in a DNL marker.
    const dnl = header();
    dnl.set([0, 0], dnl.indexOf(0xc0) + 4);
    expect(readJpegHeader(dnl)).to.equal(undefined);
  });
});
