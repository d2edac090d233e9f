/**
 * @file The two index stores side by side in one run: the hnswlib store (a folder, the graph in
 * memory) and the LanceDB store (`lance:<folder>`, IVF_HNSW_SQ with refine, searched on disk) over
 * the same clustered unit vectors: build time, size on disk, recall@10 against exact search, and
 * p50 / p99 latency of single-vector searches through `dml serve` at each concurrency of a list.
 *
 *   npx tsx scripts/bench/bench-stores.ts [--n 100000] [--dim 128] [--clusters 1000] [--noise 1]
 *                                   [--queries 1000] [--concurrency 1,8] [--requests 4000] [--seconds 30]
 *
 * Vectors: `--clusters` Gaussian centres, each item a centre plus Gaussian noise (standard deviation
 * `--noise` per coordinate, the centres' being 1; larger noise makes the clusters overlap and the
 * search harder), L2-normalised; queries are fresh points drawn the
 * same way (not in the gallery). Ground truth: exact top-10 by onnxruntime (lib/search/exact.ts).
 * Recall@10 is measured in this process through each store's `search` (what `dml serve` calls);
 * latency through `POST /search/vector` (k = 10) of a `dml serve` child process per store (started
 * the way this script was, `--device cpu`, read-only), with autocannon, after 200 warm-up requests.
 * The model in each index is models/default.onnx; it is loaded by the server but takes no part in
 * vector searches, so the vectors need not be of its dimension. Both stores use their defaults
 * (hnswlib M=16, efConstruction=200, ef=64; LanceDB: lance-store.ts DEFAULT_LANCE_ANN with
 * minRows 1 so that the ANN index is built at any n). Needs `@lancedb/lancedb` installed.
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { OnnxEmbedder } from '../../lib/embed/embedder.js';
import { normalizeRowsInPlace } from '../../lib/embed/normalize.js';
import type { IndexStore } from '../../lib/index-store/index-store.js';
import { DEFAULT_LANCE_ANN } from '../../lib/index-store/lance-store.js';
import { MODEL_FILE } from '../../lib/index-store/layout.js';
import { createIndexStore, openIndexStore } from '../../lib/index-store/open-store.js';
import { exactSearch } from '../../lib/search/exact.js';
import { Rng } from '../../lib/util/rng.js';
import { parseNonNegativeNumber, parsePositiveInt, parsePositiveIntList } from '../../lib/cli/parse-options.js';
import { DEFAULT_MODEL, startServer } from './serve-process.js';

const MODEL = DEFAULT_MODEL;
const K = 10;

interface Args {
  n: number;
  dim: number;
  clusters: number;
  noise: number;
  queries: number;
  concurrency: number[];
  requests: number;
  seconds: number;
}

function parseArgs(argv: string[]): Args {
  const raw = (flag: string, fallback: string): string => {
    const i = argv.indexOf(flag);
    return i >= 0 ? (argv[i + 1] ?? '') : fallback;
  };
  const get = (flag: string, fallback: string): number => parsePositiveInt(raw(flag, fallback), flag);
  return {
    n: get('--n', '100000'),
    dim: get('--dim', '128'),
    clusters: get('--clusters', '1000'),
    noise: parseNonNegativeNumber(raw('--noise', '1'), '--noise'),
    queries: get('--queries', '1000'),
    concurrency: parsePositiveIntList(raw('--concurrency', '1,8'), '--concurrency'),
    requests: get('--requests', '4000'),
    seconds: get('--seconds', '30'),
  };
}

/** p-th percentile (nearest rank) of `values`. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/** `count` clustered unit vectors around `centres` (see the file comment). */
function clustered(rng: Rng, centres: Float32Array, clusters: number, noise: number, count: number, dim: number): Float32Array {
  const out = new Float32Array(count * dim);
  for (let i = 0; i < count; i++) {
    const c = Math.floor(rng.next() * clusters);
    for (let j = 0; j < dim; j++) out[i * dim + j] = (centres[c * dim + j] as number) + noise * rng.nextGaussian();
  }
  normalizeRowsInPlace(out, count, dim, 'vectors');
  return out;
}

/** Bytes of the files under `dir`, the model copy left out. */
async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || (entry.parentPath === dir && entry.name.startsWith(MODEL_FILE))) continue;
    total += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return total;
}


