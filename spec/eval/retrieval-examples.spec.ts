/**
 * @file Tests of RetrievalExampleSampler: kinds by the nearest neighbour's label, lone queries left
 * out, at most perKind per kind, neighbours marked, and the same sample whatever the block order and
 * size (priority sampling from the seed).
 */
import { expect } from 'chai';
import { RetrievalExampleSampler } from '../../lib/eval/retrieval-examples.js';
import type { NeighbourBlock } from '../../lib/search/neighbours.js';

/** 40 queries over a 4-item gallery; query q's neighbours are gallery rows (q, q+1, ...) mod 4. */
const queryLabels = Array.from({ length: 40 }, (_, q) => (q % 5 === 4 ? 'lone' : ['a', 'b', 'a', 'b'][q % 4] as string));
const query = { ids: queryLabels.map((_, q) => `q${q}`), labels: queryLabels };
const gallery = { ids: ['g0', 'g1', 'g2', 'g3'], labels: ['a', 'a', 'b', 'b'] };
const hasPositive = (q: number): boolean => queryLabels[q] !== 'lone';

function block(offset: number, count: number): NeighbourBlock {
  const k = 3;
  const indices = new Int32Array(count * k);
  const similarities = new Float32Array(count * k);
  for (let r = 0; r < count; r++) {
    for (let j = 0; j < k; j++) {
      indices[r * k + j] = (offset + r + j) % 4;
      similarities[r * k + j] = 1 - 0.1 * j;
    }
  }
  return { queryOffset: offset, queryCount: count, k, indices, similarities };
}

function sample(blocks: NeighbourBlock[], seed = 7, perKind = 3): ReturnType<RetrievalExampleSampler['result']> {
  const sampler = new RetrievalExampleSampler(query, gallery, hasPositive, { perKind, neighbours: 2, seed });
  for (const b of blocks) sampler.add(b);
  return sampler.result();
}

describe('RetrievalExampleSampler', () => {
  it('classifies by the nearest neighbour, leaves lone queries out and marks each neighbour', () => {
    const examples = sample([block(0, 40)]);
    expect(examples.map((e) => e.kind)).to.deep.equal(['failure', 'failure', 'failure', 'success', 'success', 'success']);
    for (const e of examples) {
      expect(e.query.label).not.to.equal('lone');
      const q = Number(e.query.id.slice(1));
      expect(e.neighbours.map((n) => n.id)).to.deep.equal([`g${q % 4}`, `g${(q + 1) % 4}`]);
      expect(e.neighbours.map((n) => n.similarity)).to.deep.equal([1, Math.fround(0.9)]);
      for (const n of e.neighbours) expect(n.correct).to.equal(n.label === e.query.label);
      expect(e.neighbours[0]!.correct).to.equal(e.kind === 'success');
    }
  });

  it('draws the same sample whatever the block order and size; another seed draws another', () => {
    const whole = sample([block(0, 40)]);
    const pieces = sample([block(30, 10), block(0, 7), block(17, 13), block(7, 10)]);
    expect(pieces).to.deep.equal(whole);
    expect(sample([block(0, 40)], 8).map((e) => e.query.id)).not.to.deep.equal(whole.map((e) => e.query.id));
  });

  it('keeps at most perKind of each kind; 0 keeps none', () => {
    expect(sample([block(0, 40)], 7, 1)).to.have.length(2);
    expect(sample([block(0, 40)], 7, 0)).to.deep.equal([]);
  });
});
