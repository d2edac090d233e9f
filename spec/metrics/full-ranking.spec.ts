/**
 * @file Tests of the metrics of the whole ranking (MRR, mAP): a hand-computed case, the numpy
 * references of scripts/fixtures/make_metric_fixtures.py (exact ties and duplicates; disjoint query and
 * gallery sets with lone queries; float rows where scikit-learn's average_precision_score agrees),
 * agreement with the first hit of the neighbour lists, and argument errors.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { expectDmlErrorSync } from '../helpers/expect-dml-error.js';
import { FullRankingAccumulator, type FullRankingMetrics, type FullRankingOptions } from '../../lib/metrics/full-ranking.js';
import { encodeLabels } from '../../lib/metrics/labels.js';

/** Row-major Float32 scores of every query against every gallery row, from float64 dot products. */
function scoresOf(queries: number[][], gallery: number[][]): Float32Array {
  const scores = new Float32Array(queries.length * gallery.length);
  queries.forEach((q, i) => gallery.forEach((g, j) => (scores[i * gallery.length + j] = q.reduce((sum, x, d) => sum + x * g[d]!, 0))));
  return scores;
}

/** Runs the accumulator over `scores` in blocks of `blockSize` queries. */
function evaluate(options: FullRankingOptions, scores: Float32Array, blockSize: number): FullRankingMetrics {
  const accumulator = new FullRankingAccumulator(options);
  const queries = options.queryLabelCodes.length;
  const galleryCount = options.galleryLabelCodes.length;
  for (let start = 0; start < queries; start += blockSize) {
    const count = Math.min(blockSize, queries - start);
    accumulator.add(start, count, scores.subarray(start * galleryCount, (start + count) * galleryCount));
  }
  return accumulator.result();
}

const identity = (count: number): Int32Array => Int32Array.from({ length: count }, (_, i) => i);

/** The fixtures' 4-hex-digit rows: component d is +0.25 if bit (15 - d) is set, else -0.25. */
const signRows = (rows: string[]): number[][] => rows.map((row) => Array.from({ length: 16 }, (_, d) => ((Number.parseInt(row, 16) >> (15 - d)) & 1 ? 0.25 : -0.25)));

function readFixture<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(`../fixtures/metrics/${name}`, import.meta.url), 'utf8')) as T;
}

interface Expected {
  mrr: number | null;
  map: number | null;
  sklearnMap?: number;
}

