/**
 * @file Benchmark of the evaluation path, each measurement in its own child process (so its peak RSS is
 * its own), with reference implementations measured in the same run where Debian's python3 has them
 * (python3-faiss, python3-sklearn, python3-torch, python3-torchvision; dmlkit itself never runs Python;
 * BENCH_PYTHON=/path/to/python3 picks another interpreter).
 *
 *   npx tsx scripts/bench/bench-eval.ts [--mode vectors] [--n 60000] [--dim 512] [--classes 1000]
 *   npx tsx scripts/bench/bench-eval.ts --mode images [--images 2000 | --folder DIR] [--model m.onnx]
 *                                 [--workers N] [--device auto] [--batch-size 32] [--threads N] [--normalization host|device]
 *   npx tsx scripts/bench/bench-eval.ts --mode nmi
 *
 * - `vectors`: exact Recall@K on synthetic embeddings (`classes` Gaussian centres + noise, L2-normalised;
 *   chunked Gemm + TopK streamed into the metrics) against a naive JavaScript loop (a sample of queries,
 *   extrapolated), and the same search with the score rows read into MRR and mAP (`dml eval`'s search); k-means with K = 1,000 (20 iterations, and the default to convergence) against faiss
 *   (20 iterations); and a whole NMI+ curve (K = 100, 200, 500, 1,000, 3,000, the 1x..30x of a 100-label
 *   set, default settings) against one faiss k-means (20 iterations) at K = 3,000, with faiss at every
 *   count beside it. k-means runs on real data, Fashion-MNIST pixels (L2-normalised; 60,000 x 784 training
 *   images, 10,000 x 784 test images; Debian's dataset-fashion-mnist), because Gaussian blobs converge
 *   in a handful of iterations and would flatter a convergence test; without the dataset it falls back
 *   to the synthetic vectors and says so.
 * - `images`: a folder of JPEGs (generated: `images` 480x320 JPEGs in 10 class folders) through the
 *   eval transform (resize 256, centre crop 224, RGB, ImageNet normalisation): decode-only throughput in
 *   this process and in the decode pool, inference-only throughput of the model, end-to-end embedding
 *   (`embedItems`), then search and k-means on the embeddings; PyTorch's DataLoader with the same
 *   transform and the same cheap model as the reference. The default model is a cheap embedder (16x16
 *   stride-16 convolution to 32 channels, ReLU, global average pooling, linear to 64, L2), so the
 *   pipeline, not the model, is what is measured; `--model` runs a real one (then no PyTorch model row).
 * - `nmi`: NMI of dmlkit's k-means against scikit-learn's and faiss's on real data (Fashion-MNIST test
 *   pixels, L2-normalised, from Debian's dataset-fashion-mnist), three seeds each, K = 10, 100, 300.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cheapModel } from './cheap-embedder.js';
import { writeSyntheticJpegs } from './synthetic-jpegs.js';
import { readIdxFile } from '../../lib/data/idx-reader.js';
import { openDataset } from '../../lib/data/open-dataset.js';
import { DECODE_PREFETCH_BATCHES, OnnxEmbedder } from '../../lib/embed/embedder.js';
import type { EmbeddingSet } from '../../lib/embed/embedding-set.js';
import { DEFAULT_CLUSTER_COUNTS, resolveClusterCounts } from '../../lib/eval/cluster-counts.js';
import { evaluateEmbeddings } from '../../lib/eval/evaluate-embeddings.js';
import { loadImageBatch } from '../../lib/image/batch-loader.js';
import { defaultDecodeWorkers, ImageDecodePool } from '../../lib/image/decode-pool.js';
import { normalizedMutualInformation } from '../../lib/metrics/clustering.js';
import { kmeans, kmeansSweep } from '../../lib/metrics/kmeans.js';
import { encodeLabels } from '../../lib/metrics/labels.js';
import { RetrievalMetricsAccumulator } from '../../lib/metrics/retrieval.js';
import { FullRankingAccumulator } from '../../lib/metrics/full-ranking.js';
import type { DeviceChoice, NormalizationPlace } from '../../lib/onnx/devices.js';
import { openSessionRunner } from '../../lib/onnx/session-runner.js';
import { exactSearch } from '../../lib/search/exact.js';
import { Rng } from '../../lib/util/rng.js';

type Args = Record<string, string>;
type Result = Record<string, unknown>;

const self = fileURLToPath(import.meta.url);
/** The repository root: the nearest folder above this script holding package.json (this file runs from scripts/bench/ or dist/scripts/bench/). */
const root = ((): string => {
  let dir = path.dirname(self);
  while (!existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
})();
/** The reference Python (Debian's by default; BENCH_PYTHON names another, e.g. a GPU machine's PyTorch environment). */
const PYTHON = process.env['BENCH_PYTHON'] ?? '/usr/bin/python3';
const KS = [1, 2, 4, 8];

function parseArgs(argv: string[]): Args {
  const args: Args = {};
  for (let i = 0; i < argv.length; i += 2) args[(argv[i] as string).replace(/^--/, '')] = argv[i + 1] as string;
  return args;
}

const num = (a: Args, key: string, fallback: number): number => (a[key] !== undefined ? Number(a[key]) : fallback);

/** `classes` Gaussian centres + noise, L2-normalised; labels = centre index. */
function clusteredSet(n: number, dim: number, classes: number): EmbeddingSet {
  const rng = new Rng(7);
  const centres = Float32Array.from({ length: classes * dim }, () => rng.nextGaussian());
  const vectors = new Float32Array(n * dim);
  const labels: string[] = [];
  for (let i = 0; i < n; i++) {
    const c = i % classes;
    let norm = 0;
    for (let j = 0; j < dim; j++) {
      const v = (centres[c * dim + j] as number) + 1.2 * rng.nextGaussian();
      vectors[i * dim + j] = v;
      norm += v * v;
    }
    const inv = 1 / Math.sqrt(norm);
    for (let j = 0; j < dim; j++) vectors[i * dim + j] = (vectors[i * dim + j] as number) * inv;
    labels.push(String(c));
  }
  return { vectors, count: n, dim, labels, ids: labels.map((_, i) => String(i)) };
}

const rate = (count: number, start: number): number => count / ((performance.now() - start) / 1000);

/**
 * CPU seconds used so far by this process (all its threads) and by the child processes it has reaped
 * (the decode processes, once their pool is closed): /proc/self/stat's cutime and cstime. Without
 * /proc (not Linux), this process's own only.
 */
function cpuSeconds(): number {
  const own = process.cpuUsage();
  let children = 0;
  try {
    // Fields after the command name (which may hold spaces): cutime and cstime are the 16th and 17th fields of the line.
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ').at(-1)?.split(' ') ?? [];
    children = (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS;
  } catch {
    children = 0;
  }
  return (own.user + own.system) / 1e6 + (Number.isFinite(children) ? children : 0);
}

/** Linux's USER_HZ, the unit of /proc/self/stat's times (100 on every Linux build in use). */
const CLOCK_TICKS = 100;

/** Runs one measurement; prints its JSON result on stdout. */
async function child(kind: string, a: Args): Promise<Result> {
  const start = performance.now();
  const seconds = (): number => (performance.now() - start) / 1000;
  if (kind === 'exact-recall' || kind === 'exact-full-ranking' || kind === 'naive-recall') {
    const n = num(a, 'n', 60000);
    const dim = num(a, 'dim', 512);
    const set = clusteredSet(n, dim, num(a, 'classes', 1000));
    const t0 = performance.now();
    if (kind === 'exact-recall') {
      const labels = encodeLabels(set.labels, set.labels);
      const selfIndex = Int32Array.from({ length: n }, (_, i) => i);
      const acc = new RetrievalMetricsAccumulator({ queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes, recallK: KS, querySelfIndex: selfIndex });
      for await (const block of exactSearch(set.vectors, n, set.vectors, n, dim, { k: acc.requiredNeighbours, selfIndex })) acc.add(block);
      return { seconds: (performance.now() - t0) / 1000, recall1: acc.result().recall[1], neighbours: acc.requiredNeighbours };
    }
    if (kind === 'exact-full-ranking') {
      const labels = encodeLabels(set.labels, set.labels);
      const selfIndex = Int32Array.from({ length: n }, (_, i) => i);
      const acc = new RetrievalMetricsAccumulator({ queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes, recallK: KS, querySelfIndex: selfIndex });
      const full = new FullRankingAccumulator({ queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes, querySelfIndex: selfIndex });
      for await (const block of exactSearch(set.vectors, n, set.vectors, n, dim, { k: acc.requiredNeighbours, selfIndex, withScores: true })) {
        acc.add(block);
        full.add(block.queryOffset, block.queryCount, block.scores as Float32Array);
      }
      return { seconds: (performance.now() - t0) / 1000, recall1: acc.result().recall[1], map: full.result().map };
    }
    // naive-recall: plain JS: for each sampled query, all N dot products with a running top-8 (insertion), no matrix.
    const sample = num(a, 'naive-queries', 200);
    const topScore = new Float64Array(8);
    for (let q = 0; q < sample; q++) {
      topScore.fill(-Infinity);
      for (let g = 0; g < n; g++) {
        if (g === q) continue;
        let s = 0;
        for (let j = 0; j < dim; j++) s += (set.vectors[q * dim + j] as number) * (set.vectors[g * dim + j] as number);
        if (s <= (topScore[7] as number)) continue;
        let p = 7;
        while (p > 0 && s > (topScore[p - 1] as number)) {
          topScore[p] = topScore[p - 1] as number;
          p--;
        }
        topScore[p] = s;
      }
    }
    return { seconds: ((performance.now() - t0) / 1000) * (n / sample), sampledQueries: sample };
  }
  if (kind === 'kmeans-20' || kind === 'kmeans-default') {
    const data = await kmeansData(a, 'train');
    const options = kind === 'kmeans-20' ? { maxIterations: 20, tolerance: 0 } : {};
    const t0 = performance.now();
    const r = await kmeans(data.vectors, data.count, data.dim, { k: 1000, seed: 0, ...options });
    return { seconds: (performance.now() - t0) / 1000, inertia: r.inertia, iterations: r.iterationsRun };
  }
  if (kind === 'curve') {
    const data = await kmeansData(a, 't10k');
    const labels = data.labels;
    const counts = resolveClusterCounts(DEFAULT_CLUSTER_COUNTS, 100, data.count);
    const t0 = performance.now();
    const results = await kmeansSweep(data.vectors, data.count, data.dim, counts, { seed: 0 });
    return {
      seconds: (performance.now() - t0) / 1000,
      points: results.map((r) => ({ k: r.k, iterations: r.iterationsRun, nmi: normalizedMutualInformation(labels, r.assignments) })),
    };
  }
  if (kind === 'nmi') {
    const { vectors, labels } = await fashionMnistPixels();
    const rows: Result[] = [];
    for (const k of [10, 100, 300]) {
      for (const seed of [0, 1, 2]) {
        const t0 = performance.now();
        const r = await kmeans(vectors, labels.length, 784, { k, seed });
        rows.push({ k, seed, nmi: normalizedMutualInformation(labels, r.assignments), inertia: r.inertia, iterations: r.iterationsRun, seconds: (performance.now() - t0) / 1000 });
      }
    }
    return { rows };
  }
  // Image measurements.
  const folder = a['folder'] as string;
  const workers = num(a, 'workers', defaultDecodeWorkers());
  const manifest = await openDataset(`folder:${folder}`);
  const items = manifest.items;
  const embedder = await OnnxEmbedder.open(a['model'] as string, {
    device: (a['device'] ?? 'auto') as DeviceChoice,
    normalization: (a['normalization'] ?? 'host') as NormalizationPlace,
    batchSize: num(a, 'batch-size', 32),
    ...(a['threads'] !== undefined ? { threads: num(a, 'threads', 1) } : {}),
  });
  const p = embedder.preprocessing;
  const batchSize = embedder.batchSize;
  const t0 = performance.now();
  const cpu0 = cpuSeconds();
  /** CPU milliseconds per image since t0, of this process and of its decode processes (reaped by then). */
  const cpuPerImage = (count = items.length): number => ((cpuSeconds() - cpu0) * 1000) / count;
  try {
    if (kind === 'decode-inprocess') {
      // One batch array, filled batch after batch, as embedItems does.
      const output = new Float32Array(batchSize * p.channels * p.height * p.width);
      for (let s = 0; s < items.length; s += batchSize) await loadImageBatch(items.slice(s, s + batchSize).map((it) => it.source), p, { output });
      return { imagesPerSecond: rate(items.length, t0), cpuMsPerImage: cpuPerImage() };
    }
    if (kind === 'decode-pool') {
      // Timed from the pool's start, as embedItems starts one; batches queued as embedItems queues them:
      // the one being consumed plus DECODE_PREFETCH_BATCHES ahead.
      const pool = await ImageDecodePool.start({ workers, preprocessing: p });
      const startSeconds = (performance.now() - t0) / 1000;
      try {
        const t1 = t0;
        // Batch arrays circulate as in embedItems: each is filled again once its batch was consumed.
        const spare: Float32Array[] = [];
        const batchLength = batchSize * p.channels * p.height * p.width;
        const queue: Array<Promise<{ data: Float32Array }>> = [];
        for (let s = 0; s < items.length || queue.length > 0; s += batchSize) {
          if (s < items.length) queue.push(pool.loadBatch(items.slice(s, s + batchSize).map((it) => it.source), { output: spare.pop() ?? new Float32Array(batchLength) }));
          if (queue.length > DECODE_PREFETCH_BATCHES || s + batchSize >= items.length) spare.push(new Float32Array((await queue.shift())?.data.buffer as ArrayBuffer));
        }
        const imagesPerSecond = rate(items.length, t1);
        await pool.close();
        return { imagesPerSecond, workers, startSeconds, cpuMsPerImage: cpuPerImage() };
      } finally {
        await pool.close();
      }
    }
    if (kind === 'infer') {
      // The model as embedItems runs it: on its session thread, each batch's array handed over and back
      // (embedTensor would copy the batch to that thread, which embedItems never does).
      const per = p.channels * p.height * p.width;
      const rng = new Rng(5);
      let batch: Float32Array = Float32Array.from({ length: batchSize * per }, () => rng.nextGaussian());
      const session = await openSessionRunner(a['model'] as string, {
        device: (a['device'] ?? 'auto') as DeviceChoice,
        spinning: false,
        ...(a['threads'] !== undefined ? { threads: num(a, 'threads', 1) } : {}),
      });
      const dims = p.layout === 'NCHW' ? [batchSize, p.channels, p.height, p.width] : [batchSize, p.height, p.width, p.channels];
      const inputName = embedder.signature.inputName;
      const run = async (): Promise<void> => {
        batch = ((await session.run({ [inputName]: { data: batch, dims } }, [embedder.signature.outputName], { transferInputs: true })).inputs[inputName] as { data: Float32Array }).data;
      };
      try {
        await run(); // warm-up
        const t1 = performance.now();
        const c1 = cpuSeconds();
        const runs = Math.max(3, Math.ceil(items.length / batchSize));
        for (let r = 0; r < runs; r++) await run();
        return { imagesPerSecond: rate(runs * batchSize, t1), provider: session.provider, cpuMsPerImage: ((cpuSeconds() - c1) * 1000) / (runs * batchSize) };
      } finally {
        await session.release();
      }
    }
    if (kind === 'end-to-end-inprocess') {
      await embedder.embedItems(items, { workers: 0 });
      return { imagesPerSecond: rate(items.length, t0), cpuMsPerImage: cpuPerImage() };
    }
    if (kind === 'end-to-end') {
      const { set } = await embedder.embedItems(items, { workers });
      const embedSeconds = seconds();
      const cpuMsPerImage = cpuPerImage();
      const kmeansTimes: number[] = [];
      let last = performance.now();
      const evaluation = await evaluateEmbeddings(set, null, {
        ks: KS,
        clusterCounts: DEFAULT_CLUSTER_COUNTS,
        clusterSet: 'union',
        index: { kind: 'exact', chunkSize: 512 },
        kmeans: { seed: 0 },
        onProgress: (stage) => {
          if (stage !== 'k-means') {
            last = performance.now();
            return;
          }
          kmeansTimes.push((performance.now() - last) / 1000);
          last = performance.now();
        },
      });
      return {
        imagesPerSecond: items.length / embedSeconds,
        cpuMsPerImage,
        embedSeconds,
        provider: embedder.provider,
        normalization: embedder.normalization,
        workers,
        searchSeconds: evaluation.timings.searchSeconds,
        clusteringSeconds: evaluation.timings.clusteringSeconds,
        kmeansPerK: evaluation.metrics.nmiCurve.map((pt, i) => ({ k: pt.clusters, iterations: pt.iterations, seconds: kmeansTimes[i] })),
        recall1: evaluation.metrics.recall['1'],
      };
    }
  } finally {
    await embedder.release();
  }
  throw new Error(`unknown measurement ${kind}`);
}

const FASHION_MNIST = '/usr/share/datasets/fashion-mnist';

/** Fashion-MNIST images of one split as L2-normalised 784-d pixel rows, with their labels. */
async function fashionMnistPixels(split: 'train' | 't10k' = 't10k'): Promise<{ vectors: Float32Array; labels: Int32Array }> {
  const images = await readIdxFile(path.join(FASHION_MNIST, `${split}-images-idx3-ubyte.gz`));
  const labelFile = await readIdxFile(path.join(FASHION_MNIST, `${split}-labels-idx1-ubyte.gz`));
  const n = labelFile.data.length;
  const vectors = new Float32Array(n * 784);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = 0; j < 784; j++) s += ((images.data[i * 784 + j] as number) / 255) ** 2;
    const inv = 1 / Math.sqrt(s);
    for (let j = 0; j < 784; j++) vectors[i * 784 + j] = ((images.data[i * 784 + j] as number) / 255) * inv;
  }
  return { vectors, labels: Int32Array.from(labelFile.data) };
}

