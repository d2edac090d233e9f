/**
 * @file Load benchmark of `dml serve` on loopback: p50 / p99 latency and throughput of `POST /search`
 * (raw PNG upload, k = 10) on a 50,000-item index at concurrency 1, 4 and 16 (autocannon), next to the
 * raw embed + search time of the same model and index measured in this process, in the same run.
 *
 *   npx tsx scripts/bench/bench-serve.ts [--data fashion-mnist:/usr/share/datasets/fashion-mnist | --synthetic]
 *                                  [--n 50000] [--requests 3000] [--seconds 20] [--concurrency 1,4,16]
 *                                  [--workers 1] [--raw 500]
 *
 * Gallery: the first n items of the dataset (Fashion-MNIST: the training images) embedded with
 * models/default.onnx through the embedding cache (.dml-cache/embeddings, so a rerun skips it), or
 * with `--synthetic` (or when the dataset is absent) n random unit vectors, which only changes what the
 * HNSW graph holds. Queries: 64 Fashion-MNIST test images from data/default as PNG bytes, which are
 * not in the gallery, cycled. Each concurrency level gets a warm-up of 200 requests, then runs until
 * `--requests` requests or `--seconds` seconds, whichever comes first. The server is a child process
 * (`dml serve --log-level warn`) started the way this script was (tsx or compiled), and stopped with
 * SIGTERM at the end. Raw embed + search: decode + preprocess (sharp), one onnxruntime run and one
 * HNSW search per image, one image at a time, `--raw` times.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import type { ImageSource } from '../../lib/data/manifest.js';
import { manifestHash, openDataset } from '../../lib/data/open-dataset.js';
import { embedItemsCached } from '../../lib/embed/cache.js';
import { OnnxEmbedder } from '../../lib/embed/embedder.js';
import type { EmbeddingSet } from '../../lib/embed/embedding-set.js';
import { normalizeRowsInPlace } from '../../lib/embed/normalize.js';
import { preprocessImageBytes } from '../../lib/image/image-bytes.js';
import { SearchIndexStore } from '../../lib/index-store/hnsw-store.js';
import { Rng } from '../../lib/util/rng.js';
import { DEFAULT_MODEL, ROOT, startServer } from './serve-process.js';

const MODEL = DEFAULT_MODEL;
const K = 10;

interface Args {
  data: string | null;
  n: number;
  requests: number;
  seconds: number;
  concurrency: number[];
  workers: number;
  raw: number;
}

function parseArgs(argv: string[]): Args {
  const get = (flag: string, fallback: string): string => {
    const i = argv.indexOf(flag);
    return i >= 0 ? (argv[i + 1] ?? fallback) : fallback;
  };
  return {
    data: argv.includes('--synthetic') ? null : get('--data', 'fashion-mnist:/usr/share/datasets/fashion-mnist'),
    n: Number(get('--n', '50000')),
    requests: Number(get('--requests', '3000')),
    seconds: Number(get('--seconds', '20')),
    concurrency: get('--concurrency', '1,4,16').split(',').map(Number),
    workers: Number(get('--workers', '1')),
    raw: Number(get('--raw', '500')),
  };
}

/** p-th percentile (nearest rank) of `values` in ms. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

const fmt = (ms: number): string => ms.toFixed(2);

/** The gallery: embedded dataset items, or random unit vectors. */
async function gallery(args: Args, embedder: OnnxEmbedder): Promise<{ set: EmbeddingSet; sources: ImageSource[]; what: string }> {
  if (args.data !== null) {
    try {
      const manifest = await openDataset(args.data, { warn: () => undefined });
      const items = manifest.items.slice(0, args.n);
      const started = performance.now();
      const { set, fromCache } = await embedItemsCached(embedder, items, await manifestHash({ ...manifest, items }), '.dml-cache/embeddings');
      const seconds = (performance.now() - started) / 1000;
      const what = `${set.count} items of ${args.data} embedded with models/default.onnx (${fromCache ? 'from the embedding cache' : `${seconds.toFixed(1)} s, ${(set.count / seconds).toFixed(0)} images/s`})`;
      return { set, sources: items.map((item) => item.source), what };
    } catch (err) {
      process.stderr.write(`${args.data} is not available (${(err as Error).message}); using synthetic vectors\n`);
    }
  }
  const dim = embedder.embeddingDim ?? 64;
  const rng = new Rng(50_000);
  const vectors = Float32Array.from({ length: args.n * dim }, () => rng.nextGaussian());
  normalizeRowsInPlace(vectors, args.n, dim, 'synthetic');
  const ids = Array.from({ length: args.n }, (_, i) => `synthetic/${i}`);
  const set = { vectors, count: args.n, dim, ids, labels: ids.map((_, i) => String(i % 10)) };
  return { set, sources: ids.map((id) => ({ kind: 'file', path: `${id}.png` })), what: `${args.n} random unit vectors (${dim}-d)` };
}

/** 64 query PNGs: Fashion-MNIST test images from data/default, 8 per class of the first 8 classes. */
async function queries(): Promise<Buffer[]> {
  const root = path.join(ROOT, 'data/default');
  const classes = (await readdir(root)).sort().slice(0, 8);
  const files = await Promise.all(classes.map(async (c) => (await readdir(path.join(root, c))).sort().slice(0, 8).map((f) => path.join(root, c, f))));
  return Promise.all(files.flat().map((f) => readFile(f)));
}


