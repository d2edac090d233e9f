/**
 * What the eval transform of one JPEG file costs, stage by stage, against PIL's path for the same
 * transform: the two-step way (decode to raw pixels, then resize and crop: `decodeImageSource` +
 * `evalTransform`) against the one libvips pipeline of lib/image/eval-image.ts (`loadEvalImage`, same
 * bytes out), then what sharp alone costs to decode (raw pixels out), to decode and resize, and to
 * decode an 8x8 JPEG (the fixed cost of a sharp call), and `toTensor` (the normalisation):
 *
 *   npx tsx scripts/experiments/eval-image-cost.ts [--images 400] [--rounds 5]
 *
 * Generates `images` 480x320 JPEGs (scripts/bench/synthetic-jpegs.ts), then runs each way over them
 * one image at a time, alternating, `rounds` times; prints the medians of wall and CPU milliseconds per
 * image (this process, all its threads) for the transform to a 224x224 crop of the 256 shorter side,
 * RGB. Then the same files through PIL and torchvision (scripts/reference/pil_eval_cost.py: decode,
 * decode + resize, the whole eval transform with ToTensor and Normalize), where Debian's python3 has
 * them (BENCH_PYTHON names another interpreter). Set VIPS_CONCURRENCY=1 to keep libvips on one
 * worker thread, as PIL is.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import type { ImageSource } from '../../lib/data/manifest.js';
import { decodeImageSource } from '../../lib/image/decode.js';
import { loadEvalImage } from '../../lib/image/eval-image.js';
import { toTensor } from '../../lib/image/to-tensor.js';
import { evalTransform } from '../../lib/image/transform.js';
import { writeSyntheticJpegs } from '../bench/synthetic-jpegs.js';

function argument(flag: string, fallback: number): number {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const count = argument('--images', 400);
const rounds = argument('--rounds', 5);
const size = { height: 224, width: 224, resizeShorter: 256, channels: 3 as const };
const normalisation = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], layout: 'NCHW' as const };
const dir = mkdtempSync(path.join(os.tmpdir(), 'dml-eval-image-cost-'));
const files = await writeSyntheticJpegs(dir, count);
const sources: ImageSource[] = files.map((file) => ({ kind: 'file', path: file }));
const tiny = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#808080' } }).jpeg().toBuffer();
const crop = await loadEvalImage(sources[0] as ImageSource, size);
const tensor = new Float32Array(3 * 224 * 224);
sharp.cache(false);

const ways: Record<string, (source: ImageSource & { kind: 'file' }) => Promise<unknown>> = {
  'two steps (decodeImageSource + evalTransform)': async (source) => evalTransform(await decodeImageSource(source, { channels: 3 }), size),
  'one pipeline (loadEvalImage)': (source) => loadEvalImage(source, size),
  'sharp: decode to raw pixels': (source) => sharp(readFileSync(source.path)).raw().toBuffer(),
  'sharp: decode + resize to 384x256': (source) => sharp(readFileSync(source.path)).resize(384, 256, { kernel: 'linear', fit: 'fill' }).raw().toBuffer(),
  'sharp: an 8x8 JPEG (the fixed cost of a call)': () => sharp(tiny).raw().toBuffer(),
  'toTensor of a 224x224 crop': async () => toTensor(crop, normalisation, tensor),
};
const times: Record<string, { wall: number[]; cpu: number[] }> = {};
const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** The PIL rows, or null (with the reason) when python3, PIL or torchvision is missing. */
function pilRows(): Array<Record<string, number>> | null {
  const python = process.env['BENCH_PYTHON'] ?? '/usr/bin/python3';
  if (!existsSync(python)) return null;
  const list = path.join(dir, 'files.txt');
  writeFileSync(list, files.join('\n'));
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), '../reference/pil_eval_cost.py');
  try {
    const out = execFileSync(python, [script, list, String(rounds)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return out.trim().split('\n').map((line) => JSON.parse(line) as Record<string, number>);
  } catch (err) {
    console.log(`PIL reference not run: ${String((err as { stderr?: string }).stderr ?? err).trim().split('\n').at(-1)}`);
    return null;
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;
try {
  for (const run of Object.values(ways)) for (const source of sources.slice(0, 20)) await run(source as ImageSource & { kind: 'file' }); // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const [name, run] of Object.entries(ways)) {
      const [wall, cpu] = [performance.now(), cpuMs()];
      for (const source of sources) await run(source as ImageSource & { kind: 'file' });
      const entry = (times[name] ??= { wall: [], cpu: [] });
      entry.wall.push((performance.now() - wall) / count);
      entry.cpu.push((cpuMs() - cpu) / count);
    }
  }
  console.log(`${count} 480x320 JPEGs to 224x224 crops, one at a time, medians of ${rounds} rounds (ms per image):`);
  for (const [name, t] of Object.entries(times)) {
    console.log(`  ${name}: wall ${median(t.wall).toFixed(2)} (${t.wall.map((x) => x.toFixed(2)).join(', ')}), CPU ${median(t.cpu).toFixed(2)} (${t.cpu.map((x) => x.toFixed(2)).join(', ')})`);
  }
  const pil = pilRows();
  if (pil !== null) {
    console.log(`PIL and torchvision, the same files, one at a time (CPU ms per image, medians of ${pil.length} rounds):`);
    for (const stage of Object.keys(pil[0] ?? {})) {
      const values = pil.map((row) => row[stage] as number);
      console.log(`  ${stage}: CPU ${median(values).toFixed(2)} (${values.map((x) => x.toFixed(2)).join(', ')})`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
