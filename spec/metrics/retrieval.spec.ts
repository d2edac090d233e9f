/**
 * @file Tests of the label encoding and the streaming retrieval metrics (Recall@K, Precision@1,
 * R-Precision, MAP@R, MAP@K): a hand-computed case, numpy references with exact ties and duplicates, lone
 * queries, self exclusion by index, and argument errors.
 */

import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { expectDmlErrorSync } from '../helpers/expect-dml-error.js';
import { countLabelCodes, encodeLabels } from '../../lib/metrics/labels.js';
import { RetrievalMetricsAccumulator, type RetrievalMetrics, type RetrievalMetricsOptions } from '../../lib/metrics/retrieval.js';
import type { NeighbourBlock } from '../../lib/search/neighbours.js';
import { bruteForceNeighbourBlocks, type Vectors } from '../helpers/brute-force-neighbours.js';

/** Unit vectors at the given angles (degrees) in 2-D. */
function unitCircle(anglesDegrees: number[]): Vectors {
  const values = new Float64Array(anglesDegrees.length * 2);
  anglesDegrees.forEach((angle, i) => {
    values[2 * i] = Math.cos((angle * Math.PI) / 180);
    values[2 * i + 1] = Math.sin((angle * Math.PI) / 180);
  });
  return { values, count: anglesDegrees.length, dim: 2 };
}

/** Decodes the fixtures' 4-hex-digit rows: component d is +0.25 if bit (15 - d) is set, else -0.25. */
function decodeSignRows(rows: string[]): Vectors {
  const dim = 16;
  const values = new Float64Array(rows.length * dim);
  rows.forEach((row, i) => {
    const bits = Number.parseInt(row, 16);
    for (let d = 0; d < dim; d++) values[i * dim + d] = (bits >> (dim - 1 - d)) & 1 ? 0.25 : -0.25;
  });
  return { values, count: rows.length, dim };
}

function readFixture<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(`../fixtures/metrics/${name}`, import.meta.url), 'utf8')) as T;
}

interface ExpectedRetrieval {
  queryCount: number;
  loneQueries: number;
  requiredNeighbours: number;
  recall: Record<string, number>;
  rPrecision: number | null;
  mapAtR: number | null;
  mapAtK: Record<string, number> | null;
  pmlPrecisionAt1: number | null;
}

function expectMatchesReference(actual: RetrievalMetrics, expected: ExpectedRetrieval): void {
  expect(actual.queryCount).to.equal(expected.queryCount);
  expect(actual.loneQueries).to.equal(expected.loneQueries);
  expect(Object.keys(actual.recall)).to.deep.equal(Object.keys(expected.recall));
  for (const [k, value] of Object.entries(expected.recall)) expect(actual.recall[Number(k)], `Recall@${k}`).to.be.closeTo(value, 1e-12);
  expect(actual.precisionAt1).to.equal(actual.recall[1]);
  expect(actual.rPrecision).to.be.a('number');
  expect(actual.mapAtR).to.be.a('number');
  expect(actual.rPrecision!).to.be.closeTo(expected.rPrecision!, 1e-12);
  expect(actual.mapAtR!).to.be.closeTo(expected.mapAtR!, 1e-12);
  expect(Object.keys(actual.mapAtK!)).to.deep.equal(Object.keys(expected.mapAtK!));
  for (const [k, value] of Object.entries(expected.mapAtK!)) expect(actual.mapAtK![Number(k)], `MAP@${k}`).to.be.closeTo(value, 1e-12);
  expect(actual.precisionAt1NonLone!).to.be.closeTo(expected.pmlPrecisionAt1!, 1e-12);
}

/** Runs the accumulator over brute-force neighbours with exactly `requiredNeighbours` columns. */
function evaluate(options: RetrievalMetricsOptions, queries: Vectors, gallery: Vectors, blockSize?: number): RetrievalMetrics {
  const accumulator = new RetrievalMetricsAccumulator(options);
  const blocks = bruteForceNeighbourBlocks({
    queries,
    gallery,
    k: accumulator.requiredNeighbours,
    ...(options.querySelfIndex ? { querySelfIndex: options.querySelfIndex } : {}),
    ...(blockSize ? { blockSize } : {}),
  });
  for (const block of blocks) accumulator.add(block);
  return accumulator.result();
}

