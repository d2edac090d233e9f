/**
 * @file The benchmarks' generated JPEGs: 480x320 smooth colour fields plus noise (quality 90), seeded,
 * in 10 class folders, for the image-pipeline measurements (bench-eval.ts --mode images,
 * scripts/experiments/eval-image-cost.ts). Speed only: the classes carry no visual meaning.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { Rng } from '../../lib/util/rng.js';

/** Writes `count` JPEGs under `dir` (`class_<i mod 10>/<i>.jpg`); returns their paths in order. */
export async function writeSyntheticJpegs(dir: string, count: number): Promise<string[]> {
  const rng = new Rng(11);
  for (let c = 0; c < 10; c++) await mkdir(path.join(dir, `class_${c}`), { recursive: true });
  const [w, h] = [480, 320];
  const files: string[] = [];
  for (let i = 0; i < count; i++) {
    const pixels = Buffer.alloc(w * h * 3);
    const [r0, g0, b0] = [rng.nextInt(256), rng.nextInt(256), rng.nextInt(256)];
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const o = (y * w + x) * 3;
        const noise = rng.nextInt(48) - 24;
        pixels[o] = Math.max(0, Math.min(255, r0 + (x * 128) / w + noise));
        pixels[o + 1] = Math.max(0, Math.min(255, g0 + (y * 128) / h + noise));
        pixels[o + 2] = Math.max(0, Math.min(255, b0 + ((x + y) * 64) / (w + h) + noise));
      }
    }
    const file = path.join(dir, `class_${i % 10}`, `${i}.jpg`);
    await sharp(pixels, { raw: { width: w, height: h, channels: 3 } }).jpeg({ quality: 90 }).toFile(file);
    files.push(file);
  }
  return files;
}
