/**
 * @file The library as it is called from code: every evaluateEmbeddings option defaults to `dml
 * eval`'s; evaluateArrays on plain arrays (hand-computed values, rows or flat, with and without a
 * gallery, one clear error per bad input); evaluate's preprocessing overrides, progress callback and
 * AbortSignal; EmbeddingIndex.search; HnswIndex.nearest's `row`; and `import 'dmlkit/train'` /
 * `'dmlkit/export'` without TensorFlow.js failing with `dml train`'s message.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { DEFAULT_CLUSTER_COUNTS } from '../lib/eval/cluster-counts.js';
import { evaluateEmbeddings } from '../lib/eval/evaluate-embeddings.js';
import { evaluate, evaluateArrays } from '../lib/facade.js';
import { EmbeddingIndex } from '../lib/search/embedding-index.js';
import { HnswIndex } from '../lib/search/hnsw.js';
import { expectDmlError } from './helpers/expect-dml-error.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Two classes of two unit vectors each in 2-D. */
const set = {
  vectors: Float32Array.from([1, 0, Math.cos(0.2), Math.sin(0.2), 0, 1, Math.sin(0.3), Math.cos(0.3)]),
  count: 4,
  dim: 2,
  ids: ['a0', 'a1', 'b0', 'b1'],
  labels: ['a', 'a', 'b', 'b'],
};

