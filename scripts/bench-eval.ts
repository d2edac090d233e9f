/**
 * @file Benchmark of the evaluation spine at 60,000 x 512 (query set = gallery set): exact Recall@K
 * (chunked onnxruntime Gemm+TopK streamed into the metrics) and k-means (K = 1,000, 20 Lloyd iterations),
 * each against a naive plain-JavaScript baseline measured in the same run. Every measurement runs in its
 * own child process so its peak RSS is its own.
 *
 *   npx tsx scripts/bench-eval.ts [--n 60000] [--dim 512] [--classes 1000] [--naive-queries 200]
 *
 * The naive Recall@K baseline (dot products + running top-8 per query, no matrix) is timed on a sample of
 * queries and extrapolated to all N; the naive N x N similarity matrix is not run (60,000^2 floats =
 * 14.4 GB) but its size is printed. The naive k-means runs one Lloyd iteration and is extrapolated to 20.
 * Data: `classes` Gaussian clusters (seeded), L2-normalised, 60 images per class, like an SOP-sized set.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { EmbeddingSet } from '../lib/embed/embedding-set.js';
import { kmeans } from '../lib/metrics/kmeans.js';
import { encodeLabels } from '../lib/metrics/labels.js';
import { RetrievalMetricsAccumulator } from '../lib/metrics/retrieval.js';
import { exactSearch } from '../lib/search/exact.js';
import { Rng } from '../lib/util/rng.js';

interface Args {
  n: number;
  dim: number;
  classes: number;
  naiveQueries: number;
}

function parseArgs(argv: string[]): Args & { child?: string } {
  const get = (flag: string, def: number): number => {
    const i = argv.indexOf(flag);
    return i >= 0 ? Number(argv[i + 1]) : def;
  };
  const c = argv.indexOf('--child');
  return {
    n: get('--n', 60000),
    dim: get('--dim', 512),
    classes: get('--classes', 1000),
    naiveQueries: get('--naive-queries', 200),
    ...(c >= 0 ? { child: argv[c + 1] as string } : {}),
  };
}

/** `classes` Gaussian centres + noise, L2-normalised; labels = centre index. */
function clusteredSet(a: Args): EmbeddingSet {
  const rng = new Rng(7);
  const centres = Float32Array.from({ length: a.classes * a.dim }, () => rng.nextGaussian());
  const vectors = new Float32Array(a.n * a.dim);
  const labels: string[] = [];
  for (let i = 0; i < a.n; i++) {
    const c = i % a.classes;
    let norm = 0;
    for (let j = 0; j < a.dim; j++) {
      const v = (centres[c * a.dim + j] as number) + 1.2 * rng.nextGaussian();
      vectors[i * a.dim + j] = v;
      norm += v * v;
    }
    const inv = 1 / Math.sqrt(norm);
    for (let j = 0; j < a.dim; j++) vectors[i * a.dim + j] = (vectors[i * a.dim + j] as number) * inv;
    labels.push(String(c));
  }
  return { vectors, count: a.n, dim: a.dim, labels, ids: labels.map((_, i) => String(i)) };
}

const KS = [1, 2, 4, 8];

