/**
 * @file Tests of RetrievalExampleSampler: a random selection that depends on the seed and the query
 * rows only (so two models show the same queries), a worst selection by lowest AP@R (ties: lower row
 * first), lone queries left out, neighbours marked, and the same result whatever the block order and
 * size.
 */
import { expect } from 'chai';
import { RetrievalExampleSampler } from '../../lib/eval/retrieval-examples.js';
import type { NeighbourBlock } from '../../lib/search/neighbours.js';

/** 40 queries over a 4-item gallery; query q's neighbours are gallery rows (q + shift, q + shift + 1, ...) mod 4. */
const queryLabels = Array.from({ length: 40 }, (_, q) => (q % 5 === 4 ? 'lone' : ['a', 'b', 'a', 'b'][q % 4] as string));
const query = { ids: queryLabels.map((_, q) => `q${q}`), labels: queryLabels };
const gallery = { ids: ['g0', 'g1', 'g2', 'g3'], labels: ['a', 'a', 'b', 'b'] };
/** AP@R per query: (q * 7 mod 11) / 10, so q0 and q11, q22, q33 score 0; lone queries (q % 5 == 4) are never shown. */
const ap = (q: number): number => ((q * 7) % 11) / 10;
const scores = { hasPositive: (q: number): boolean => queryLabels[q] !== 'lone', averagePrecision: ap };

function block(offset: number, count: number, shift = 0): NeighbourBlock {
  const k = 3;
  const indices = new Int32Array(count * k);
  const similarities = new Float32Array(count * k);
  for (let r = 0; r < count; r++) {
    for (let j = 0; j < k; j++) {
      indices[r * k + j] = (offset + r + j + shift) % 4;
      similarities[r * k + j] = 1 - 0.1 * j;
    }
  }
  return { queryOffset: offset, queryCount: count, k, indices, similarities };
}

function sample(blocks: NeighbourBlock[], seed = 7, count = 3): ReturnType<RetrievalExampleSampler['result']> {
  const sampler = new RetrievalExampleSampler(query, gallery, scores, { count, neighbours: 2, seed });
  for (const b of blocks) sampler.add(b);
  return sampler.result();
}

describe('RetrievalExampleSampler', () => {
  it('keeps count random queries, then the count of lowest AP@R, lone queries left out, neighbours marked', () => {
    const examples = sample([block(0, 40)]);
    expect(examples.map((e) => e.selection)).to.deep.equal(['random', 'random', 'random', 'worst', 'worst', 'worst']);
    // Worst: AP 0 at q0, q11, q22 (q33 also 0 but a later row); AP carried on each example.
    expect(examples.slice(3).map((e) => e.query.id)).to.deep.equal(['q0', 'q11', 'q22']);
    for (const e of examples) {
      expect(e.query.label).not.to.equal('lone');
      const q = Number(e.query.id.slice(1));
      expect(e.averagePrecision).to.equal(ap(q));
      expect(e.neighbours.map((n) => n.id)).to.deep.equal([`g${q % 4}`, `g${(q + 1) % 4}`]);
      expect(e.neighbours.map((n) => n.similarity)).to.deep.equal([1, Math.fround(0.9)]);
      for (const n of e.neighbours) expect(n.correct).to.equal(n.label === e.query.label);
      expect(e.kind).to.equal(e.neighbours[0]!.correct ? 'success' : 'failure');
    }
  });

  it('draws the same random queries for another model (other neighbours, other kinds) and whatever the blocks', () => {
    const whole = sample([block(0, 40)]);
    const random = (examples: typeof whole): string[] => examples.filter((e) => e.selection === 'random').map((e) => e.query.id);
    const otherModel = sample([block(0, 40, 2)]);
    expect(random(otherModel)).to.deep.equal(random(whole));
    expect(otherModel.map((e) => e.kind)).not.to.deep.equal(whole.map((e) => e.kind));
    const pieces = sample([block(30, 10), block(0, 7), block(17, 13), block(7, 10)]);
    expect(pieces).to.deep.equal(whole);
    expect(random(sample([block(0, 40)], 8))).not.to.deep.equal(random(whole));
  });

  it('keeps at most count per selection; 0 keeps none', () => {
    expect(sample([block(0, 40)], 7, 1)).to.have.length(2);
    expect(sample([block(0, 40)], 7, 0)).to.deep.equal([]);
  });
});
