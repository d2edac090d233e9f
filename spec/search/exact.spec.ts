/**
 * @file Tests of exact search against a brute-force JavaScript search: random data across chunk
 * boundaries, exact ties, exact duplicates, self-exclusion by id, small galleries, progress and
 * cancellation.
 */
import { expect } from 'chai';
import { exactSearch, type ExactSearchOptions } from '../../lib/search/exact.js';
import type { NeighbourBlock } from '../../lib/search/neighbours.js';
import { DmlError } from '../../lib/errors.js';
import { Rng } from '../../lib/util/rng.js';

function normalisedGaussian(rng: Rng, count: number, dim: number): Float32Array {
  const out = new Float32Array(count * dim);
  for (let i = 0; i < count; i++) {
    let norm = 0;
    const row = Array.from({ length: dim }, () => rng.nextGaussian());
    for (const v of row) norm += v * v;
    row.forEach((v, d) => (out[i * dim + d] = v / Math.sqrt(norm)));
  }
  return out;
}

interface Rows {
  indices: number[];
  similarities: number[];
}

/** Brute force in float64: rows of k by (similarity desc, index asc), own row excluded, padded. */
function bruteForce(queries: Float32Array, gallery: Float32Array, dim: number, k: number, selfIndex?: Int32Array): Rows {
  const indices: number[] = [];
  const similarities: number[] = [];
  for (let q = 0; q < queries.length / dim; q++) {
    const row: { index: number; similarity: number }[] = [];
    for (let g = 0; g < gallery.length / dim; g++) {
      if (g === selfIndex?.[q]) continue;
      let dot = 0;
      for (let d = 0; d < dim; d++) dot += (queries[q * dim + d] as number) * (gallery[g * dim + d] as number);
      row.push({ index: g, similarity: dot });
    }
    row.sort((a, b) => b.similarity - a.similarity || a.index - b.index);
    for (let j = 0; j < k; j++) {
      indices.push(row[j]?.index ?? -1);
      similarities.push(row[j]?.similarity ?? -Infinity);
    }
  }
  return { indices, similarities };
}

async function search(
  queries: Float32Array,
  gallery: Float32Array,
  dim: number,
  options: ExactSearchOptions,
): Promise<{ rows: Rows; blocks: NeighbourBlock[] }> {
  const blocks: NeighbourBlock[] = [];
  for await (const block of exactSearch(queries, queries.length / dim, gallery, gallery.length / dim, dim, options)) blocks.push(block);
  return {
    blocks,
    rows: {
      indices: blocks.flatMap((b) => Array.from(b.indices)),
      similarities: blocks.flatMap((b) => Array.from(b.similarities)),
    },
  };
}

function expectSameRows(got: Rows, expected: Rows, tolerance: number): void {
  expect(got.indices).to.deep.equal(expected.indices);
  expect(got.similarities).to.have.length(expected.similarities.length);
  got.similarities.forEach((s, i) => {
    const e = expected.similarities[i] as number;
    if (e === -Infinity) expect(s).to.equal(-Infinity);
    else expect(Math.abs(s - e), `entry ${i}`).to.be.at.most(tolerance);
  });
}

