/**
 * @file Tests of the clustering part of evaluateEmbeddings: the NMI+ curve comes from one k-means sweep
 * whose every point equals a separate k-means run with the recorded parameters (so sharing the seeding
 * across cluster counts changes nothing), the recorded k-means parameters are the resolved defaults,
 * and the clustered set is the union of queries and gallery or the queries alone. And the retrieval
 * metrics of every query/gallery combination (one set, separate sets, sets sharing items by id) against
 * values computed by hand, with exact search and with HNSW.
 */
import { expect } from 'chai';
import type { EmbeddingSet } from '../../lib/embed/embedding-set.js';
import { checkQueryLabelsInGallery, evaluateEmbeddings, type EvaluateEmbeddingsOptions } from '../../lib/eval/evaluate-embeddings.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { adjustedMutualInformation, normalizedMutualInformation } from '../../lib/metrics/clustering.js';
import { kmeans } from '../../lib/metrics/kmeans.js';
import { encodeLabels } from '../../lib/metrics/labels.js';
import { Rng } from '../../lib/util/rng.js';

/** `perClass` noisy unit vectors around each of `classes` random directions in `dim` dimensions. */
function clusteredSet(classes: number, perClass: number, dim: number, idPrefix: string, seed: number): EmbeddingSet {
  const rng = new Rng(seed);
  const centres = Array.from({ length: classes }, () => Array.from({ length: dim }, () => rng.nextGaussian()));
  const count = classes * perClass;
  const vectors = new Float32Array(count * dim);
  const labels: string[] = [];
  for (let i = 0; i < count; i++) {
    const c = i % classes;
    let norm = 0;
    for (let j = 0; j < dim; j++) {
      const v = (centres[c]?.[j] as number) + 0.8 * rng.nextGaussian();
      vectors[i * dim + j] = v;
      norm += v * v;
    }
    for (let j = 0; j < dim; j++) vectors[i * dim + j] = (vectors[i * dim + j] as number) / Math.sqrt(norm);
    labels.push(`class${c}`);
  }
  return { vectors, count, dim, labels, ids: labels.map((_, i) => `${idPrefix}${i}`) };
}

const OPTIONS: EvaluateEmbeddingsOptions = {
  ks: [1, 2],
  clusterCounts: ['1x', '3x', '10x'],
  clusterSet: 'union',
  index: { kind: 'exact', chunkSize: 512 },
  kmeans: { seed: 7 },
};

