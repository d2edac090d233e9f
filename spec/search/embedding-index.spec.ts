/**
 * @file EmbeddingIndex with vectors from elsewhere: rows that are not unit length are normalised in a
 * copy (the same neighbours and cosine similarities as the normalised set, the caller's vectors left as
 * they were), a row of zeros or NaN is one E_EMBEDDING line, and vectors of the wrong length are refused.
 */
import { expect } from 'chai';
import { EmbeddingIndex } from '../../lib/search/embedding-index.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

const set = (vectors: number[]) => ({ vectors: Float32Array.from(vectors), count: vectors.length / 2, dim: 2, ids: ['a', 'b', 'c'].slice(0, vectors.length / 2), labels: ['x', 'x', 'y'].slice(0, vectors.length / 2) });

describe('EmbeddingIndex and unnormalised vectors', () => {
  it('normalises rows that are not unit length in a copy: the cosine neighbours of the normalised set', async () => {
    const raw = set([3, 4, 0, 10, -2, 0]);
    const index = await EmbeddingIndex.build(raw);
    const result = await index.search([1, 1], 3);
    expect(result.ids).to.deep.equal(['a', 'b', 'c']);
    // cos((1,1), (0.6,0.8)) = 1.4/sqrt(2); cos((1,1), (0,1)) = 1/sqrt(2); cos((1,1), (-1,0)) = -1/sqrt(2).
    [1.4 / Math.SQRT2, 1 / Math.SQRT2, -1 / Math.SQRT2].forEach((v, i) => expect(result.similarities[i]).to.be.closeTo(v, 1e-6));
    expect(Array.from(raw.vectors)).to.deep.equal([3, 4, 0, 10, -2, 0]);
    const hnsw = await EmbeddingIndex.build(raw, { kind: 'hnsw' });
    expect((await hnsw.search([1, 1], 3)).similarities[0]).to.be.closeTo(1.4 / Math.SQRT2, 1e-6);
  });

  it('refuses a row of zeros or NaN, and vectors of the wrong length, naming them', async () => {
    await expectDmlError(EmbeddingIndex.build(set([1, 0, 0, 0])), 'E_EMBEDDING', /EmbeddingIndex\.build: embedding row 1 is all zeros/);
    await expectDmlError(EmbeddingIndex.build(set([Number.NaN, 0, 1, 0])), 'E_EMBEDDING', /embedding row 0 contains NaN at column 0/);
    await expectDmlError(EmbeddingIndex.build({ ...set([1, 0, 0, 1]), vectors: Float32Array.from([1, 0, 0]) }), 'E_ARG', /^Expected 2 x 2 = 4 values for set\.vectors but received .*3 values/);
  });
});
