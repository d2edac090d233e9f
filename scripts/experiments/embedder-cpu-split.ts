/**
 * Where `embedItems` spends its CPU with decode processes: the receiving process (its main thread,
 * session thread and garbage collector together) and each decode process, per image, besides the rate.
 *
 *   npx tsx scripts/experiments/embedder-cpu-split.ts [--folder DIR] [--model m.onnx] [--images 2000]
 *                                                     [--workers 2] [--rounds 2] [--threads N] [--normalization host|device]
 *
 * Without `--folder`, `images` generated 480x320 JPEGs (scripts/bench/synthetic-jpegs.ts); without
 * `--model`, bench-eval's cheap embedder (scripts/bench/cheap-embedder.ts), so that the pipeline, not
 * the model, is measured. Each round starts a decode pool, embeds every image through it and reads the
 * CPU time of this process (`process.cpuUsage`) and of each decode process (/proc/PID/stat, Linux
 * only) around the `embedItems` call. `--threads` sets the model's intra-op threads (onnxruntime's
 * default when absent).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDataset } from '../../lib/data/open-dataset.js';
import { OnnxEmbedder } from '../../lib/embed/embedder.js';
import { ImageDecodePool } from '../../lib/image/decode-pool.js';
import type { NormalizationPlace } from '../../lib/onnx/devices.js';
import { cheapModel } from '../bench/cheap-embedder.js';
import { writeSyntheticJpegs } from '../bench/synthetic-jpegs.js';

function argument(flag: string): string | undefined {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** CPU milliseconds process `pid` has used (user + system, from /proc; clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] as string).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * (1000 / 100);
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'dml-embedder-cpu-split-'));
try {
  let folder = argument('--folder');
  if (folder === undefined) {
    folder = path.join(tmp, 'images');
    await writeSyntheticJpegs(folder, Number(argument('--images') ?? 2000));
  }
  let model = argument('--model');
  if (model === undefined) {
    model = path.join(tmp, 'cheap.onnx');
    writeFileSync(model, cheapModel().bytes);
  }
  const threads = argument('--threads');
  const workers = Number(argument('--workers') ?? 2);
  const items = (await openDataset(`folder:${folder}`)).items;
  const embedder = await OnnxEmbedder.open(model, {
    device: 'cpu',
    batchSize: 32,
    normalization: (argument('--normalization') ?? 'host') as NormalizationPlace,
    ...(threads !== undefined ? { threads: Number(threads) } : {}),
  });
  try {
    for (let round = 0; round < Number(argument('--rounds') ?? 2); round++) {
      const pool = await ImageDecodePool.start({ workers, preprocessing: embedder.preprocessing });
      try {
        const children = pool.pids.map(cpuMsOf);
        const own = process.cpuUsage();
        const start = performance.now();
        await embedder.embedItems(items, { decodePool: pool });
        const wall = performance.now() - start;
        const used = process.cpuUsage(own);
        const perImage = (ms: number): string => (ms / items.length).toFixed(2);
        const childMs = pool.pids.map((pid, i) => cpuMsOf(pid) - (children[i] as number));
        console.log(
          `${((items.length / wall) * 1000).toFixed(0)} images/s; CPU ms per image: receiving process ${perImage((used.user + used.system) / 1000)}` +
            ` (system ${perImage(used.system / 1000)}), decode processes ${childMs.map(perImage).join(' + ')}`,
        );
      } finally {
        await pool.close();
      }
    }
  } finally {
    await embedder.release();
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
