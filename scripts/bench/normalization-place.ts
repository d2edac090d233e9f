/**
 * @file Where the embedder normalises a batch (`normalization`: host or device, lib/onnx/devices.ts),
 * checked and timed on one execution provider: the same images embedded both ways, alternating, rounds
 * times. Prints per way the median images/s end to end and the CPU milliseconds per image of this
 * process (the one that receives the decoded crops and, with `host`, normalises them: the bottleneck
 * with many decode processes), and checks that both ways give the same embeddings (exit 1 when any
 * value differs by more than 1e-6; on one provider the model's input is the same bytes both ways).
 *
 *   npx tsx scripts/bench/normalization-place.ts [--device auto|cpu|webgpu|cuda] [--images 2000 | --folder DIR]
 *                                               [--model m.onnx] [--workers N] [--rounds 3] [--batch-size 32]
 *
 * Without --folder: `images` generated 480x320 JPEGs (scripts/bench/synthetic-jpegs.ts); without
 * --model: the cheap embedder of scripts/bench/cheap-embedder.ts, so the pipeline is what is measured.
 * Workers: decode processes, default one per core.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openDataset } from '../../lib/data/open-dataset.js';
import { OnnxEmbedder } from '../../lib/embed/embedder.js';
import { defaultDecodeWorkers } from '../../lib/image/decode-pool.js';
import type { DeviceChoice, NormalizationPlace } from '../../lib/onnx/devices.js';
import { cheapModel } from './cheap-embedder.js';
import { writeSyntheticJpegs } from './synthetic-jpegs.js';

function argument(flag: string): string | undefined {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function positive(flag: string, fallback: number): number {
  const text = argument(flag);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`Expected a positive integer for ${flag} but received ${JSON.stringify(text)}`);
  return value;
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;

async function main(): Promise<void> {
  const device = (argument('--device') ?? 'auto') as DeviceChoice;
  const rounds = positive('--rounds', 3);
  const workers = argument('--workers') === '0' ? 0 : positive('--workers', defaultDecodeWorkers());
  const batchSize = positive('--batch-size', 32);
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'dml-normalization-place-'));
  try {
    let folder = argument('--folder');
    if (folder === undefined) {
      folder = path.join(tmp, 'images');
      await writeSyntheticJpegs(folder, positive('--images', 2000));
    }
    let model = argument('--model');
    if (model === undefined) {
      model = path.join(tmp, 'cheap.onnx');
      await writeFile(model, cheapModel().bytes);
    }
    const { items } = await openDataset(`folder:${folder}`);
    const places: NormalizationPlace[] = ['host', 'device'];
    const embedders = await Promise.all(places.map((normalization) => OnnxEmbedder.open(model as string, { device, normalization, batchSize })));
    try {
      console.log(`# ${items.length} images of ${folder}, model ${argument('--model') ?? 'the cheap embedder'}, ${embedders[0]?.provider}, ${workers} decode processes, ${os.availableParallelism()} cores, ${rounds} rounds`);
      const rates: Record<NormalizationPlace, number[]> = { host: [], device: [] };
      const cpu: Record<NormalizationPlace, number[]> = { host: [], device: [] };
      const vectors: Partial<Record<NormalizationPlace, Float32Array>> = {};
      for (let round = 0; round < rounds; round++) {
        for (const [i, place] of places.entries()) {
          const cpu0 = process.cpuUsage();
          const t0 = performance.now();
          const { set } = await (embedders[i] as OnnxEmbedder).embedItems(items, { workers });
          const seconds = (performance.now() - t0) / 1000;
          const used = process.cpuUsage(cpu0);
          rates[place].push(items.length / seconds);
          cpu[place].push((used.user + used.system) / 1000 / items.length);
          vectors[place] = set.vectors;
          console.log(`round ${round + 1}, ${place}: ${(items.length / seconds).toFixed(0)} images/s, this process ${((used.user + used.system) / 1000 / items.length).toFixed(2)} CPU ms per image`);
        }
      }
      let worst = 0;
      const host = vectors.host as Float32Array;
      const onDevice = vectors.device as Float32Array;
      for (let j = 0; j < host.length; j++) worst = Math.max(worst, Math.abs((host[j] as number) - (onDevice[j] as number)));
      const identical = Buffer.from(host.buffer, host.byteOffset, host.byteLength).equals(Buffer.from(onDevice.buffer, onDevice.byteOffset, onDevice.byteLength));
      console.log('\n| normalised on | images/s (median) | CPU ms per image, this process (median) |\n| --- | ---: | ---: |');
      for (const place of places) console.log(`| ${place} | ${median(rates[place]).toFixed(0)} | ${median(cpu[place]).toFixed(2)} |`);
      console.log(`\nembeddings: ${identical ? 'bit for bit the same' : `largest difference ${worst.toExponential(2)}`} (${host.length / (embedders[0]?.embeddingDim ?? 1)} x ${embedders[0]?.embeddingDim})`);
      if (worst > 1e-6) process.exitCode = 1;
    } finally {
      await Promise.all(embedders.map((e) => e.release()));
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

await main();