describe('metrics/full-ranking', () => {
  it('matches the hand-computed six-point case', () => {
    // Six unit vectors at 0, 30, 50, 115, 190, 240 degrees, labels A A B B A C (spec/metrics/retrieval.spec.ts):
    // q0 A hits at ranks 1, 5: RR 1, AP (1/1 + 2/5)/2 = 0.7.   q1 A hits at 2, 5: RR 1/2, AP (1/2 + 2/5)/2 = 0.45.
    // q2 B hit at 3: RR = AP = 1/3.   q3 B hit at 1: 1.   q4 A hits at 4, 5: RR 1/4, AP (1/4 + 2/5)/2 = 0.325.   q5 C lone.
    const points = [0, 30, 50, 115, 190, 240].map((a) => [Math.cos((a * Math.PI) / 180), Math.sin((a * Math.PI) / 180)]);
    const labels = encodeLabels(['A', 'A', 'B', 'B', 'A', 'C'], ['A', 'A', 'B', 'B', 'A', 'C']);
    const options = { queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes, querySelfIndex: identity(6) };
    const result = evaluate(options, scoresOf(points, points), 4);
    expect(result.mrr).to.be.closeTo((1 + 1 / 2 + 1 / 3 + 1 + 1 / 4) / 5, 1e-15);
    expect(result.map).to.be.closeTo((0.7 + 0.45 + 1 / 3 + 1 + 0.325) / 5, 1e-15);
  });

  it('ranks ties by gallery row and leaves out the query itself, not its duplicates', () => {
    // Rows 0, 1, 3 are the same vector (labels A, A, B), row 2 orthogonal (B). q3 (B): ties at 1 with rows 0 and 1
    // (both A), then row 2 (B): its one relevant item at rank 3. q2 (B): every score 0, ties by row: 0, 1, 3 -> rank 3.
    const points = [[1, 0], [1, 0], [0, 1], [1, 0]];
    const labels = encodeLabels(['A', 'A', 'B', 'B'], ['A', 'A', 'B', 'B']);
    const result = evaluate({ queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes, querySelfIndex: identity(4) }, scoresOf(points, points), 1);
    expect(result.mrr).to.be.closeTo((1 + 1 + 1 / 3 + 1 / 3) / 4, 1e-15);
    expect(result.map).to.be.closeTo((1 + 1 + 1 / 3 + 1 / 3) / 4, 1e-15);
  });

  it('matches the numpy reference on 2,000 points with exact ties and duplicates, in any block size', () => {
    const fixture = readFixture<{ embeddings: string[]; labels: string[]; expected: Expected }>('retrieval-ties.json');
    const points = signRows(fixture.embeddings);
    const labels = encodeLabels(fixture.labels, fixture.labels);
    const options = { queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes, querySelfIndex: identity(points.length) };
    const scores = scoresOf(points, points);
    const result = evaluate(options, scores, 300);
    expect(result.mrr).to.be.closeTo(fixture.expected.mrr!, 1e-12);
    expect(result.map).to.be.closeTo(fixture.expected.map!, 1e-12);
    expect(evaluate(options, scores, 2000)).to.deep.equal(result);
  });

  it('matches the numpy reference on disjoint query and gallery sets with lone queries', () => {
    const fixture = readFixture<{ queryEmbeddings: string[]; queryLabels: string[]; galleryEmbeddings: string[]; galleryLabels: string[]; expected: Expected }>(
      'retrieval-query-gallery.json',
    );
    const labels = encodeLabels(fixture.queryLabels, fixture.galleryLabels);
    const result = evaluate({ queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes }, scoresOf(signRows(fixture.queryEmbeddings), signRows(fixture.galleryEmbeddings)), 64);
    expect(result.mrr).to.be.closeTo(fixture.expected.mrr!, 1e-12);
    expect(result.map).to.be.closeTo(fixture.expected.map!, 1e-12);
  });

  it("gives scikit-learn's average_precision_score on float rows without near-ties", () => {
    const fixture = readFixture<{ embeddings: number[][]; labels: string[]; expected: Expected }>('retrieval-no-ties.json');
    const labels = encodeLabels(fixture.labels, fixture.labels);
    const options = { queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes, querySelfIndex: identity(fixture.labels.length) };
    const result = evaluate(options, scoresOf(fixture.embeddings, fixture.embeddings), 50);
    expect(result.map).to.be.closeTo(fixture.expected.sklearnMap!, 1e-12);
    expect(result.mrr).to.be.closeTo(fixture.expected.mrr!, 1e-12);
  });

  it('is null when every query is lone', () => {
    const labels = encodeLabels(['p', 'q'], ['p', 'q']);
    const result = evaluate({ queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes, querySelfIndex: identity(2) }, Float32Array.of(1, 0, 0, 1), 2);
    expect(result).to.deep.equal({ mrr: null, map: null });
  });

  it('rejects wrong score rows, repeated queries and early results', () => {
    const labels = encodeLabels(['a', 'a'], ['a', 'a', 'b']);
    const accumulator = new FullRankingAccumulator({ queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes });
    expectDmlErrorSync(() => accumulator.add(0, 2, new Float32Array(5)), 'E_ARG', /Float32Array of 6 values \(2 queries x 3 gallery rows\) for scores/);
    expectDmlErrorSync(() => accumulator.add(1, 2, new Float32Array(6)), 'E_ARG', /queryOffset\/queryCount/);
    accumulator.add(0, 1, Float32Array.of(1, 0, 0));
    expectDmlErrorSync(() => accumulator.result(), 'E_ARG', /scores of query 1 were not added/);
    expectDmlErrorSync(() => accumulator.add(0, 1, Float32Array.of(1, 0, 0)), 'E_ARG', /query 0 were added twice/);
    expectDmlErrorSync(() => new FullRankingAccumulator({ ...{ queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes }, querySelfIndex: Int32Array.of(0) }), 'E_ARG', /querySelfIndex/);
  });
});