describe('search/exact', () => {
  const dim = 24;
  const rng = new Rng(99);
  const gallery = normalisedGaussian(rng, 300, dim);
  const queries = normalisedGaussian(rng, 70, dim);

  it('agrees with brute force on random data across chunk boundaries', async () => {
    for (const [k, chunkSize] of [
      [10, 16],
      [1, 7],
      [300, 64],
    ] as const) {
      const { rows, blocks } = await search(queries, gallery, dim, { k, chunkSize });
      expect(blocks.map((b) => b.queryCount)).to.deep.equal(
        Array.from({ length: Math.ceil(70 / chunkSize) }, (_, i) => Math.min(chunkSize, 70 - i * chunkSize)),
      );
      expectSameRows(rows, bruteForce(queries, gallery, dim, k), 1e-6);
    }
  });

  it('orders exact duplicates in the gallery by index, with identical similarities', async () => {
    // Gallery: 300 rows, then copies of rows 5, 17 and 5 again appended (rows 300, 301, 302).
    const withCopies = new Float32Array(303 * dim);
    withCopies.set(gallery);
    withCopies.set(gallery.subarray(5 * dim, 6 * dim), 300 * dim);
    withCopies.set(gallery.subarray(17 * dim, 18 * dim), 301 * dim);
    withCopies.set(gallery.subarray(5 * dim, 6 * dim), 302 * dim);
    const probe = new Float32Array(2 * dim);
    probe.set(gallery.subarray(5 * dim, 6 * dim));
    probe.set(gallery.subarray(17 * dim, 18 * dim), dim);
    const { rows } = await search(probe, withCopies, dim, { k: 4, chunkSize: 1 });
    expect(rows.indices.slice(0, 3)).to.deep.equal([5, 300, 302]);
    expect(rows.indices.slice(4, 6)).to.deep.equal([17, 301]);
    expect(rows.similarities[0]).to.equal(rows.similarities[1]).and.to.equal(rows.similarities[2]);
    expect(rows.similarities[4]).to.equal(rows.similarities[5]);
    expectSameRows(rows, bruteForce(probe, withCopies, dim, 4), 1e-6);
  });

  it('agrees exactly with brute force on tie-heavy {±0.25}^16 data', async () => {
    const signs = Float32Array.from({ length: 400 * 16 }, () => (rng.nextUint32() & 1 ? 0.25 : -0.25));
    const q = signs.subarray(0, 40 * 16);
    const { rows } = await search(q, signs, 16, { k: 25, chunkSize: 9 });
    expectSameRows(rows, bruteForce(q, signs, 16, 25), 0);
  });

  it('returns the whole score rows with withScores, the scores TopK ranked', async () => {
    const selfIndex = Int32Array.from({ length: 70 }, (_, i) => (i % 3 === 0 ? i : -1));
    const { blocks } = await search(queries, gallery, dim, { k: 5, chunkSize: 16, selfIndex, withScores: true });
    for (const block of blocks) {
      const scores = block.scores as Float32Array;
      expect(scores).to.have.length(block.queryCount * 300);
      for (let q = 0; q < block.queryCount; q++) {
        const row = scores.subarray(q * 300, (q + 1) * 300);
        // Each neighbour's similarity is its entry of the score row (the same float32 tensor).
        for (let j = 0; j < 5; j++) expect(row[block.indices[q * 5 + j] as number]).to.equal(block.similarities[q * 5 + j]);
        const query = block.queryOffset + q;
        for (const g of [0, 150, 299]) {
          let dot = 0;
          for (let d = 0; d < dim; d++) dot += (queries[query * dim + d] as number) * (gallery[g * dim + d] as number);
          expect(Math.abs((row[g] as number) - dot)).to.be.at.most(1e-6);
        }
      }
    }
    const { blocks: without } = await search(queries, gallery, dim, { k: 5, chunkSize: 16 });
    expect(without.every((b) => b.scores === undefined)).to.equal(true);
  });

  it('excludes each query by id, keeping its exact duplicates as neighbours', async () => {
    // Query set = gallery set; row 40 duplicates row 3 and row 41 duplicates row 7.
    const set = normalisedGaussian(rng, 42, 8);
    set.copyWithin(40 * 8, 3 * 8, 4 * 8);
    set.copyWithin(41 * 8, 7 * 8, 8 * 8);
    const selfIndex = Int32Array.from({ length: 42 }, (_, i) => i);
    const { rows } = await search(set, set, 8, { k: 5, selfIndex, chunkSize: 10 });
    for (let q = 0; q < 42; q++) expect(rows.indices.slice(q * 5, q * 5 + 5), `query ${q}`).to.not.include(q);
    expect(rows.indices[3 * 5]).to.equal(40);
    expect(rows.indices[40 * 5]).to.equal(3);
    expect(rows.indices[7 * 5]).to.equal(41);
    expect(rows.indices[41 * 5]).to.equal(7);
    expectSameRows(rows, bruteForce(set, set, 8, 5, selfIndex), 1e-6);
  });

  it('drops the (k+1)-th candidate when the query is in the gallery but not among its top k+1, and handles -1', async () => {
    // Query 0 is declared to be gallery row 250 (a different vector, far down its ranking): by id,
    // row 250 is removed wherever it is and the first k stay.
    const selfIndex = Int32Array.from({ length: 70 }, (_, i) => (i === 0 ? 250 : i % 3 === 0 ? -1 : i));
    const { rows } = await search(queries, gallery, dim, { k: 6, selfIndex, chunkSize: 32 });
    expectSameRows(rows, bruteForce(queries, gallery, dim, 6, selfIndex), 1e-6);
  });

  it('pads rows when the gallery (after self-exclusion) is smaller than k', async () => {
    const small = gallery.subarray(0, 3 * dim);
    const { rows } = await search(small, small, dim, { k: 5, selfIndex: Int32Array.from([0, 1, 2]) });
    expect(rows.indices.filter((i) => i === -1)).to.have.length(9);
    expectSameRows(rows, bruteForce(small, small, dim, 5, Int32Array.from([0, 1, 2])), 1e-6);
    const noSelf = await search(small.subarray(0, dim), small, dim, { k: 4 });
    expect(noSelf.rows.indices[3]).to.equal(-1);
    expect(noSelf.rows.similarities[3]).to.equal(-Infinity);
  });

  it('reports progress per block and cancels between blocks', async () => {
    const progress: [number, number][] = [];
    await search(queries, gallery, dim, { k: 2, chunkSize: 30, onProgress: (done, total) => progress.push([done, total]) });
    expect(progress).to.deep.equal([
      [30, 70],
      [60, 70],
      [70, 70],
    ]);
    const controller = new AbortController();
    let seen = 0;
    try {
      for await (const block of exactSearch(queries, 70, gallery, 300, dim, { k: 2, chunkSize: 30, signal: controller.signal })) {
        seen += block.queryCount;
        controller.abort();
      }
      expect.fail('expected cancellation');
    } catch (err) {
      expect((err as DmlError).code).to.equal('E_CANCELLED');
      expect((err as DmlError).message).to.equal('Exact search cancelled after 30 of 70 queries');
    }
    expect(seen).to.equal(30);
  });

  it('names bad arguments', async () => {
    const cases: [ExactSearchOptions, RegExp][] = [
      [{ k: 0 }, /^Expected a positive integer for k but received 0$/],
      [{ k: 2, selfIndex: new Int32Array(3) }, /^Expected queryCount \(70\) for selfIndex.length but received 3$/],
      [{ k: 2, selfIndex: new Int32Array(70).fill(300) }, /^Expected -1 or a gallery row in \[0, 300\) for selfIndex\[0\] but received 300$/],
      [{ k: 2, selfIndex: [1, 2] as unknown as Int32Array }, /for selfIndex but received array of length 2/],
    ];
    for (const [options, pattern] of cases) {
      try {
        await search(queries, gallery, dim, options);
        expect.fail('expected an error');
      } catch (err) {
        expect((err as DmlError).code).to.equal('E_ARG');
        expect((err as DmlError).message).to.match(pattern);
      }
    }
  });
});