describe('the library', function () {
  this.timeout(60_000);

  it("evaluateEmbeddings(query, null) takes dml eval's defaults for every option", async () => {
    const points = Array.from({ length: 12 }, (_, i) => [Math.cos(i / 4), Math.sin(i / 4)]);
    const twelve = { vectors: Float32Array.from(points.flat()), count: 12, dim: 2, ids: points.map((_, i) => `p${i}`), labels: points.map((_, i) => (i < 6 ? 'a' : 'b')) };
    const defaults = await evaluateEmbeddings(twelve, null);
    const explicit = await evaluateEmbeddings(twelve, null, {
      ks: [1, 2, 4, 8],
      clusterCounts: ['1x', '2x', '5x', '10x', '30x'],
      clusterSet: 'union',
      index: { kind: 'exact', chunkSize: 512 },
      kmeans: { seed: 0, init: 'k-means++', maxIterations: 100, tolerance: 1e-4, restarts: 1 },
      examples: { count: 4, neighbours: 5 },
    });
    expect(defaults.parameters).to.deep.equal(explicit.parameters);
    expect(defaults.parameters).to.deep.include({ ks: [1, 2, 4, 8], clusterSet: 'union', index: { kind: 'exact', chunkSize: 512 }, clusterCounts: DEFAULT_CLUSTER_COUNTS });
    expect(defaults.parameters.kmeans).to.deep.equal({ init: 'k-means++', roundFraction: 0.25, maxIterations: 100, tolerance: 1e-4, restarts: 1, seed: 0 });
    expect(defaults.metrics).to.deep.equal(explicit.metrics);
    expect(defaults.examples).to.deep.equal(explicit.examples);
    expect(defaults.examples).to.have.length(8);
  });

  it('evaluateArrays scores plain arrays as dml eval scores .npy files (hand-computed), rows or flat alike', async () => {
    // Queries q0 = (1,0) label 0, q1 = (0,1) label 1; gallery (1,0.1) label 1, (1,0.2) label 0, (0,1) label 1.
    // q0: first hit at rank 2, R = 1 -> AP 0; q1: hit at rank 1, R = 2 -> AP 1/2. R@1 = 1/2, R@2 = 1, MAP@R = 1/4.
    const options = { gallery: [[1, 0.1], [1, 0.2], [0, 1]], galleryLabels: [1, 0, 1], ks: [1, 2] };
    const rows = await evaluateArrays([[1, 0], [0, 1]], [0, 1], options);
    expect(rows.metrics.recall).to.deep.equal({ '1': 0.5, '2': 1 });
    expect(rows.metrics.mapAtR).to.equal(0.25);
    expect(rows.metrics.rPrecision).to.equal(0.25);
    // The whole ranking: q0's one relevant item at rank 2 (RR = AP = 1/2); q1's at ranks 1 and 3 (RR 1, AP (1 + 2/3)/2 = 5/6).
    expect(rows.metrics.mrr).to.equal(0.75);
    expect(rows.metrics.map).to.be.closeTo(2 / 3, 1e-15);
    // MAP@1: q0 0, q1 1; MAP@2: q0 (1/2)/1, q1 1. PML's precision_at_1 over the two (non-lone) queries: 1/2.
    expect(rows.metrics.mapAtK).to.deep.equal({ '1': 0.5, '2': 0.75 });
    expect(rows.metrics.accuracyCalculator.precision_at_1).to.equal(0.5);
    expect(rows.parameters.ks).to.deep.equal([1, 2]);
    const flat = await evaluateArrays(Float32Array.from([1, 0, 0, 1]), ['0', '1'], { ...options, gallery: [1, 0.1, 1, 0.2, 0, 1] });
    expect(flat.metrics).to.deep.equal(rows.metrics);
    // Without a gallery the queries are the gallery, each left out of its own ranking; Recall@K defaults to 1, 2, 4, 8.
    const eight = Array.from({ length: 10 }, (_, i) => [Math.cos(i / 10), Math.sin(i / 10)]);
    const self = await evaluateArrays(eight, eight.map((_, i) => (i < 5 ? 'x' : 'y')));
    expect(self.parameters.ks).to.deep.equal([1, 2, 4, 8]);
    // Only p5 misses at rank 1: p4 (label x) and p6 (y) are equally near, and the lower row wins the tie.
    expect(self.metrics.recall['1']).to.equal(0.9);
    expect(self.sameSet).to.equal(true);
  });

  it('evaluateArrays: one clear error per bad input', async () => {
    await expectDmlError(evaluateArrays([[1, 0], [0, 1, 2]], [0, 1]), 'E_ARG', /^Expected a row of 2 numbers, as queryVectors\[0\] for queryVectors\[1\] but received /);
    await expectDmlError(evaluateArrays([[1, 0], [0, 1]], [0, 1, 2]), 'E_ARG', /^Expected 3 rows, one per label for queryVectors but received .*2 rows/);
    await expectDmlError(evaluateArrays([1, 0, 0], [0, 1]), 'E_ARG', /^Expected a multiple of 2 values \(one row per label\) for queryVectors but received .*3 values/);
    await expectDmlError(evaluateArrays([[1, 0]], []), 'E_ARG', /^Expected a non-empty array of labels \(strings or numbers\) for queryLabels/);
    await expectDmlError(evaluateArrays([[1, 0], [0, 1]], [0, 1], { gallery: [[1, 0]] }), 'E_ARG', /^Expected both or neither for gallery\/galleryLabels but received .*gallery only/);
    await expectDmlError(evaluateEmbeddings(set, null, { clusterSet: 'all' as 'union' }), 'E_ARG', /^Expected one of union, query, gallery for clusterSet but received .*all/);
  });

  it('evaluate: preprocessing overrides, stage progress and an AbortSignal', async () => {
    const stages = new Set<string>();
    const report = await evaluate({
      model: 'models/default.onnx',
      data: 'folder:data/default',
      clusterCounts: ['1x'],
      device: 'cpu',
      workers: 0,
      threads: 1,
      examples: 1,
      preprocessing: { resizeShorter: 32 },
      onProgress: (stage) => stages.add(stage),
    });
    expect(report.model?.preprocessing).to.deep.include({ resizeShorter: 32 });
    expect(report.model?.preprocessingSources['resizeShorter']).to.equal('override');
    expect([...stages]).to.deep.equal(['embed', 'search', 'k-means']);
    expect(report.examples).to.have.length(2);
    const controller = new AbortController();
    await expectDmlError(
      evaluate({ model: 'models/default.onnx', data: 'folder:data/default', clusterCounts: ['1x'], device: 'cpu', workers: 0, signal: controller.signal, onProgress: () => controller.abort() }),
      'E_CANCELLED',
      /cancelled/,
    );
  });

  it('EmbeddingIndex.search returns ids, labels and similarities, exact or HNSW alike; HnswIndex.nearest names rows', async () => {
    for (const kind of ['exact', 'hnsw'] as const) {
      const index = await EmbeddingIndex.build(set, { kind });
      const result = await index.search([2, 0], 3);
      expect(result.ids, kind).to.deep.equal(['a0', 'a1', 'b1']);
      expect(result.labels, kind).to.deep.equal(['a', 'a', 'b']);
      expect(result.similarities.map((s) => Number(s.toFixed(5))), kind).to.deep.equal([1, Number(Math.cos(0.2).toFixed(5)), Number(Math.sin(0.3).toFixed(5))]);
      expect((await index.search([0, 1], 10)).ids, kind).to.have.length(4);
    }
    await expectDmlError((await EmbeddingIndex.build(set)).search([1, 0, 0], 1), 'E_ARG', /^Expected 2 numbers \(the embedding dimension\) for query but received .*3 numbers/);
    const hnsw = await HnswIndex.build(set.vectors, 4, 2, { seed: 0 });
    expect(hnsw.nearest(Float32Array.from([0, 1]), 1)).to.deep.equal([{ row: 2, similarity: 1 }]);
  });

  it("import 'dmlkit/train' and 'dmlkit/export' without TensorFlow.js fail with dml train's one-line message", () => {
    for (const [entry, what] of [['lib/train-entry.ts', 'dmlkit/train'], ['lib/export-entry.ts', 'dmlkit/export']] as const) {
      const probe = `import(${JSON.stringify(path.join(root, entry))}).then(() => console.log('loaded'), (e) => console.log(e.code + ': ' + e.message))`;
      const hidden = spawnSync(process.execPath, ['--import', 'tsx', '--import', path.join(root, 'spec/helpers/hide-tensorflow.mjs'), '--input-type=module', '-e', probe], { cwd: root, encoding: 'utf8' });
      expect(hidden.stdout.trim(), what).to.equal(
        `E_NOT_FOUND: import '${what}' needs TensorFlow.js, an optional peer dependency of dmlkit that is not installed: npm install @tensorflow/tfjs@^4.22.0 @tensorflow/tfjs-backend-cpu@^4.22.0 @tensorflow/tfjs-backend-wasm@^4.22.0`,
      );
    }
  });

  it('the runtime entries export exactly the values of lib/train.ts and lib/export.ts', () => {
    const keys = (file: string): string[] =>
      JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `import(${JSON.stringify(path.join(root, file))}).then((m) => console.log(JSON.stringify(Object.keys(m).sort())))`], { cwd: root, encoding: 'utf8' }).trim().split('\n').at(-1) as string) as string[];
    expect(keys('lib/train-entry.ts')).to.deep.equal(keys('lib/train.ts'));
    expect(keys('lib/export-entry.ts')).to.deep.equal(keys('lib/export.ts'));
  });
});
