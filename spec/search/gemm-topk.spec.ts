/**
 * @file Tests of the GEMM + TopK kernel. Most data are vectors in {±0.25}^16 (and biases in
 * multiples of 1/64), whose dot products are exact in float32 and float64 alike, so onnxruntime's
 * results can be compared exactly with a JavaScript reference, including the order of the many ties.
 */
import { expect } from 'chai';
import { gemmTopK, type GemmTopKOptions } from '../../lib/search/gemm-topk.js';
import type { NeighbourBlock } from '../../lib/search/neighbours.js';
import { DmlError } from '../../lib/errors.js';
import { Rng } from '../../lib/util/rng.js';

const DIM = 16;

function signVectors(rng: Rng, count: number): Float32Array {
  return Float32Array.from({ length: count * DIM }, () => (rng.nextUint32() & 1 ? 0.25 : -0.25));
}

async function collect(generator: AsyncGenerator<NeighbourBlock>): Promise<NeighbourBlock[]> {
  const blocks: NeighbourBlock[] = [];
  for await (const block of generator) blocks.push(block);
  return blocks;
}

/** Rows of k (index, score) by (score desc, index asc), padded with (-1, -Infinity); exact for this data. */
function reference(queries: Float32Array, gallery: Float32Array, k: number, bias?: Float32Array): { indices: number[]; scores: number[] } {
  const nq = queries.length / DIM;
  const ng = gallery.length / DIM;
  const indices: number[] = [];
  const scores: number[] = [];
  for (let q = 0; q < nq; q++) {
    const row: { index: number; score: number }[] = [];
    for (let g = 0; g < ng; g++) {
      let dot = bias?.[g] ?? 0;
      for (let d = 0; d < DIM; d++) dot += (queries[q * DIM + d] as number) * (gallery[g * DIM + d] as number);
      row.push({ index: g, score: dot });
    }
    row.sort((a, b) => b.score - a.score || a.index - b.index);
    for (let j = 0; j < k; j++) {
      indices.push(row[j]?.index ?? -1);
      scores.push(row[j]?.score ?? -Infinity);
    }
  }
  return { indices, scores };
}

function concat(blocks: NeighbourBlock[]): { indices: number[]; scores: number[] } {
  return {
    indices: blocks.flatMap((b) => Array.from(b.indices)),
    scores: blocks.flatMap((b) => Array.from(b.similarities)),
  };
}

async function expectArgError(options: () => AsyncGenerator<NeighbourBlock>, pattern: RegExp): Promise<void> {
  try {
    await collect(options());
  } catch (err) {
    expect(err).to.be.instanceOf(DmlError);
    expect((err as DmlError).code).to.equal('E_ARG');
    expect((err as DmlError).message).to.match(pattern);
    return;
  }
  expect.fail('expected an E_ARG DmlError');
}