describe('eval/evaluateEmbeddings (clustering)', () => {
  const set = clusteredSet(6, 20, 8, 'q', 1);
  const codes = encodeLabels(set.labels, []).queryCodes;

  it('gives every NMI+ point the NMI of a separate k-means run with the recorded parameters', async () => {
    const { metrics, parameters } = await evaluateEmbeddings(set, null, OPTIONS);
    expect(parameters.kmeans).to.deep.equal({ init: 'k-means++', roundFraction: 0.25, maxIterations: 100, tolerance: 1e-4, restarts: 1, seed: 7 });
    expect(metrics.nmiCurve.map((p) => p.clusters)).to.deep.equal([6, 18, 60]);
    for (const point of metrics.nmiCurve) {
      const alone = await kmeans(set.vectors, set.count, set.dim, { k: point.clusters, ...parameters.kmeans });
      expect(point.nmi, `K ${point.clusters}`).to.equal(normalizedMutualInformation(codes, alone.assignments));
      expect([point.inertia, point.iterations, point.converged]).to.deep.equal([alone.inertia, alone.iterationsRun, alone.converged]);
    }
    expect(metrics.nmi).to.equal(metrics.nmiCurve[0]?.nmi);
  });

  it('passes the k-means options through (random seeding, an iteration cap)', async () => {
    const { metrics, parameters } = await evaluateEmbeddings(set, null, { ...OPTIONS, kmeans: { seed: 7, init: 'random', maxIterations: 1, tolerance: 0 } });
    expect(parameters.kmeans).to.include({ init: 'random', maxIterations: 1, tolerance: 0 });
    for (const point of metrics.nmiCurve) expect(point.iterations, `K ${point.clusters}`).to.be.at.most(1);
    const alone = await kmeans(set.vectors, set.count, set.dim, { k: 6, seed: 7, init: 'random', maxIterations: 1, tolerance: 0 });
    expect(metrics.nmi).to.equal(normalizedMutualInformation(codes, alone.assignments));
  });

  it('clusters queries and gallery together by default, the queries or the gallery alone with clusterSet query or gallery', async () => {
    const gallery = clusteredSet(6, 10, 8, 'g', 2);
    const union = await evaluateEmbeddings(set, gallery, { ...OPTIONS, clusterCounts: ['1x'] });
    const queriesOnly = await evaluateEmbeddings(set, gallery, { ...OPTIONS, clusterCounts: ['1x'], clusterSet: 'query' });
    const both: EmbeddingSet = {
      vectors: Float32Array.from([...gallery.vectors, ...set.vectors]),
      count: gallery.count + set.count,
      dim: set.dim,
      ids: [...gallery.ids, ...set.ids],
      labels: [...gallery.labels, ...set.labels],
    };
    const unionAlone = await kmeans(both.vectors, both.count, both.dim, { k: 6, seed: 7 });
    expect(union.metrics.nmi).to.equal(normalizedMutualInformation(encodeLabels(both.labels, []).queryCodes, unionAlone.assignments));
    const queryAlone = await kmeans(set.vectors, set.count, set.dim, { k: 6, seed: 7 });
    expect(queriesOnly.metrics.nmi).to.equal(normalizedMutualInformation(codes, queryAlone.assignments));
    const galleryOnly = await evaluateEmbeddings(set, gallery, { ...OPTIONS, clusterCounts: ['1x'], clusterSet: 'gallery' });
    const galleryAlone = await kmeans(gallery.vectors, gallery.count, gallery.dim, { k: 6, seed: 7 });
    expect(galleryOnly.metrics.nmi).to.equal(normalizedMutualInformation(encodeLabels(gallery.labels, []).queryCodes, galleryAlone.assignments));
    expect(galleryOnly.parameters.clusterSet).to.equal('gallery');
  });
});

/** Unit vectors at `degrees` on the circle; ids and labels as given. */
function circleSet(points: Array<[id: string, label: string, degrees: number]>): EmbeddingSet {
  const vectors = new Float32Array(points.length * 2);
  points.forEach(([, , degrees], i) => {
    vectors[2 * i] = Math.cos((degrees * Math.PI) / 180);
    vectors[2 * i + 1] = Math.sin((degrees * Math.PI) / 180);
  });
  return { vectors, count: points.length, dim: 2, ids: points.map((p) => p[0]), labels: points.map((p) => p[1]) };
}

