/**
 * @file Tests of the HNSW wrapper. Acceptance: on a clustered 20,000 x 128 set (200 Gaussian centres
 * plus noise, L2-normalised, seeded) the default settings reach recall@10 >= 0.99 against exact
 * search. Also: ef raised to k + 1, save/load round trip, self-exclusion by id, tie order, determinism.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { exactSearch } from '../../lib/search/exact.js';
import { HnswIndex, type HnswSearchOptions } from '../../lib/search/hnsw.js';
import type { NeighbourBlock } from '../../lib/search/neighbours.js';
import { Rng } from '../../lib/util/rng.js';

/** `count` L2-normalised rows: a random one of the centres plus Gaussian noise of `noise` per dimension. */
function clustered(rng: Rng, centres: Float64Array[], count: number, noise: number): Float32Array {
  const dim = (centres[0] as Float64Array).length;
  const out = new Float32Array(count * dim);
  for (let i = 0; i < count; i++) {
    const centre = centres[rng.nextInt(centres.length)] as Float64Array;
    const row = Array.from(centre, (v) => v + noise * rng.nextGaussian());
    const norm = Math.sqrt(row.reduce((s, v) => s + v * v, 0));
    row.forEach((v, d) => (out[i * dim + d] = v / norm));
  }
  return out;
}

function gaussianCentres(rng: Rng, count: number, dim: number): Float64Array[] {
  return Array.from({ length: count }, () => Float64Array.from({ length: dim }, () => rng.nextGaussian()));
}

async function rows(blocks: AsyncGenerator<NeighbourBlock>): Promise<{ indices: Int32Array; similarities: Float32Array }> {
  const all: NeighbourBlock[] = [];
  for await (const block of blocks) all.push(block);
  return {
    indices: Int32Array.from(all.flatMap((b) => Array.from(b.indices))),
    similarities: Float32Array.from(all.flatMap((b) => Array.from(b.similarities))),
  };
}

/** Fraction of the exact top-k ids that the approximate top-k contains. */
function recall(approx: Int32Array, exact: Int32Array, k: number): number {
  let hits = 0;
  for (let q = 0; q < exact.length / k; q++) {
    const found = new Set(approx.subarray(q * k, (q + 1) * k));
    for (const id of exact.subarray(q * k, (q + 1) * k)) if (found.has(id)) hits++;
  }
  return hits / exact.length;
}