describe('search/gemm-topk', () => {
  const rng = new Rng(2024);
  const queries = signVectors(rng, 45);
  const gallery = signVectors(rng, 1500);

  it('orders many exact ties by gallery index ascending, for k from 1 to the whole gallery', async () => {
    for (const k of [1, 2, 10, 64, 700, 1500]) {
      const blocks = await collect(gemmTopK(queries, 45, gallery, 1500, DIM, { k, chunkSize: 20 }));
      const got = concat(blocks);
      const expected = reference(queries, gallery, k);
      expect(got.indices, `k=${k} indices`).to.deep.equal(expected.indices);
      expect(got.scores, `k=${k} scores`).to.deep.equal(expected.scores);
      if (k === 64) {
        // The data really are tie-heavy: most adjacent pairs within a row share a score.
        let ties = 0;
        for (let i = 1; i < got.scores.length; i++) if (i % k !== 0 && got.scores[i] === got.scores[i - 1]) ties++;
        expect(ties).to.be.above(0.8 * 45 * (k - 1));
      }
    }
  });

  it('splits queries into chunks with correct offsets and counts', async () => {
    const blocks = await collect(gemmTopK(queries, 45, gallery, 1500, DIM, { k: 3, chunkSize: 20 }));
    expect(blocks.map((b) => [b.queryOffset, b.queryCount, b.k, b.indices.length])).to.deep.equal([
      [0, 20, 3, 60],
      [20, 20, 3, 60],
      [40, 5, 3, 15],
    ]);
    const whole = await collect(gemmTopK(queries, 45, gallery, 1500, DIM, { k: 3 }));
    expect(whole).to.have.length(1);
    expect(concat(whole)).to.deep.equal(concat(blocks));
  });

  it('adds a per-gallery-row bias before ranking (the k-means assignment form)', async () => {
    const bias = Float32Array.from({ length: 1500 }, () => (rng.nextInt(129) - 64) / 64);
    for (const k of [1, 5]) {
      const got = concat(await collect(gemmTopK(queries, 45, gallery, 1500, DIM, { k, bias, chunkSize: 7 })));
      expect(got).to.deep.equal(reference(queries, gallery, k, bias));
    }
  });

  it('returns the nearest centroid with bias -|c|^2/2 on float data', async () => {
    const dim = 8;
    const points = Float32Array.from({ length: 200 * dim }, () => rng.nextGaussian());
    const centroids = Float32Array.from({ length: 12 * dim }, () => rng.nextGaussian());
    const bias = new Float32Array(12);
    for (let c = 0; c < 12; c++) {
      let n = 0;
      for (let d = 0; d < dim; d++) n += (centroids[c * dim + d] as number) ** 2;
      bias[c] = -n / 2;
    }
    const [block] = await collect(gemmTopK(points, 200, centroids, 12, dim, { k: 1, bias }));
    for (let i = 0; i < 200; i++) {
      let best = -1;
      let bestDistance = Infinity;
      for (let c = 0; c < 12; c++) {
        let s = 0;
        for (let d = 0; d < dim; d++) s += ((points[i * dim + d] as number) - (centroids[c * dim + d] as number)) ** 2;
        if (s < bestDistance) {
          bestDistance = s;
          best = c;
        }
      }
      expect(block?.indices[i], `point ${i}`).to.equal(best);
    }
  });

  it('clamps k to the gallery size and pads rows with -1 / -Infinity', async () => {
    const small = gallery.subarray(0, 3 * DIM);
    const got = concat(await collect(gemmTopK(queries.subarray(0, 4 * DIM), 4, small, 3, DIM, { k: 5 })));
    expect(got).to.deep.equal(reference(queries.subarray(0, 4 * DIM), small, 5));
    expect(got.indices.slice(0, 5)).to.include.members([-1]);
    expect(got.indices.filter((i) => i === -1)).to.have.length(8);
    expect(got.scores.filter((s) => s === -Infinity)).to.have.length(8);
  });

  it('pads every row for an empty gallery and yields nothing for no queries', async () => {
    const empty = await collect(gemmTopK(queries.subarray(0, 2 * DIM), 2, new Float32Array(0), 0, DIM, { k: 2 }));
    expect(concat(empty)).to.deep.equal({ indices: [-1, -1, -1, -1], scores: [-Infinity, -Infinity, -Infinity, -Infinity] });
    expect(await collect(gemmTopK(new Float32Array(0), 0, gallery, 1500, DIM, { k: 2 }))).to.deep.equal([]);
  });

  it('names bad arguments', async () => {
    const run = (options: GemmTopKOptions, q = queries, g = gallery) => () => gemmTopK(q, 45, g, 1500, DIM, options);
    await expectArgError(run({ k: 0 }), /^Expected a positive integer for k but received 0$/);
    await expectArgError(run({ k: 1.5 }), /for k but received 1.5/);
    await expectArgError(run({ k: 1, chunkSize: 0 }), /^Expected a positive integer for chunkSize but received 0$/);
    await expectArgError(run({ k: 1 }, queries.subarray(1)), /^Expected 720 \(45 rows x 16 dims\) for queries.length but received 719$/);
    await expectArgError(run({ k: 1 }, queries, gallery.subarray(16)), /for gallery.length but received 23984/);
    await expectArgError(run({ k: 1, bias: new Float32Array(3) }), /^Expected 1500 \(1500 rows x 1 dims\) for bias.length but received 3$/);
    await expectArgError(run({ k: 1, threads: 0 }), /for threads but received 0/);
    await expectArgError(() => gemmTopK(queries, 45, gallery, 1500, 0, { k: 1 }), /for dim but received 0/);
  });
});