/** Runs one measurement and returns {seconds, extrapolatedSeconds?, value} as JSON on stdout. */
async function child(kind: string, a: Args): Promise<void> {
  const set = clusteredSet(a);
  const start = performance.now();
  let result: Record<string, unknown> = {};
  if (kind === 'exact-recall') {
    // The evaluator's path: exact search streamed into the metrics (no clustering here).
    const labels = encodeLabels(set.labels, set.labels);
    const selfIndex = Int32Array.from({ length: a.n }, (_, i) => i);
    const acc = new RetrievalMetricsAccumulator({ queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes, recallK: KS, querySelfIndex: selfIndex });
    for await (const block of exactSearch(set.vectors, a.n, set.vectors, a.n, a.dim, { k: acc.requiredNeighbours, selfIndex })) acc.add(block);
    const r = acc.result();
    result = { recall: r.recall, mapAtR: r.mapAtR, neighbours: acc.requiredNeighbours };
  } else if (kind === 'naive-recall') {
    // Plain JS: for each sampled query, all N dot products with a running top-8 (insertion), no matrix.
    const hits = new Float64Array(KS.length);
    const topScore = new Float64Array(8);
    const topIndex = new Int32Array(8);
    for (let q = 0; q < a.naiveQueries; q++) {
      const qo = q * a.dim;
      topScore.fill(-Infinity);
      topIndex.fill(-1);
      for (let g = 0; g < a.n; g++) {
        if (g === q) continue;
        let s = 0;
        const go = g * a.dim;
        for (let j = 0; j < a.dim; j++) s += (set.vectors[qo + j] as number) * (set.vectors[go + j] as number);
        if (s <= (topScore[7] as number)) continue;
        let p = 7;
        while (p > 0 && s > (topScore[p - 1] as number)) {
          topScore[p] = topScore[p - 1] as number;
          topIndex[p] = topIndex[p - 1] as number;
          p--;
        }
        topScore[p] = s;
        topIndex[p] = g;
      }
      KS.forEach((k, i) => {
        if (Array.from(topIndex.subarray(0, k)).some((g) => set.labels[g] === set.labels[q])) hits[i] = (hits[i] as number) + 1;
      });
    }
    result = { sampledQueries: a.naiveQueries, recallOnSample: Object.fromEntries(KS.map((k, i) => [k, (hits[i] as number) / a.naiveQueries])) };
  } else if (kind === 'kmeans') {
    const r = await kmeans(set.vectors, a.n, a.dim, { k: 1000, iterations: 20, seed: 0 });
    result = { inertia: r.inertia, iterationsRun: r.iterationsRun };
  } else if (kind === 'naive-kmeans') {
    // One plain-JS Lloyd iteration (assignment by full distance loop + mean update) from the first 1,000 rows.
    const k = 1000;
    const centroids = set.vectors.slice(0, k * a.dim);
    const assign = new Int32Array(a.n);
    for (let i = 0; i < a.n; i++) {
      let best = Infinity;
      for (let c = 0; c < k; c++) {
        let d = 0;
        for (let j = 0; j < a.dim; j++) {
          const t = (set.vectors[i * a.dim + j] as number) - (centroids[c * a.dim + j] as number);
          d += t * t;
        }
        if (d < best) {
          best = d;
          assign[i] = c;
        }
      }
    }
    const sums = new Float64Array(k * a.dim);
    const counts = new Int32Array(k);
    for (let i = 0; i < a.n; i++) {
      const c = assign[i] as number;
      counts[c] = (counts[c] as number) + 1;
      for (let j = 0; j < a.dim; j++) sums[c * a.dim + j] = (sums[c * a.dim + j] as number) + (set.vectors[i * a.dim + j] as number);
    }
    result = { iterationsRun: 1 };
  } else {
    throw new Error(`unknown child ${kind}`);
  }
  const seconds = (performance.now() - start) / 1000;
  process.stdout.write(JSON.stringify({ seconds, peakRssMiB: process.resourceUsage().maxRSS / 1024, ...result }));
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  if (a.child) return child(a.child, a);
  const self = fileURLToPath(import.meta.url);
  const run = (kind: string): Record<string, number> =>
    JSON.parse(
      execFileSync(process.execPath, ['--import', 'tsx', self, '--child', kind, '--n', String(a.n), '--dim', String(a.dim), '--classes', String(a.classes), '--naive-queries', String(a.naiveQueries)], {
        encoding: 'utf8',
        maxBuffer: 1 << 24,
      }),
    ) as Record<string, number>;
  const baselineRss = (JSON.parse(execFileSync(process.execPath, ['-e', 'process.stdout.write(JSON.stringify(process.resourceUsage().maxRSS/1024))'], { encoding: 'utf8' })) as number);
  console.log(`# bench-eval: N = ${a.n}, D = ${a.dim}, ${a.classes} classes; ${new Date().toISOString()}; node ${process.version}`);
  const exact = run('exact-recall');
  const naive = run('naive-recall');
  const naiveTotal = (naive['seconds'] as number) * (a.n / a.naiveQueries);
  const km = run('kmeans');
  const naiveKm = run('naive-kmeans');
  const naiveKmTotal = (naiveKm['seconds'] as number) * 20;
  const matrixGiB = (a.n * a.n * 4) / 2 ** 30;
  const rows = [
    ['exact Recall@K + MAP@R (chunked Gemm+TopK, streamed)', exact['seconds'], exact['peakRssMiB'], ''],
    [`naive JS Recall@K (${a.naiveQueries} queries, extrapolated)`, naiveTotal, naive['peakRssMiB'], `${(naiveTotal / (exact['seconds'] as number)).toFixed(0)}x slower`],
    ['naive full similarity matrix (not run)', Number.NaN, matrixGiB * 1024, 'memory of the N x N float32 matrix alone'],
    ['k-means K=1000, 20 iterations (Gemm assignment)', km['seconds'], km['peakRssMiB'], ''],
    ['naive JS k-means (1 iteration x 20, extrapolated)', naiveKmTotal, naiveKm['peakRssMiB'], `${(naiveKmTotal / (km['seconds'] as number)).toFixed(0)}x slower`],
  ];
  console.log('| measurement | wall s | peak RSS MiB | note |');
  console.log('| --- | ---: | ---: | --- |');
  for (const [name, s, rss, note] of rows) {
    console.log(`| ${name} | ${Number.isNaN(s) ? '-' : (s as number).toFixed(1)} | ${(rss as number).toFixed(0)} | ${note} |`);
  }
  console.log(`\nnode process baseline RSS: ${baselineRss.toFixed(0)} MiB; embeddings alone: ${((a.n * a.dim * 4) / 2 ** 20).toFixed(0)} MiB`);
  console.log(`exact: Recall@1 ${(exact as unknown as { recall: Record<string, number> }).recall['1']}, neighbours per query ${exact['neighbours']}`);
}

await main();