describe('search/hnsw', function () {
  this.timeout(120_000);

  describe('acceptance: clustered 20,000 x 128, default settings', () => {
    const N = 20_000;
    const D = 128;
    const rng = new Rng(20_000);
    const centres = gaussianCentres(rng, 200, D);
    const gallery = clustered(rng, centres, N, 0.3);
    const queries = clustered(rng, centres, 1000, 0.3);
    let index: HnswIndex;

    before(async () => {
      index = await HnswIndex.build(gallery, N, D, { seed: 7 });
    });

    it('reaches recall@10 >= 0.99 against exact search on held-out queries', async () => {
      expect(index.params).to.deep.equal({ space: 'cosine', m: 16, efConstruction: 200, ef: 64, seed: 7 });
      const approx = await rows(index.search(queries, 1000, { k: 10 }));
      const exact = await rows(exactSearch(queries, 1000, gallery, N, D, { k: 10 }));
      const r = recall(approx.indices, exact.indices, 10);
      expect(r).to.be.at.least(0.99);
      // Where both found the same neighbour, they agree on its similarity (float32 rounding apart).
      for (let i = 0; i < 10; i++) {
        if (approx.indices[i] === exact.indices[i]) {
          expect(Math.abs((approx.similarities[i] as number) - (exact.similarities[i] as number))).to.be.below(1e-5);
        }
      }
    });

    it('excludes gallery rows used as queries by id, with recall@10 >= 0.99 against exact self-excluding search', async () => {
      const count = 500;
      const selfIndex = Int32Array.from({ length: count }, (_, i) => i * 40);
      const probe = new Float32Array(count * D);
      selfIndex.forEach((row, q) => probe.set(gallery.subarray(row * D, (row + 1) * D), q * D));
      const approx = await rows(index.search(probe, count, { k: 10, selfIndex }));
      const exact = await rows(exactSearch(probe, count, gallery, N, D, { k: 10, selfIndex }));
      selfIndex.forEach((row, q) => expect(Array.from(approx.indices.subarray(q * 10, q * 10 + 10))).to.not.include(row));
      expect(recall(approx.indices, exact.indices, 10)).to.be.at.least(0.99);
    });
  });

  describe('small index', () => {
    const D = 16;
    const N = 1500;
    const rng = new Rng(3);
    const gallery = clustered(rng, gaussianCentres(rng, 20, D), N, 0.5);
    // Row 1499 duplicates row 10; rows 1497 and 1498 duplicate row 20.
    gallery.copyWithin(1499 * D, 10 * D, 11 * D);
    gallery.copyWithin(1497 * D, 20 * D, 21 * D);
    gallery.copyWithin(1498 * D, 20 * D, 21 * D);
    let dir: string;
    let index: HnswIndex;

    before(async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), 'dmlkit-hnsw-'));
      index = await HnswIndex.build(gallery, N, D, { seed: 1, ef: 20, m: 8, efConstruction: 100 });
    });

    after(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('removes the query itself by id but keeps its exact duplicates, in index order', async () => {
      const selfIndex = Int32Array.from([10, 1499, 20, 1497, 1498]);
      const probe = new Float32Array(5 * D);
      selfIndex.forEach((row, q) => probe.set(gallery.subarray(row * D, (row + 1) * D), q * D));
      const { indices, similarities } = await rows(index.search(probe, 5, { k: 3, selfIndex }));
      expect(indices[0]).to.equal(1499);
      expect(indices[3]).to.equal(10);
      expect(Array.from(indices.subarray(6, 8))).to.deep.equal([1497, 1498]);
      expect(Array.from(indices.subarray(9, 11))).to.deep.equal([20, 1498]);
      expect(Array.from(indices.subarray(12, 14))).to.deep.equal([20, 1497]);
      expect(similarities[6]).to.equal(similarities[7]);
      const exact = await rows(exactSearch(probe, 5, gallery, N, D, { k: 3, selfIndex }));
      expect(Array.from(indices)).to.deep.equal(Array.from(exact.indices));
    });

    it('returns duplicates tied at the top in index order without self-exclusion', async () => {
      const { indices } = await rows(index.search(gallery.subarray(20 * D, 21 * D), 1, { k: 3 }));
      expect(Array.from(indices)).to.deep.equal([20, 1497, 1498]);
    });

    it('raises ef to k + 1 when k reaches it, records it, and returns k neighbours', async () => {
      const k = 50;
      const probe = gallery.subarray(0, 40 * D);
      const approx = await rows(index.search(probe, 40, { k, chunkSize: 16 }));
      expect(index.params.ef).to.equal(51);
      expect(Array.from(approx.indices)).to.not.include(-1);
      const exact = await rows(exactSearch(probe, 40, gallery, N, D, { k }));
      expect(recall(approx.indices, exact.indices, k)).to.be.at.least(0.95);
      await rows(index.search(probe, 40, { k: 5 }));
      expect(index.params.ef).to.equal(51);
    });

    it('pads rows when k exceeds the index size', async () => {
      const tiny = await HnswIndex.build(gallery.subarray(0, 3 * D), 3, D, { seed: 1 });
      const { indices, similarities } = await rows(tiny.search(gallery.subarray(0, D), 1, { k: 5, selfIndex: Int32Array.from([0]) }));
      expect(Array.from(indices.subarray(2))).to.deep.equal([-1, -1, -1]);
      expect(Array.from(similarities.subarray(2))).to.deep.equal([-Infinity, -Infinity, -Infinity]);
      expect(Array.from(indices.subarray(0, 2)).sort()).to.deep.equal([1, 2]);
    });

    it('saves atomically and loads back the same results, parameters from the header and ef from the options', async () => {
      const file = path.join(dir, 'nested', 'index.hnsw');
      await index.save(file);
      expect(await readdir(path.dirname(file))).to.deep.equal(['index.hnsw']);
      const probe = gallery.subarray(100 * D, 300 * D);
      const before = await rows(index.search(probe, 200, { k: 10 }));

      const loaded = await HnswIndex.load(file, { dim: D, ef: 51, seed: 1 });
      expect(loaded.params).to.deep.equal({ space: 'cosine', m: 8, efConstruction: 100, ef: 51, seed: 1 });
      expect([loaded.dim, loaded.count]).to.deep.equal([D, N]);
      const after = await rows(loaded.search(probe, 200, { k: 10 }));
      expect(Buffer.from(after.indices.buffer).equals(Buffer.from(before.indices.buffer))).to.equal(true);
      expect(Buffer.from(after.similarities.buffer).equals(Buffer.from(before.similarities.buffer))).to.equal(true);

      const defaults = await HnswIndex.load(file);
      expect(defaults.params).to.deep.equal({ space: 'cosine', m: 8, efConstruction: 100, ef: 64, seed: null });
    });

    it('builds byte-identical index files from the same seed', async () => {
      const a = path.join(dir, 'a.hnsw');
      const b = path.join(dir, 'b.hnsw');
      const small = gallery.subarray(0, 400 * D);
      await (await HnswIndex.build(small, 400, D, { seed: 9 })).save(a);
      await (await HnswIndex.build(small, 400, D, { seed: 9 })).save(b);
      expect((await readFile(a)).equals(await readFile(b))).to.equal(true);
    });

    it('rejects a file of another dimension, a non-index file and a missing file', async () => {
      const file = path.join(dir, 'dim.hnsw');
      await index.save(file);
      await expectDmlError(HnswIndex.load(file, { dim: 32 }), 'E_ARG', new RegExp(`^Expected 16 \\(the dimension of ${file}\\) for dim but received 32$`));
      const junk = path.join(dir, 'junk.hnsw');
      await writeFile(junk, Buffer.alloc(200, 7));
      await expectDmlError(HnswIndex.load(junk), 'E_DATASET', /is not an hnswlib index: inconsistent header fields/);
      await writeFile(junk, Buffer.alloc(10));
      await expectDmlError(HnswIndex.load(junk), 'E_DATASET', /10 bytes, shorter than the 96-byte header/);
      await expectDmlError(HnswIndex.load(path.join(dir, 'none.hnsw')), 'E_NOT_FOUND', /^Cannot read HNSW index .*none\.hnsw/);
    });

    it('reports build progress and cancels a build', async () => {
      const progress: number[] = [];
      await HnswIndex.build(gallery, N, D, { seed: 1, efConstruction: 20, onProgress: (done) => progress.push(done) });
      expect(progress).to.deep.equal([1000, 1500]);
      const controller = new AbortController();
      const build = HnswIndex.build(gallery, N, D, { seed: 1, efConstruction: 20, onProgress: () => controller.abort(), signal: controller.signal });
      await expectDmlError(build, 'E_CANCELLED', /^HNSW build cancelled$/);
    });

    it('names bad arguments', async () => {
      const search = (options: HnswSearchOptions, queries = gallery.subarray(0, 2 * D)) => rows(index.search(queries, 2, options));
      await expectDmlError(search({ k: 0 }), 'E_ARG', /^Expected an integer >= 1 for k but received 0$/);
      await expectDmlError(search({ k: 1 }, gallery.subarray(0, 2 * D - 1)), 'E_ARG', /^Expected 32 \(2 rows x 16 dims\) for queries.length but received 31$/);
      await expectDmlError(search({ k: 1, selfIndex: Int32Array.from([0, N]) }), 'E_ARG', /for selfIndex\[1\] but received 1500/);
      await expectDmlError(HnswIndex.build(gallery, N, D, { seed: 1, m: 1 }), 'E_ARG', /^Expected an integer >= 2 for m but received 1$/);
      await expectDmlError(HnswIndex.build(gallery, N, D, { seed: -1 }), 'E_ARG', /^Expected an integer in \[0, 4294967295\] for seed but received -1$/);
      await expectDmlError(HnswIndex.build(gallery, N, 15, { seed: 1 }), 'E_ARG', /for vectors.length but received 24000/);
      await expectDmlError(HnswIndex.build(gallery, 0, D, { seed: 1 }), 'E_ARG', /for count but received 0/);
    });
  });
});