describe('eval/evaluateEmbeddings (retrieval, hand-computed)', () => {
  // On the unit circle, nearer in angle = more similar. Gallery: A at 10, 60, 200 degrees; B at 30, 100.
  const gallery = circleSet([
    ['g0', 'A', 10],
    ['g1', 'B', 30],
    ['g2', 'A', 60],
    ['g3', 'B', 100],
    ['g4', 'A', 200],
  ]);
  const options: EvaluateEmbeddingsOptions = { ...OPTIONS, ks: [1, 2, 4], clusterCounts: ['1x'] };

  for (const index of [{ kind: 'exact', chunkSize: 1 }, { kind: 'hnsw', m: 8, efConstruction: 50, ef: 16, seed: 1 }] as const) {
    it(`separate query set (${index.kind}): Recall@K, R-Precision and MAP@R as computed by hand`, async () => {
      // q0 (A, 0 deg) ranks g0 A, g1 B, g2 A, g3 B, g4 A: R = 3, AP@R = (1 + 2/3) / 3, R-Precision 2/3.
      // q1 (B, 90 deg) ranks g3 B, g2 A, g1 B, g0 A, g4 A: R = 2, AP@R = 1/2, R-Precision 1/2.
      const queries = circleSet([
        ['q0', 'A', 0],
        ['q1', 'B', 90],
      ]);
      const { metrics } = await evaluateEmbeddings(queries, gallery, { ...options, index });
      expect(metrics.recall).to.deep.equal({ '1': 1, '2': 1, '4': 1 });
      expect(metrics.mapAtR).to.be.closeTo((5 / 9 + 1 / 2) / 2, 1e-12);
      expect(metrics.rPrecision).to.be.closeTo((2 / 3 + 1 / 2) / 2, 1e-12);
      expect([metrics.queryCount, metrics.galleryCount, metrics.loneQueries]).to.deep.equal([2, 5, 0]);
      // Per class, worst first: B (q1, MAP@R 1/2) before A (q0, MAP@R 5/9).
      expect(metrics.perClass.map((c) => c.label)).to.deep.equal(['B', 'A']);
      expect(metrics.perClass[0]).to.include({ queryCount: 1, recallAt1: 1, rPrecision: 0.5, mapAtR: 0.5 });
      expect(metrics.perClass[1]?.mapAtR).to.be.closeTo(5 / 9, 1e-12);
      // The whole ranking (from the exact search's scores; with HNSW from its exact reference pass):
      // q0 hits at 1, 3, 5: RR 1, AP (1 + 2/3 + 3/5)/3 = 34/45; q1 hits at 1, 3: RR 1, AP (1 + 2/3)/2 = 5/6.
      expect(metrics.mrr).to.equal(1);
      expect(metrics.map).to.be.closeTo((34 / 45 + 5 / 6) / 2, 1e-12);
      // MAP@4 divides by the hits in the top 4: (1 + 2/3)/2 for both.
      expect(metrics.mapAtK).to.have.keys(['1', '2', '4']).and.include({ '1': 1, '2': 1 });
      expect(metrics.mapAtK?.['4']).to.be.closeTo(5 / 6, 1e-15);
      expect(metrics.accuracyCalculator).to.deep.include({ precision_at_1: 1, mean_reciprocal_rank: 1, mean_average_precision: metrics.map, mean_average_precision_at_r: metrics.mapAtR });
    });
  }

  it('--index hnsw warns when MAP@R raises ef to R + 1, and not when ef already covers it', async () => {
    const set = clusteredSet(2, 20, 4, 'p', 3);
    const low = await evaluateEmbeddings(set, null, { ks: [1], clusterCounts: ['1x'], index: { kind: 'hnsw', m: 8, efConstruction: 50, ef: 4, seed: 1 } });
    expect(low.warnings).to.deep.equal([
      '--index hnsw: ef is raised from 4 to 20 so that every query gets its R same-label neighbours for MAP@R and R-Precision (R is up to 19 here); with ef that large HNSW is often slower than exact search, which is the better choice unless the gallery is very large',
    ]);
    expect(low.parameters.index).to.deep.include({ ef: 20 });
    const high = await evaluateEmbeddings(set, null, { ks: [1], clusterCounts: ['1x'], index: { kind: 'hnsw', m: 8, efConstruction: 50, ef: 64, seed: 1 } });
    expect(high.warnings).to.deep.equal([]);
  });

  it('a query that is also a gallery item (same id) is excluded from its own neighbours', async () => {
    // g2 (A, 60 deg) without itself ranks g1 B, g3 B, g0 A, g4 A: R = 2, AP@R 0, R-Precision 0, first hit at rank 3.
    const queries = circleSet([
      ['g2', 'A', 60],
      ['q1', 'B', 90],
    ]);
    const { metrics } = await evaluateEmbeddings(queries, gallery, options);
    expect(metrics.recall).to.deep.equal({ '1': 0.5, '2': 0.5, '4': 1 });
    expect(metrics.mapAtR).to.be.closeTo((0 + 1 / 2) / 2, 1e-12);
    expect(metrics.rPrecision).to.be.closeTo((0 + 1 / 2) / 2, 1e-12);
    // Whole ranking: g2 hits at 3, 4 (RR 1/3, AP (1/3 + 2/4)/2 = 5/12); q1 RR 1, AP 5/6.
    expect(metrics.mrr).to.be.closeTo((1 / 3 + 1) / 2, 1e-15);
    expect(metrics.map).to.be.closeTo((5 / 12 + 5 / 6) / 2, 1e-15);
    // Without the whole ranking: the same top-k metrics, MRR and mAP null.
    const without = await evaluateEmbeddings(queries, gallery, { ...options, fullRanking: false });
    expect(without.parameters.fullRanking).to.equal(false);
    expect(without.metrics).to.deep.include({ mrr: null, map: null, mapAtR: metrics.mapAtR, recall: metrics.recall });
    expect(without.metrics.accuracyCalculator).to.include({ mean_reciprocal_rank: null, mean_average_precision: null });
  });

  it('query set = gallery set (null or the same object): leave-one-out', async () => {
    // With g4 relabelled C (no other C: a lone query), each other item has one same-label neighbour:
    // g0 (10 deg): g1 B, g2 A, ...       -> first hit at rank 2
    // g1 (30 deg): g0 A, g2 A, g3 B      -> rank 3
    // g2 (60 deg): g1 B, g3 B, g0 A      -> rank 3
    // g3 (100 deg): g2 A, g1 B           -> rank 2
    // So R = 1 for all four and no first neighbour matches: R-Precision and MAP@R are 0, and Recall@2
    // and Recall@4 count 2 and 4 hits of 5 queries.
    const set = circleSet([
      ['g0', 'A', 10],
      ['g1', 'B', 30],
      ['g2', 'A', 60],
      ['g3', 'B', 100],
      ['g4', 'C', 200],
    ]);
    for (const second of [null, set]) {
      const { metrics, sameSet } = await evaluateEmbeddings(set, second, options);
      expect(sameSet).to.equal(true);
      expect(metrics.loneQueries).to.equal(1); // g4: no other C
      // Lone queries count as misses in Recall@K and are left out of R-Precision and MAP@R.
      expect(metrics.recall).to.deep.equal({ '1': 0, '2': 2 / 5, '4': 4 / 5 });
      expect(metrics.mapAtR).to.equal(0);
      expect(metrics.rPrecision).to.equal(0);
      // C's only query is lone: its class comes last, with null MAP@R.
      expect(metrics.perClass.at(-1)).to.deep.equal({ label: 'C', queryCount: 1, recallAt1: 0, rPrecision: null, mapAtR: null });
    }
  });

  it('clusters the union by id: a query that is a gallery item counts once', async () => {
    const queries = circleSet([
      ['g2', 'A', 60],
      ['q1', 'B', 90],
    ]);
    const { metrics } = await evaluateEmbeddings(queries, gallery, options);
    const union: EmbeddingSet = {
      vectors: Float32Array.from([...gallery.vectors, ...queries.vectors.subarray(2, 4)]),
      count: 6,
      dim: 2,
      ids: [...gallery.ids, 'q1'],
      labels: [...gallery.labels, 'B'],
    };
    const alone = await kmeans(union.vectors, union.count, union.dim, { k: 2, seed: 7 });
    expect(metrics.nmi).to.equal(normalizedMutualInformation(encodeLabels(union.labels, []).queryCodes, alone.assignments));
    expect(metrics.ami).to.equal(adjustedMutualInformation(encodeLabels(union.labels, []).queryCodes, alone.assignments));
    expect(metrics.accuracyCalculator).to.include({ NMI: metrics.nmi, AMI: metrics.ami });
    expect(metrics.labelCount).to.equal(2);
  });
});

describe('eval/checkQueryLabelsInGallery', () => {
  it('passes when every query label occurs in the gallery', () => {
    expect(checkQueryLabelsInGallery(['a', 'b', 'a'], ['b', 'a', 'c'])).to.equal(undefined);
  });

  it('warns when some query labels never occur in the gallery, naming them', () => {
    expect(checkQueryLabelsInGallery(['a', 'x', 'y', 'x'], ['a', 'b'])).to.equal('3 of 4 queries have a label that never occurs in the gallery ("x", "y"); they count as misses');
  });

  it('fails when none does (string labels against integer ones)', async () => {
    await expectDmlError(
      () => checkQueryLabelsInGallery(['cat', 'dog', 'cow', 'emu'], ['0', '1', '2', '3', '4']),
      'E_DATASET',
      'none of the 4 query labels occurs among the gallery labels (queries: "cat", "dog", "cow", ...; gallery: "0", "1", "2", ...); expected the query and gallery sets to share labels (string against integer labels?)',
    );
  });
});