/** Resident memory of process `pid` in MiB (Linux /proc). */
async function rssMiB(pid: number): Promise<number> {
  const status = await (await import('node:fs/promises')).readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** One autocannon run of POST /search/vector cycling through `bodies`; latencies (ms) of the 2xx answers. */
function load(url: string, bodies: string[], connections: number, amount: number, limitSeconds: number): Promise<{ latencies: number[]; failures: number }> {
  const latencies: number[] = [];
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      { url, connections, amount, requests: bodies.map((body) => ({ method: 'POST', path: '/search/vector', headers: { 'content-type': 'application/json' }, body })) },
      (err: unknown, result: autocannon.Result) => {
        clearTimeout(timer);
        if (err) reject(err as Error);
        else resolve({ latencies, failures: result.non2xx + result.errors });
      },
    );
    instance.on('response', (_client, status, _bytes, ms) => {
      if (status >= 200 && status < 300) latencies.push(ms);
    });
    const timer = setTimeout(() => instance.stop(), limitSeconds * 1000);
  });
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const { n, dim, clusters } = args;
  const root = await mkdtemp(path.join(os.tmpdir(), 'dml-bench-stores-'));
  const embedder = await OnnxEmbedder.open(MODEL, { device: 'cpu' });
  try {
    const rng = new Rng(27);
    const centres = Float32Array.from({ length: clusters * dim }, () => rng.nextGaussian());
    const vectors = clustered(rng, centres, clusters, args.noise, n, dim);
    const queries = clustered(rng, centres, clusters, args.noise, args.queries, dim);
    const ids = Array.from({ length: n }, (_, i) => `v${i}`);
    const set = { vectors, count: n, dim, ids, labels: ids.map((_, i) => String(i % 10)) };
    const truth = new Int32Array(args.queries * K);
    for await (const block of exactSearch(queries, args.queries, vectors, n, dim, { k: K })) truth.set(block.indices, block.queryOffset * K);
    const bodies = Array.from({ length: args.queries }, (_, q) => JSON.stringify({ vector: Array.from(queries.subarray(q * dim, (q + 1) * dim)), k: K }));

    const rows: string[] = [];
    for (const [name, location] of [
      ['hnswlib (folder)', path.join(root, 'hnsw')],
      ['LanceDB IVF_HNSW_SQ + refine (lance:)', `lance:${path.join(root, 'lance')}`],
    ] as const) {
      const cpu0 = process.cpuUsage();
      const started = performance.now();
      await createIndexStore(location, {
        modelPath: MODEL,
        metadata: {
          model: { sha256: embedder.modelSha256, source: MODEL, outputName: embedder.signature.outputName },
          preprocessing: embedder.preprocessing,
          dataset: { spec: 'synthetic', manifestHash: 'benchmark' },
        },
        set,
        sources: ids.map((id) => ({ kind: 'file', path: `${id}.png` })),
        hnsw: { m: 16, efConstruction: 200, ef: 64, seed: 0 },
        ann: { ...DEFAULT_LANCE_ANN, minRows: 1 },
      });
      const buildSeconds = (performance.now() - started) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const dir = location.replace(/^lance:/, '');
      const bytes = await diskBytes(dir);

      const store: IndexStore = await openIndexStore(location);
      let hits = 0;
      for (let q = 0; q < args.queries; q++) {
        const want = new Set(truth.subarray(q * K, (q + 1) * K));
        for (const hit of await store.search(queries.slice(q * dim, (q + 1) * dim), { k: K })) if (want.has(Number(hit.id.slice(1)))) hits++;
      }
      await store.close();
      const recall = hits / (args.queries * K);

      const server = await startServer(location);
      const latency: string[] = [];
      for (const c of args.concurrency) {
        await load(server.url, bodies, c, 200, args.seconds);
        const { latencies, failures } = await load(server.url, bodies, c, args.requests, args.seconds);
        latency.push(`${c}: ${percentile(latencies, 50).toFixed(2)} / ${percentile(latencies, 99).toFixed(2)} (${latencies.length} ok, ${failures} failed)`);
      }
      const rss = await rssMiB(server.pid);
      await server.stop();
      rows.push(
        `| ${name} | ${buildSeconds.toFixed(1)} s (${((cpu.user + cpu.system) / 1e6).toFixed(1)} s CPU in this process) | ${(bytes / 2 ** 20).toFixed(0)} MiB | ${recall.toFixed(3)} | ${latency.join('<br>')} | ${rss.toFixed(0)} MiB |`,
      );
    }
    const lines = [
      `Machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}`,
      `Data: ${n} x ${dim} clustered unit vectors (${clusters} clusters, noise ${args.noise}), ${args.queries} queries not in the gallery, k = ${K}`,
      `Latency: POST /search/vector through dml serve (read-only, --device cpu), at most ${args.requests} requests or ${args.seconds} s per concurrency after 200 warm-up requests`,
      '',
      '| store | build | on disk (model left out) | recall@10 | concurrency: p50 / p99 ms | server RSS after the runs |',
      '|---|---|---|---|---|---|',
      ...rows,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await embedder.release();
    await rm(root, { recursive: true, force: true });
  }
}

await main();