interface KMeansData {
  vectors: Float32Array;
  count: number;
  dim: number;
  labels: Int32Array;
  name: string;
}

/** The k-means benchmark data: Fashion-MNIST pixels of `split`, or synthetic vectors without the dataset. */
async function kmeansData(a: Args, split: 'train' | 't10k'): Promise<KMeansData> {
  if (existsSync(path.join(FASHION_MNIST, `${split}-images-idx3-ubyte.gz`))) {
    const { vectors, labels } = await fashionMnistPixels(split);
    return { vectors, count: labels.length, dim: 784, labels, name: `Fashion-MNIST ${split} pixels` };
  }
  const set = clusteredSet(split === 'train' ? num(a, 'n', 60000) : 10000, num(a, 'dim', 512), split === 'train' ? num(a, 'classes', 1000) : 100);
  return { vectors: set.vectors, count: set.count, dim: set.dim, labels: encodeLabels(set.labels, []).queryCodes, name: 'synthetic Gaussian blobs (no Fashion-MNIST)' };
}

function runChild(kind: string, a: Args): Result & { peakRssMiB: number } {
  const flags = Object.entries(a).flatMap(([k, v]) => [`--${k}`, v]);
  // Children run the way this process runs: built JavaScript under plain node, or TypeScript under tsx.
  const out = execFileSync(process.execPath, [...process.execArgv, self, ...flags, '--child', kind], { encoding: 'utf8', maxBuffer: 1 << 26, cwd: root });
  return JSON.parse(out.trim().split('\n').at(-1) as string) as Result & { peakRssMiB: number };
}