const identity = (count: number): Int32Array => Int32Array.from({ length: count }, (_, i) => i);

describe('metrics/labels', () => {
  it('encodes query and gallery labels to shared codes in sorted label order', () => {
    const encoded = encodeLabels(['cat', 'owl', 'ant'], ['dog', 'cat', 'cat', 'ant']);
    expect(encoded.labelNames).to.deep.equal(['ant', 'cat', 'dog', 'owl']);
    expect([...encoded.queryCodes]).to.deep.equal([1, 3, 0]);
    expect([...encoded.galleryCodes]).to.deep.equal([2, 1, 1, 0]);
    expect([...encoded.galleryCountPerCode]).to.deep.equal([1, 2, 1, 0]);
  });

  it('gives codes that do not depend on item order', () => {
    const forward = encodeLabels(['b', 'a'], ['c', 'a']);
    const reversed = encodeLabels(['a', 'b'], ['a', 'c']);
    expect(forward.labelNames).to.deep.equal(reversed.labelNames);
    expect([...forward.queryCodes]).to.deep.equal([...reversed.queryCodes].reverse());
  });

  it('rejects non-string labels and out-of-range codes', () => {
    expectDmlErrorSync(() => encodeLabels(['a', 3 as unknown as string], []), 'E_ARG', /queryLabels\[1\]/);
    expectDmlErrorSync(() => countLabelCodes(Int32Array.of(0, 2), 2), 'E_ARG', /codes\[1\]/);
  });
});

