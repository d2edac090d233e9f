/**
 * What the eval transform of one JPEG file costs, the two-step way (decode to raw pixels, then resize
 * and crop: `decodeImageSource` + `evalTransform`) against the one libvips pipeline of
 * lib/image/eval-image.ts (`loadEvalImage`), same bytes out:
 *
 *   npx tsx scripts/experiments/eval-image-cost.ts [--images 400] [--rounds 5]
 *
 * Generates `images` 480x320 JPEGs (scripts/bench/synthetic-jpegs.ts), then runs both ways
 * over them one image at a time, alternating, `rounds` times; prints the medians of wall and CPU
 * milliseconds per image (this process, all its threads) for the transform to a 224x224 crop of the
 * 256 shorter side, RGB.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ImageSource } from '../../lib/data/manifest.js';
import { decodeImageSource } from '../../lib/image/decode.js';
import { loadEvalImage } from '../../lib/image/eval-image.js';
import { evalTransform } from '../../lib/image/transform.js';
import { writeSyntheticJpegs } from '../bench/synthetic-jpegs.js';

function argument(flag: string, fallback: number): number {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const count = argument('--images', 400);
const rounds = argument('--rounds', 5);
const size = { height: 224, width: 224, resizeShorter: 256, channels: 3 as const };
const dir = mkdtempSync(path.join(os.tmpdir(), 'dml-eval-image-cost-'));
const sources: ImageSource[] = (await writeSyntheticJpegs(dir, count)).map((file) => ({ kind: 'file', path: file }));

const ways: Record<string, (source: ImageSource) => Promise<unknown>> = {
  'two steps (decodeImageSource + evalTransform)': async (source) => evalTransform(await decodeImageSource(source, { channels: 3 }), size),
  'one pipeline (loadEvalImage)': (source) => loadEvalImage(source, size),
};
const times: Record<string, { wall: number[]; cpu: number[] }> = {};
const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
try {
  for (const run of Object.values(ways)) for (const source of sources.slice(0, 20)) await run(source); // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const [name, run] of Object.entries(ways)) {
      const [wall, cpu] = [performance.now(), cpuMs()];
      for (const source of sources) await run(source);
      const entry = (times[name] ??= { wall: [], cpu: [] });
      entry.wall.push((performance.now() - wall) / count);
      entry.cpu.push((cpuMs() - cpu) / count);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;
console.log(`${count} 480x320 JPEGs to 224x224 crops, one at a time, medians of ${rounds} rounds (ms per image):`);
for (const [name, t] of Object.entries(times)) {
  console.log(`  ${name}: wall ${median(t.wall).toFixed(2)} (${t.wall.map((x) => x.toFixed(2)).join(', ')}), CPU ${median(t.cpu).toFixed(2)} (${t.cpu.map((x) => x.toFixed(2)).join(', ')})`);
}
