/**
 * @file The evaluation's diagnostics (lib/eval/diagnostics.ts) against float64 numpy
 * (scripts/reference/numpy_eval_diagnostics.py, spec/fixtures/eval/diagnostics.json): the positive and
 * negative pair-similarity histograms and means over every pair (a query never with itself), and the
 * label pairs most often confused in the top 4, through evaluateEmbeddings; the sampled histograms of
 * a large set (seeded, the asked number of pairs, near the exact means); the bins' edges.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { similarityBin, similarityHistograms } from '../../lib/eval/diagnostics.js';
import { evaluateEmbeddings } from '../../lib/eval/evaluate-embeddings.js';
import { encodeLabels } from '../../lib/metrics/labels.js';

interface Fixture {
  dim: number;
  k: number;
  vectors: number[];
  labels: string[];
  bins: number;
  positiveCounts: number[];
  negativeCounts: number[];
  positiveMean: number;
  negativeMean: number;
  confusions: Array<{ queryLabel: string; neighbourLabel: string; count: number; fraction: number }>;
}

const fixture = JSON.parse(readFileSync('spec/fixtures/eval/diagnostics.json', 'utf8')) as Fixture;
const set = {
  vectors: Float32Array.from(fixture.vectors),
  count: fixture.labels.length,
  dim: fixture.dim,
  labels: fixture.labels,
  ids: fixture.labels.map((_, i) => `item-${i}`),
};

describe('evaluation diagnostics', () => {
  it('histograms, means and the top-4 confusions as numpy computes them', async () => {
    const { diagnostics } = await evaluateEmbeddings(set, null, { ks: [1, 4], clusterCounts: ['1x'] });
    expect(diagnostics.similarities.mode).to.equal('all');
    expect(diagnostics.similarities.bins).to.equal(fixture.bins);
    expect(diagnostics.similarities.positiveCounts).to.deep.equal(fixture.positiveCounts);
    expect(diagnostics.similarities.negativeCounts).to.deep.equal(fixture.negativeCounts);
    expect(diagnostics.similarities.positiveMean).to.be.closeTo(fixture.positiveMean, 1e-6);
    expect(diagnostics.similarities.negativeMean).to.be.closeTo(fixture.negativeMean, 1e-6);
    expect(diagnostics.confusionK).to.equal(fixture.k);
    expect(diagnostics.confusions).to.have.length(fixture.confusions.length);
    diagnostics.confusions.forEach((c, i) => {
      const expected = fixture.confusions[i]!;
      expect([c.queryLabel, c.neighbourLabel, c.count]).to.deep.equal([expected.queryLabel, expected.neighbourLabel, expected.count]);
      expect(c.fraction).to.be.closeTo(expected.fraction, 1e-12);
    });
    // Every ordered pair but the 90 self-pairs is counted once.
    const total = [...fixture.positiveCounts, ...fixture.negativeCounts].reduce((a, b) => a + b, 0);
    expect(total).to.equal(90 * 89);
  });

  it('samples the asked number of pairs of each kind when every pair would cost too much, seeded', () => {
    const { queryCodes, galleryCodes } = encodeLabels(set.labels, set.labels);
    const self = Int32Array.from(set.labels, (_, i) => i);
    const sample = (seed: number): ReturnType<typeof similarityHistograms> => similarityHistograms(set, set, self, queryCodes, galleryCodes, seed, { maxExactWork: 0, sampledPairs: 3000 });
    const a = sample(1);
    expect(a.mode).to.equal('sampled');
    expect(a.positiveCounts.reduce((x, y) => x + y, 0)).to.equal(3000);
    expect(a.negativeCounts.reduce((x, y) => x + y, 0)).to.equal(3000);
    expect(a.positiveMean as number).to.be.closeTo(fixture.positiveMean, 0.02);
    expect(a.negativeMean as number).to.be.closeTo(fixture.negativeMean, 0.02);
    expect(sample(1)).to.deep.equal(a);
    expect(sample(2)).to.not.deep.equal(a);
    // Two items per label at similarity 0.5 (each with itself: 1): every sampled positive pair lands in 0.5's bin, never in 1's.
    const c = Math.sqrt(3) / 2;
    const tiny = { vectors: Float32Array.from([1, 0, 0.5, c, -1, 0, -0.5, -c]), count: 4, dim: 2, labels: ['a', 'a', 'b', 'b'], ids: ['0', '1', '2', '3'] };
    const codes = encodeLabels(tiny.labels, tiny.labels);
    const h = similarityHistograms(tiny, tiny, Int32Array.from([0, 1, 2, 3]), codes.queryCodes, codes.galleryCodes, 0, { maxExactWork: 0, sampledPairs: 200 });
    expect(h.positiveCounts[similarityBin(0.5)]).to.equal(200);
  });

  it('bins [-1, 1] in equal parts, 1 in the last', () => {
    expect([-1, -0.95, -0.9499, 0, 0.999, 1, 1.0000001].map((s) => similarityBin(s, 40))).to.deep.equal([0, 1, 1, 20, 39, 39, 39]);
  });
});