describe('metrics/retrieval', () => {
  // Six unit vectors on the circle, labels A A B B A C. Angular distances (degrees) per query,
  // nearest first, self excluded (cosine similarity falls with the angle; no ties):
  //   q0 A (R=2): 1 A 30 | 2 B 50 | 3 B 115 | 5 C 120 | 4 A 170   hits at ranks 1, 5
  //   q1 A (R=2): 2 B 20 | 0 A 30 | 3 B 85  | 5 C 150 | 4 A 160   hits at ranks 2, 5
  //   q2 B (R=1): 1 A 20 | 0 A 50 | 3 B 65  | 4 A 140 | 5 C 170   hit at rank 3
  //   q3 B (R=1): 2 B 65 | 4 A 75 | 1 A 85  | 0 A 115 | 5 C 125   hit at rank 1
  //   q4 A (R=2): 5 C 50 | 3 B 75 | 2 B 140 | 1 A 160 | 0 A 170   hits at ranks 4, 5
  //   q5 C (R=0): lone
  // Recall@1 = (1+0+0+1+0+0)/6 = 1/3; Recall@2 = (1+1+0+1+0+0)/6 = 1/2; Recall@4 = (1+1+1+1+1+0)/6 = 5/6.
  // R-Precision over the 5 non-lone queries: (1/2 + 1/2 + 0 + 1 + 0)/5 = 2/5.
  // MAP@R: q0 (1/2)(P(1)=1) = 1/2; q1 (1/2)(P(2)=1/2) = 1/4; q2 0; q3 1; q4 0 -> (1/2 + 1/4 + 1)/5 = 0.35.
  const handPoints = unitCircle([0, 30, 50, 115, 190, 240]);
  const handLabels = encodeLabels(['A', 'A', 'B', 'B', 'A', 'C'], ['A', 'A', 'B', 'B', 'A', 'C']);
  const handOptions: RetrievalMetricsOptions = {
    queryLabelCodes: handLabels.queryCodes,
    galleryLabelCodes: handLabels.galleryCodes,
    recallK: [4, 1, 2],
    querySelfIndex: identity(6),
  };

  it('matches the hand-computed six-point case', () => {
    expect(RetrievalMetricsAccumulator.requiredNeighbours(handOptions)).to.equal(4);
    const result = evaluate(handOptions, handPoints, handPoints);
    expect(result.queryCount).to.equal(6);
    expect(result.loneQueries).to.equal(1);
    expect(result.recall).to.deep.equal({ 1: 2 / 6, 2: 3 / 6, 4: 5 / 6 });
    expect(Object.keys(result.recall)).to.deep.equal(['1', '2', '4']);
    expect(result.precisionAt1).to.equal(2 / 6);
    expect(result.rPrecision).to.equal(2 / 5);
    expect(result.mapAtR).to.equal(0.35);
    // MAP@K divides by the hits among the top K (PML's mean_average_precision with k = K):
    // K = 1: q0 1, q3 1 -> 2/5. K = 2: q0 1, q1 (1/2)/1, q3 1 -> 5/10.
    // K = 4: q0 1, q1 1/2, q2 (1/3)/1, q3 1, q4 (1/4)/1 -> (37/12)/5.
    expect(result.mapAtK![1]).to.be.closeTo(2 / 5, 1e-15);
    expect(result.mapAtK![2]).to.be.closeTo(1 / 2, 1e-15);
    expect(result.mapAtK![4]).to.be.closeTo(37 / 60, 1e-15);
    // Precision@1 over the five non-lone queries (PML's precision_at_1), Recall@1 over all six.
    expect(result.precisionAt1NonLone).to.equal(2 / 5);
    expect(result.definitions.recall).to.match(/lone queries counting as misses/);
  });

  it('matches the numpy reference on 2,000 points with exact ties and duplicates (query set = gallery set)', () => {
    const fixture = readFixture<{ embeddings: string[]; labels: string[]; recallK: number[]; expected: ExpectedRetrieval }>(
      'retrieval-ties.json',
    );
    const points = decodeSignRows(fixture.embeddings);
    const labels = encodeLabels(fixture.labels, fixture.labels);
    const options: RetrievalMetricsOptions = {
      queryLabelCodes: labels.queryCodes,
      galleryLabelCodes: labels.galleryCodes,
      recallK: fixture.recallK,
      querySelfIndex: identity(points.count),
    };
    const accumulator = new RetrievalMetricsAccumulator(options);
    expect(accumulator.requiredNeighbours).to.equal(fixture.expected.requiredNeighbours);
    const blocks = bruteForceNeighbourBlocks({
      queries: points,
      gallery: points,
      k: accumulator.requiredNeighbours,
      querySelfIndex: identity(points.count),
      blockSize: 150,
    });
    for (const block of blocks) accumulator.add(block);
    const result = accumulator.result();
    expectMatchesReference(result, fixture.expected);

    // Same blocks in reverse order: bit-identical values.
    const reversed = new RetrievalMetricsAccumulator(options);
    for (const block of [...blocks].reverse()) reversed.add(block);
    expect(reversed.result()).to.deep.equal(result);
  });

  it('matches the numpy reference on disjoint query and gallery sets', () => {
    const fixture = readFixture<{
      queryEmbeddings: string[];
      queryLabels: string[];
      galleryEmbeddings: string[];
      galleryLabels: string[];
      recallK: number[];
      expected: ExpectedRetrieval;
    }>('retrieval-query-gallery.json');
    const labels = encodeLabels(fixture.queryLabels, fixture.galleryLabels);
    const options: RetrievalMetricsOptions = {
      queryLabelCodes: labels.queryCodes,
      galleryLabelCodes: labels.galleryCodes,
      recallK: fixture.recallK,
    };
    expect(RetrievalMetricsAccumulator.requiredNeighbours(options)).to.equal(fixture.expected.requiredNeighbours);
    const result = evaluate(options, decodeSignRows(fixture.queryEmbeddings), decodeSignRows(fixture.galleryEmbeddings), 64);
    expect(result.loneQueries).to.be.greaterThan(0);
    expectMatchesReference(result, fixture.expected);
  });

  it('counts lone queries as misses in Recall@K and leaves them out of R-Precision and MAP@R', () => {
    // Hand case without its lone query q5: same sums, denominators 5 for everything.
    const withoutLone = evaluate(
      { ...handOptions, queryLabelCodes: handLabels.queryCodes.subarray(0, 5), querySelfIndex: identity(5) },
      { values: handPoints.values.subarray(0, 10), count: 5, dim: 2 },
      handPoints,
    );
    expect(withoutLone.loneQueries).to.equal(0);
    expect(withoutLone.recall).to.deep.equal({ 1: 2 / 5, 2: 3 / 5, 4: 5 / 5 });
    expect(withoutLone.rPrecision).to.equal(2 / 5);
    expect(withoutLone.mapAtR).to.equal(0.35);

    // Every query lone: recall 0, R-Precision and MAP@R null (not NaN).
    const allLone = encodeLabels(['p', 'q', 'r'], ['p', 'q', 'r']);
    const points = unitCircle([0, 10, 20]);
    const result = evaluate(
      { queryLabelCodes: allLone.queryCodes, galleryLabelCodes: allLone.galleryCodes, recallK: [1, 2], querySelfIndex: identity(3) },
      points,
      points,
    );
    expect(result).to.include({ queryCount: 3, loneQueries: 3, precisionAt1: 0, rPrecision: null, mapAtR: null, mapAtK: null, precisionAt1NonLone: null });
    expect(result.recall).to.deep.equal({ 1: 0, 2: 0 });
  });

  it('lets an exact duplicate of the query count as a hit but never the query itself', () => {
    // Rows 0, 1 and 3 are the same vector (labels A, A, B); row 2 is orthogonal (label B).
    // q0: 1 A, 3 B, 2 B -> hit at 1.  q1: 0 A, 3 B, 2 B -> hit at 1.
    // q2 (all similarities 0, ties by index): 0 A, 1 A, 3 B -> hit at 3.
    // q3: 0 A, 1 A, 2 B -> hit at 3. Dropping the first column of a ranking that still held q3
    // (0, 1, 3, 2: all three ties at similarity 1) would keep q3 itself at rank 2, a false hit.
    const points: Vectors = { values: Float64Array.of(1, 0, 1, 0, 0, 1, 1, 0), count: 4, dim: 2 };
    const labels = encodeLabels(['A', 'A', 'B', 'B'], ['A', 'A', 'B', 'B']);
    const options: RetrievalMetricsOptions = {
      queryLabelCodes: labels.queryCodes,
      galleryLabelCodes: labels.galleryCodes,
      recallK: [1, 2, 3],
      querySelfIndex: identity(4),
    };
    const result = evaluate(options, points, points);
    expect(result.recall).to.deep.equal({ 1: 0.5, 2: 0.5, 3: 1 });
    // R = 1 for every query: R-Precision = MAP@R = (1 + 1 + 0 + 0)/4.
    expect(result.rPrecision).to.equal(0.5);
    expect(result.mapAtR).to.equal(0.5);

    const withSelf: NeighbourBlock = {
      queryOffset: 3,
      queryCount: 1,
      k: 3,
      indices: Int32Array.of(0, 3, 2),
      similarities: Float32Array.of(1, 1, 0),
    };
    expectDmlErrorSync(() => new RetrievalMetricsAccumulator(options).add(withSelf), 'E_ARG', /query 3 contain the query itself/);
  });

  it('treats padding (-1) as a non-match', () => {
    const accumulator = new RetrievalMetricsAccumulator({
      queryLabelCodes: Int32Array.of(0),
      galleryLabelCodes: Int32Array.of(1, 0),
      recallK: [1, 4],
    });
    accumulator.add({ queryOffset: 0, queryCount: 1, k: 4, indices: Int32Array.of(0, 1, -1, -1), similarities: new Float32Array(4) });
    expect(accumulator.result()).to.include({ precisionAt1: 0, rPrecision: 0, mapAtR: 0 });
    expect(accumulator.result().recall).to.deep.equal({ 1: 0, 4: 1 });
  });

  describe('errors', () => {
    const codes = { queryLabelCodes: Int32Array.of(0, 1), galleryLabelCodes: Int32Array.of(0, 1, 1, 0, 1) };
    const block = (queryOffset: number, queryCount: number, k: number, indices: number[]): NeighbourBlock => ({
      queryOffset,
      queryCount,
      k,
      indices: Int32Array.from(indices),
      similarities: new Float32Array(indices.length),
    });

    it('rejects invalid K lists', () => {
      expectDmlErrorSync(() => new RetrievalMetricsAccumulator({ ...codes, recallK: [] }), 'E_ARG', /recallK/);
      expectDmlErrorSync(() => new RetrievalMetricsAccumulator({ ...codes, recallK: [1, 0] }), 'E_ARG', /recallK\[1\].*received 0/);
      expectDmlErrorSync(() => new RetrievalMetricsAccumulator({ ...codes, recallK: [1.5] }), 'E_ARG', /recallK\[0\]/);
      expectDmlErrorSync(() => new RetrievalMetricsAccumulator({ ...codes, recallK: [2, 1, 2] }), 'E_ARG', /duplicate/);
    });

    it('rejects empty sets, bad codes and inconsistent self indices', () => {
      expectDmlErrorSync(
        () => new RetrievalMetricsAccumulator({ queryLabelCodes: new Int32Array(0), galleryLabelCodes: Int32Array.of(0), recallK: [1] }),
        'E_EMPTY',
        /query set is empty/,
      );
      expectDmlErrorSync(
        () => new RetrievalMetricsAccumulator({ queryLabelCodes: Int32Array.of(-1), galleryLabelCodes: Int32Array.of(0), recallK: [1] }),
        'E_ARG',
        /queryLabelCodes\[0\]/,
      );
      expectDmlErrorSync(
        () => new RetrievalMetricsAccumulator({ ...codes, recallK: [1], querySelfIndex: Int32Array.of(0, 0) }),
        'E_ARG',
        /label code 1 for querySelfIndex\[1\]/,
      );
      expectDmlErrorSync(
        () => new RetrievalMetricsAccumulator({ ...codes, recallK: [1], querySelfIndex: Int32Array.of(0) }),
        'E_ARG',
        /length 2 .*for querySelfIndex/,
      );
    });

    it('rejects blocks with fewer neighbours than needed', () => {
      // Label 1 has 3 gallery items, so R = 3 for query 1 and 3 neighbours are needed even for K = 1.
      const accumulator = new RetrievalMetricsAccumulator({ ...codes, recallK: [1] });
      expect(accumulator.requiredNeighbours).to.equal(3);
      expectDmlErrorSync(() => accumulator.add(block(0, 2, 2, [0, 1, 1, 2])), 'E_ARG', /at least 3 neighbours.*block\.k but received 2/);
    });

    it('rejects out-of-range blocks and indices, repeated queries and early results', () => {
      const accumulator = new RetrievalMetricsAccumulator({ ...codes, recallK: [1] });
      expectDmlErrorSync(() => accumulator.add(block(1, 2, 3, [0, 1, 2, 0, 1, 2])), 'E_ARG', /block\.queryCount/);
      expectDmlErrorSync(() => accumulator.add(block(0, 1, 3, [0, 1, 5])), 'E_ARG', /block\.indices\[2\]/);
      expectDmlErrorSync(() => accumulator.add(block(0, 1, 3, [0, 1])), 'E_ARG', /length 3 .*for block\.indices/);
      accumulator.add(block(0, 1, 3, [0, 1, 2]));
      expectDmlErrorSync(() => accumulator.result(), 'E_ARG', /1 of 2 queries.*first missing: query 1/);
      expectDmlErrorSync(() => accumulator.add(block(0, 1, 3, [0, 1, 2])), 'E_ARG', /query 0 were added twice/);
      accumulator.add(block(1, 1, 3, [1, 2, 4]));
      expect(accumulator.result().recall).to.deep.equal({ 1: 1 });
    });
  });
});