/** Runs a reference Python script; null (with the reason on stderr) when python3 or its packages are missing. */
function runPython(script: string, args: string[]): string | null {
  if (!existsSync(PYTHON)) return null;
  try {
    return execFileSync(PYTHON, [path.join(root, 'scripts/reference', script), ...args], { encoding: 'utf8', maxBuffer: 1 << 24, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    process.stderr.write(`reference ${script} not run: ${String((err as { stderr?: string }).stderr ?? err).split('\n').filter((l) => l !== '').at(-1)}\n`);
    return null;
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

const fmt = (x: unknown, digits = 1): string => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : '-');

async function vectorsMode(a: Args, tmp: string): Promise<void> {
  const n = num(a, 'n', 60000);
  const dim = num(a, 'dim', 512);
  const classes = num(a, 'classes', 1000);
  const [big, small] = [await kmeansData(a, 'train'), await kmeansData(a, 't10k')];
  console.log(`# bench-eval vectors: search on N = ${n}, D = ${dim}, ${classes} Gaussian classes; k-means on ${big.name} (${big.count} x ${big.dim}); NMI+ curve on ${small.name} (${small.count} x ${small.dim}); ${os.availableParallelism()} cores; node ${process.version}`);
  const exact = runChild('exact-recall', a);
  const fullRanking = runChild('exact-full-ranking', a);
  const naive = runChild('naive-recall', a);
  const file = path.join(tmp, 'vectors.f32');
  const curveFile = path.join(tmp, 'curve.f32');
  await writeFile(file, big.vectors);
  await writeFile(curveFile, small.vectors);
  // dmlkit and faiss alternate, `repeats` times each; medians (timings vary about 2x on this machine).
  const repeats = num(a, 'repeats', 3);
  const secondsOf = (text: string | null): number => (text === null ? Number.NaN : (JSON.parse(text.trim().split('\n').at(-1) as string) as { seconds: number }).seconds);
  const km20Runs: Array<Result & { peakRssMiB: number }> = [];
  const faissRuns: number[] = [];
  const curveRuns: Array<Result & { peakRssMiB: number }> = [];
  const faissLargestRuns: number[] = [];
  const largest = Math.max(...resolveClusterCounts(DEFAULT_CLUSTER_COUNTS, 100, small.count));
  for (let r = 0; r < repeats; r++) {
    km20Runs.push(runChild('kmeans-20', a));
    faissRuns.push(secondsOf(runPython('faiss_kmeans.py', [file, String(big.dim), '1000', '20'])));
    curveRuns.push(runChild('curve', a));
    faissLargestRuns.push(secondsOf(runPython('faiss_kmeans.py', [curveFile, String(small.dim), String(largest), '20'])));
  }
  const byTime = (runs: Array<Result & { peakRssMiB: number }>): Result & { peakRssMiB: number } =>
    [...runs].sort((x, y) => (x['seconds'] as number) - (y['seconds'] as number))[Math.floor(runs.length / 2)] as Result & { peakRssMiB: number };
  const km20 = byTime(km20Runs);
  const curve = byTime(curveRuns);
  const faissSeconds = median(faissRuns);
  const faissLargest = median(faissLargestRuns);
  const kmDefault = runChild('kmeans-default', a);
  const counts = (curve['points'] as Array<{ k: number; iterations: number; nmi: number }>).map((p) => p.k);
  const faissCurve = runPython('faiss_kmeans.py', [curveFile, String(small.dim), counts.join(','), '20']);
  const faissPoints = faissCurve === null ? [] : faissCurve.trim().split('\n').map((l) => JSON.parse(l) as { k: number; seconds: number });
  console.log(`dmlkit k-means K=1000 runs: ${km20Runs.map((x) => fmt(x['seconds'])).join(', ')} s; faiss: ${faissRuns.map((x) => fmt(x)).join(', ')} s`);
  console.log(`dmlkit NMI+ curve runs: ${curveRuns.map((x) => fmt(x['seconds'])).join(', ')} s; faiss at K=${largest}: ${faissLargestRuns.map((x) => fmt(x)).join(', ')} s\n`);

  console.log('| measurement | wall s | peak RSS MiB | note |');
  console.log('| --- | ---: | ---: | --- |');
  const row = (name: string, s: unknown, rss: unknown, note: string): void => console.log(`| ${name} | ${fmt(s)} | ${fmt(rss, 0)} | ${note} |`);
  row('exact Recall@K + MAP@R (chunked Gemm+TopK, streamed)', exact['seconds'], exact.peakRssMiB, `${exact['neighbours']} neighbours per query`);
  row('the same with MRR and mAP (score rows read, as dml eval)', fullRanking['seconds'], fullRanking.peakRssMiB, `${fmt((fullRanking['seconds'] as number) / (exact['seconds'] as number), 1)}x the search alone`);
  row(`naive JS Recall@K (${naive['sampledQueries']} queries, extrapolated)`, naive['seconds'], naive.peakRssMiB, `${fmt((naive['seconds'] as number) / (exact['seconds'] as number), 0)}x the exact search`);
  row(`k-means K=1000, at most 20 iterations, ${big.count} x ${big.dim} (median of ${repeats})`, km20['seconds'], km20.peakRssMiB, `${km20['iterations']} iterations; ${fmt((km20['seconds'] as number) / faissSeconds, 2)}x faiss`);
  row('faiss k-means K=1000, 20 iterations (reference, same vectors)', faissSeconds, Number.NaN, Number.isNaN(faissSeconds) ? 'not run' : 'python3-faiss');
  row(`k-means K=1000, default (to convergence)`, kmDefault['seconds'], kmDefault.peakRssMiB, `${kmDefault['iterations']} iterations; ${fmt((kmDefault['seconds'] as number) / faissSeconds, 2)}x faiss (20 iterations)`);
  row(`NMI+ curve K = ${counts.join(', ')} on ${small.count} x ${small.dim} (default settings, median of ${repeats})`, curve['seconds'], curve.peakRssMiB, `${fmt((curve['seconds'] as number) / faissLargest, 2)}x one faiss run at K=${Math.max(...counts)}`);
  console.log('\nNMI+ curve points (dmlkit: iterations to convergence; faiss: 20 iterations, seconds):');
  for (const p of curve['points'] as Array<{ k: number; iterations: number; nmi: number }>) {
    const f = faissPoints.find((q) => q.k === p.k);
    console.log(`  K ${p.k}: ${p.iterations} iterations, NMI ${fmt(100 * p.nmi, 2)}; faiss ${fmt(f?.seconds, 2)} s`);
  }
}

async function imagesMode(a: Args, tmp: string): Promise<void> {
  let folder = a['folder'];
  if (folder === undefined) {
    folder = path.join(tmp, 'images');
    await writeSyntheticJpegs(folder, num(a, 'images', 2000));
  }
  let modelPath = a['model'];
  const cheap = cheapModel();
  const weightsFile = path.join(tmp, 'weights.json');
  if (modelPath === undefined) {
    modelPath = path.join(tmp, 'cheap.onnx');
    await writeFile(modelPath, cheap.bytes);
    await writeFile(weightsFile, JSON.stringify(cheap.weights));
  }
  const args: Args = { ...a, folder, model: modelPath };
  const workers = num(a, 'workers', defaultDecodeWorkers());
  console.log(`# bench-eval images: ${folder}, model ${a['model'] ?? 'cheap embedder (conv 16x16/16 -> 32, GAP, linear 64)'}, ${workers} decode processes, ${os.availableParallelism()} cores; node ${process.version}`);
  // Decode-only and end-to-end runs alternate with one PyTorch run (one pass of its decode-only and of
  // its end-to-end loop), `repeats` times each; medians by throughput (timings vary about 2x on a shared
  // machine, so single runs can put either ahead).
  const repeats = num(a, 'repeats', 3);
  const runs: Record<string, Array<Result & { peakRssMiB: number }>> = { inprocess: [], pool: [], e2e: [], e2eInProcess: [] };
  const torchRuns: Array<{ decodeRuns: number[]; endToEndRuns: number[]; decodeCpuMs: number[]; endToEndCpuMs: number[] }> = [];
  const torchArgs = [folder, weightsFile, String(workers), String(num(a, 'batch-size', 32)), '1'];
  for (let r = 0; r < repeats; r++) {
    runs['inprocess']?.push(runChild('decode-inprocess', args));
    runs['pool']?.push(runChild('decode-pool', args));
    runs['e2e']?.push(runChild('end-to-end', args));
    runs['e2eInProcess']?.push(runChild('end-to-end-inprocess', args));
    const torch = a['model'] === undefined ? runPython('torch_pipeline.py', torchArgs) : null;
    if (torch !== null) torchRuns.push(JSON.parse(torch.trim()) as (typeof torchRuns)[number]);
  }
  const medianRun = (name: string): Result & { peakRssMiB: number } => {
    const list = [...(runs[name] ?? [])].sort((x, y) => (x['imagesPerSecond'] as number) - (y['imagesPerSecond'] as number));
    return list[Math.floor(list.length / 2)] as Result & { peakRssMiB: number };
  };
  const [inprocess, pool, e2e, e2eInProcess] = [medianRun('inprocess'), medianRun('pool'), medianRun('e2e'), medianRun('e2eInProcess')];
  const infer = runChild('infer', args);
  for (const [name, list] of Object.entries(runs)) console.log(`${name} runs: ${list.map((x) => fmt(x['imagesPerSecond'], 0)).join(', ')} images/s; CPU ${list.map((x) => fmt(x['cpuMsPerImage'], 2)).join(', ')} ms per image`);
  const torchDecode = torchRuns.flatMap((t) => t.decodeRuns);
  const torchEndToEnd = torchRuns.flatMap((t) => t.endToEndRuns);
  if (torchRuns.length > 0) {
    console.log(`PyTorch decode runs: ${torchDecode.map((x) => fmt(x, 0)).join(', ')} images/s; CPU ${torchRuns.flatMap((t) => t.decodeCpuMs).map((x) => fmt(x, 2)).join(', ')} ms per image`);
    console.log(`PyTorch end-to-end runs: ${torchEndToEnd.map((x) => fmt(x, 0)).join(', ')} images/s; CPU ${torchRuns.flatMap((t) => t.endToEndCpuMs).map((x) => fmt(x, 2)).join(', ')} ms per image`);
  }
  const decodeRate = pool['imagesPerSecond'] as number;
  console.log(`\n| stage (median of ${repeats}) | images/s | CPU ms per image | peak RSS MiB | note |`);
  console.log('| --- | ---: | ---: | ---: | --- |');
  const row = (name: string, run: Result & { peakRssMiB?: number }, note: string): void =>
    console.log(`| ${name} | ${fmt(run['imagesPerSecond'], 0)} | ${fmt(run['cpuMsPerImage'], 2)} | ${fmt(run.peakRssMiB, 0)} | ${note} |`);
  row('decode only, in process (sharp, 4 in flight)', inprocess, '');
  row(`decode only, ${workers} decode processes`, pool, `parent's RSS; includes starting them (${fmt(pool['startSeconds'], 2)} s)`);
  row(`inference only (${infer['provider']})`, infer, 'random batches, handed to the session thread as embedItems does');
  row(`end to end (embedItems, ${e2e['workers']} processes, ${e2e['provider']}, normalised on the ${e2e['normalization']})`, e2e, `${fmt((100 * (e2e['imagesPerSecond'] as number)) / decodeRate, 0)}% of decode only`);
  row('end to end, decoding in process (--workers 0)', e2eInProcess, `${fmt((100 * (e2eInProcess['imagesPerSecond'] as number)) / (inprocess['imagesPerSecond'] as number), 0)}% of decode only in process`);
  if (torchRuns.length > 0) {
    const torchCpu = (key: 'decodeCpuMs' | 'endToEndCpuMs'): number => median(torchRuns.flatMap((t) => t[key]));
    row(`PyTorch DataLoader decode only (${workers} workers, PIL)`, { imagesPerSecond: median(torchDecode), cpuMsPerImage: torchCpu('decodeCpuMs') }, 'reference');
    row('PyTorch DataLoader + the same model', { imagesPerSecond: median(torchEndToEnd), cpuMsPerImage: torchCpu('endToEndCpuMs') }, `reference; dmlkit end to end is ${fmt((e2e['imagesPerSecond'] as number) / median(torchEndToEnd), 2)}x its rate`);
  }
  console.log(`\nAfter embedding: exact search ${fmt(e2e['searchSeconds'], 2)} s; k-means (NMI+ curve) ${fmt(e2e['clusteringSeconds'], 2)} s: ${(e2e['kmeansPerK'] as Array<{ k: number; iterations: number; seconds: number }>).map((p) => `K ${p.k} ${fmt(p.seconds, 2)} s (${p.iterations} it)`).join(', ')} (the first K's time includes the seeding, drawn once at the largest K)`);
}

async function nmiMode(tmp: string): Promise<void> {
  console.log(`# bench-eval nmi: Fashion-MNIST test pixels (10,000 x 784, L2-normalised), 10 labels; node ${process.version}`);
  const ours = runChild('nmi', {})['rows'] as Array<{ k: number; seed: number; nmi: number; inertia: number; iterations: number }>;
  const { vectors, labels } = await fashionMnistPixels();
  const [file, labelFile] = [path.join(tmp, 'fm.f32'), path.join(tmp, 'fm.i32')];
  await writeFile(file, vectors);
  await writeFile(labelFile, labels);
  const sklearn = runPython('sklearn_kmeans.py', [file, '784', '10,100,300', labelFile]);
  const faiss = [0, 1, 2].map((seed) => runPython('faiss_kmeans.py', [file, '784', '10,100,300', '25', labelFile, String(seed + 1)]));
  console.log('| K | dmlkit NMI (seeds 0-2) | scikit-learn NMI (seeds 0-2) | faiss NMI (3 seeds) |');
  console.log('| ---: | --- | --- | --- |');
  const parse = (text: string | null): Array<{ k: number; nmi: number }> => (text === null ? [] : text.trim().split('\n').map((l) => JSON.parse(l) as { k: number; nmi: number }));
  const sk = parse(sklearn);
  const fa = faiss.flatMap(parse);
  for (const k of [10, 100, 300]) {
    const cell = (rows: Array<{ k: number; nmi: number }>): string => rows.filter((r) => r.k === k).map((r) => fmt(100 * r.nmi, 2)).join(', ') || '-';
    console.log(`| ${k} | ${cell(ours)} | ${cell(sk)} | ${cell(fa)} |`);
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const c = argv.indexOf('--child');
  if (c >= 0) {
    const kind = argv[c + 1] as string;
    const result = await child(kind, parseArgs(argv.filter((_, i) => i !== c && i !== c + 1)));
    process.stdout.write(`${JSON.stringify({ ...result, peakRssMiB: process.resourceUsage().maxRSS / 1024 })}\n`);
    return;
  }
  const a = parseArgs(argv);
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'dmlkit-bench-eval-'));
  try {
    const mode = a['mode'] ?? 'vectors';
    if (mode === 'vectors') await vectorsMode(a, tmp);
    else if (mode === 'images') await imagesMode(a, tmp);
    else if (mode === 'nmi') await nmiMode(tmp);
    else throw new Error(`--mode: expected vectors, images or nmi, got ${mode}`);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

await main();