/**
 * One autocannon run of POST /search cycling through the query images. Latencies are taken from
 * autocannon's per-response times (hrtime, fractional ms) of 2xx answers, since its own histogram
 * rounds to whole milliseconds. `seconds` runs from the start to the last 2xx answer (autocannon
 * itself only stops at its next one-second tick).
 */
function load(url: string, bodies: Buffer[], connections: number, amount: number, limitSeconds: number): Promise<{ result: autocannon.Result; latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  const started = performance.now();
  let last = started;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections,
        amount,
        requests: bodies.map((body) => ({ method: 'POST', path: `/search?k=${K}`, headers: { 'content-type': 'image/png' }, body })),
      },
      (err: unknown, result: autocannon.Result) => {
        clearTimeout(timer);
        if (err) reject(err as Error);
        else resolve({ result, latencies, seconds: (last - started) / 1000 });
      },
    );
    instance.on('response', (_client, status, _bytes, ms) => {
      if (status >= 200 && status < 300) latencies.push(ms);
      last = performance.now();
    });
    const timer = setTimeout(() => instance.stop(), limitSeconds * 1000);
  });
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const dir = path.join(await mkdtemp(path.join(os.tmpdir(), 'dml-bench-serve-')), 'index');
  const embedder = await OnnxEmbedder.open(MODEL, { device: 'cpu' });
  try {
    const { set, sources, what } = await gallery(args, embedder);
    const built = performance.now();
    await SearchIndexStore.create(dir, {
      modelPath: MODEL,
      metadata: {
        model: { sha256: embedder.modelSha256, source: MODEL, outputName: embedder.signature.outputName },
        preprocessing: embedder.preprocessing,
        dataset: { spec: args.data ?? 'synthetic', manifestHash: 'benchmark' },
      },
      set,
      sources,
      hnsw: { m: 16, efConstruction: 200, ef: 64, seed: 0 },
    });
    const buildSeconds = (performance.now() - built) / 1000;
    const bodies = await queries();

    // Raw embed + search, one image at a time, in this process.
    const store = await SearchIndexStore.open(dir);
    const stages = { preprocess: [] as number[], inference: [] as number[], search: [] as number[], total: [] as number[] };
    for (let i = 0; i < args.raw + 20; i++) {
      const t0 = performance.now();
      const input = await preprocessImageBytes(bodies[i % bodies.length] as Buffer, embedder.preprocessing, { name: 'query' });
      const t1 = performance.now();
      const vector = await embedder.embedTensor(input, 1);
      const t2 = performance.now();
      store.search(vector, { k: K });
      const t3 = performance.now();
      if (i < 20) continue; // warm-up
      stages.preprocess.push(t1 - t0);
      stages.inference.push(t2 - t1);
      stages.search.push(t3 - t2);
      stages.total.push(t3 - t0);
    }
    await store.close();

    const server = await startServer(dir, ['--workers', String(args.workers)]);
    const rows: string[] = [];
    for (const c of args.concurrency) {
      await load(server.url, bodies, c, 200, args.seconds);
      const { result: r, latencies, seconds } = await load(server.url, bodies, c, args.requests, args.seconds);
      rows.push(
        `| ${c} | ${latencies.length} | ${r.non2xx + r.errors} | ${fmt(percentile(latencies, 50))} | ${fmt(percentile(latencies, 99))} | ${(latencies.length / seconds).toFixed(0)} | ${seconds.toFixed(2)} |`,
      );
    }
    const code = await server.stop();

    const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
    const lines = [
      `Machine: ${os.cpus().length} x ${cpu}, Node ${process.version}; server: dml serve --workers ${args.workers} --device cpu --log-level warn (exit code ${code} after SIGTERM)`,
      `Gallery: ${what}; HNSW M=16, efConstruction=200, ef=64 built in ${buildSeconds.toFixed(1)} s`,
      `Queries: ${bodies.length} Fashion-MNIST test PNGs (28x28, not in the gallery), POST /search?k=${K} with the raw bytes`,
      '',
      `Raw embed + search in-process, one image at a time (${args.raw} images):`,
      '',
      '| stage | p50 ms | p99 ms |',
      '|---|---|---|',
      ...(['preprocess', 'inference', 'search', 'total'] as const).map((s) => `| ${s === 'preprocess' ? 'decode + preprocess' : s === 'inference' ? 'onnxruntime run' : s === 'search' ? `HNSW search (k=${K})` : '**embed + search**'} | ${fmt(percentile(stages[s], 50))} | ${fmt(percentile(stages[s], 99))} |`),
      '',
      `Serial raw throughput: ${(1000 / (stages.total.reduce((a, b) => a + b, 0) / stages.total.length)).toFixed(0)} images/s`,
      '',
      `HTTP POST /search on loopback (autocannon, at most ${args.requests} requests or ${args.seconds} s per level, after 200 warm-up requests):`,
      '',
      '| concurrency | requests | errors / non-2xx | p50 ms | p99 ms | requests/s | seconds |',
      '|---|---|---|---|---|---|---|',
      ...rows,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await embedder.release();
    await rm(path.dirname(dir), { recursive: true, force: true });
  }
}

await main();
