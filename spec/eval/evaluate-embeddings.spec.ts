/**
 * @file Tests of the clustering part of evaluateEmbeddings: the NMI+ curve comes from one k-means sweep
 * whose every point equals a separate k-means run with the recorded parameters (so sharing the seeding
 * across cluster counts changes nothing), the recorded k-means parameters are the resolved defaults,
 * and the clustered set is the union of queries and gallery or the queries alone.
 */
import { expect } from 'chai';
import type { EmbeddingSet } from '../../lib/embed/embedding-set.js';
import { evaluateEmbeddings, type EvaluateEmbeddingsOptions } from '../../lib/eval/evaluate-embeddings.js';
import { normalizedMutualInformation } from '../../lib/metrics/clustering.js';
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
  clusterCountSpecs: ['1x', '3x', '10x'],
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
    expect(metrics.nmiCurve.map((p) => p.k)).to.deep.equal([6, 18, 60]);
    for (const point of metrics.nmiCurve) {
      const alone = await kmeans(set.vectors, set.count, set.dim, { k: point.k, ...parameters.kmeans });
      expect(point.nmi, `K ${point.k}`).to.equal(normalizedMutualInformation(codes, alone.assignments));
      expect([point.inertia, point.iterations, point.converged]).to.deep.equal([alone.inertia, alone.iterationsRun, alone.converged]);
    }
    expect(metrics.nmi).to.equal(metrics.nmiCurve[0]?.nmi);
  });

  it('passes the k-means options through (random seeding, an iteration cap)', async () => {
    const { metrics, parameters } = await evaluateEmbeddings(set, null, { ...OPTIONS, kmeans: { seed: 7, init: 'random', maxIterations: 1, tolerance: 0 } });
    expect(parameters.kmeans).to.include({ init: 'random', maxIterations: 1, tolerance: 0 });
    for (const point of metrics.nmiCurve) expect(point.iterations, `K ${point.k}`).to.be.at.most(1);
    const alone = await kmeans(set.vectors, set.count, set.dim, { k: 6, seed: 7, init: 'random', maxIterations: 1, tolerance: 0 });
    expect(metrics.nmi).to.equal(normalizedMutualInformation(codes, alone.assignments));
  });

  it('clusters queries and gallery together by default, the queries alone with clusterSet query', async () => {
    const gallery = clusteredSet(6, 10, 8, 'g', 2);
    const union = await evaluateEmbeddings(set, gallery, { ...OPTIONS, clusterCountSpecs: ['1x'] });
    const queriesOnly = await evaluateEmbeddings(set, gallery, { ...OPTIONS, clusterCountSpecs: ['1x'], clusterSet: 'query' });
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
  });
});
