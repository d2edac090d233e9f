/**
 * @file Small image fixtures for the image-pipeline specs, generated into a temporary folder with sharp
 * (PNG is lossless, so pixel values are exact), plus an IDX writer and an error assertion.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { expect } from 'chai';
import sharp from 'sharp';
import type { DmlError } from '../../lib/errors.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import type { DmlErrorCode } from '../../lib/errors.js';

/** A new empty folder under the OS temp folder. */
export function makeTempDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Interleaved pixels from `pixel(x, y)` (one array of `channels` values per pixel). */
export function makePixels(width: number, height: number, pixel: (x: number, y: number) => number[]): Buffer {
  const values: number[] = [];
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) values.push(...pixel(x, y));
  return Buffer.from(values);
}

/** Encodes raw interleaved pixels as PNG (lossless) or JPEG; 1 channel is written as a grey image. */
export async function encodeImage(
  pixels: Buffer,
  width: number,
  height: number,
  channels: 1 | 3 | 4,
  format: 'png' | 'jpeg',
): Promise<Buffer> {
  let image = sharp(pixels, { raw: { width, height, channels } });
  if (channels === 1) image = image.toColourspace('b-w');
  return format === 'png' ? image.png().toBuffer() : image.jpeg({ quality: 90 }).toBuffer();
}

/** Writes `bytes` to `dir/name` and returns the path. */
export function writeFixture(dir: string, name: string, bytes: Uint8Array): string {
  const file = path.join(dir, name);
  writeFileSync(file, bytes);
  return file;
}

/**
 * A decompression bomb: a valid PNG of `width x height` black pixels (1-bit grey) whose file is only a
 * few tens of KB. Written by hand because encoding 144 million pixels with sharp takes seconds.
 */
export function encodeBombPng(width: number, height: number): Buffer {
  const chunk = (type: string, body: Buffer): Buffer => {
    const typed = Buffer.concat([Buffer.from(type, 'latin1'), body]);
    const out = Buffer.alloc(typed.length + 8);
    out.writeUInt32BE(body.length, 0);
    typed.copy(out, 4);
    out.writeUInt32BE(crc32(typed), typed.length + 4);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([1, 0, 0, 0, 0], 8); // bit depth 1, grey, deflate, filter 0, no interlace
  const rows = Buffer.alloc(height * (1 + Math.ceil(width / 8))); // filter byte 0 + zero bits per row
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** An IDX image file (uint8, count x rows x cols) holding `data`. */
export function encodeIdx(count: number, rows: number, cols: number, data: number[]): Buffer {
  const header = Buffer.alloc(16);
  header.set([0, 0, 0x08, 3]);
  header.writeUInt32BE(count, 4);
  header.writeUInt32BE(rows, 8);
  header.writeUInt32BE(cols, 12);
  return Buffer.concat([header, Buffer.from(data)]);
}

/**
 * Like expectDmlError, and the message must also start with `<prefix>: ` (the file name); returns the error.
 */
export async function expectDmlErrorWithPrefix(
  promise: Promise<unknown>,
  code: DmlErrorCode,
  prefix: string,
  pattern: RegExp,
): Promise<DmlError> {
  const dml = await expectDmlError(promise, code, pattern);
  expect(dml.message.startsWith(`${prefix}: `), dml.message).to.equal(true);
  return dml;
}
