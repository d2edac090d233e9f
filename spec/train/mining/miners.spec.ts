/**
 * @file Tests of the miners on hand-written similarity matrices: per-anchor selection (easy/hard
 * positive, hard/semi-hard/easy negative) with ties, duplicates and missing candidates; the
 * multi-similarity miner; all pairs and triplets; the triplet-margin miner; argument errors.
 */
import { expect } from 'chai';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';
import {
  allPairs,
  allTriplets,
  mineMultiSimilarityPairs,
  mineTripletsByMargin,
  selectNegatives,
  selectPositives,
} from '../../../lib/train.js';
import { labelPairMasks } from '../../../lib/train/similarity.js';

/** Row-major matrix from rows (symmetric input is the caller's business). */
function matrix(rows: number[][]): Float32Array {
  return Float32Array.from(rows.flat());
}

/** Cosine similarities of unit vectors at the given angles (degrees). */
function angleSimilarities(degrees: readonly number[]): Float32Array {
  return matrix(degrees.map((a) => degrees.map((b) => Math.cos(((a - b) * Math.PI) / 180))));
}

describe('train/miners', () => {
  describe('per-anchor selection', () => {
    // docs/methods.md 1.6: angles 0, 20, 70 (class 0); 10, 35 (class 1); 90 (class 2).
    const similarities = angleSimilarities([0, 20, 70, 10, 35, 90]);
    const masks = labelPairMasks(Int32Array.of(0, 0, 0, 1, 1, 2));

    it('selects EP, HP, HN, SHN and EN of the worked example; the singleton has no positive', () => {
      const easy = selectPositives(similarities, masks, { strategy: 'easy' });
      const hard = selectPositives(similarities, masks, { strategy: 'hard' });
      expect(Array.from(easy.index)).to.deep.equal([1, 0, 1, 4, 3, -1]);
      expect(easy.found).to.equal(5);
      expect(Number.isNaN(easy.similarity[5])).to.equal(true);
      expect(easy.similarity[0]).to.be.closeTo(0.9397, 1e-4);
      expect(hard.index[0]).to.equal(2);
      expect(hard.similarity[0]).to.be.closeTo(0.342, 1e-4);
      const hn = selectNegatives(similarities, masks, { strategy: 'hard' });
      expect(hn.index[0]).to.equal(3);
      expect(hn.index[2]).to.equal(5);
      expect(hn.index[5]).to.equal(2); // the singleton still has negatives
      const shn = selectNegatives(similarities, masks, { strategy: 'semihard', positives: easy });
      expect(shn.index[0]).to.equal(4);
      expect(shn.index[2]).to.equal(3);
      expect(shn.index[5]).to.equal(-1); // no positive, so no semi-hard negative
      const en = selectNegatives(similarities, masks, { strategy: 'easy' });
      expect(en.index[0]).to.equal(5);
    });

    it('breaks ties by the lowest index', () => {
      const tied = matrix([
        [1, 0.5, 0.5, 0.2, 0.2],
        [0.5, 1, 0.3, 0.7, 0.7],
        [0.5, 0.3, 1, 0.1, 0.1],
        [0.2, 0.7, 0.1, 1, 0.4],
        [0.2, 0.7, 0.1, 0.4, 1],
      ]);
      const tiedMasks = labelPairMasks(Int32Array.of(0, 0, 0, 1, 1));
      expect(selectPositives(tied, tiedMasks, { strategy: 'easy' }).index[0]).to.equal(1);
      expect(selectPositives(tied, tiedMasks, { strategy: 'hard' }).index[0]).to.equal(1);
      expect(selectNegatives(tied, tiedMasks, { strategy: 'hard' }).index[0]).to.equal(3);
      expect(selectNegatives(tied, tiedMasks, { strategy: 'easy' }).index[1]).to.equal(3);
      expect(selectNegatives(tied, tiedMasks, { strategy: 'hard' }).index[2]).to.equal(3);
    });

    it('semi-hard: strict S_an < S_ap by default, S_an <= S_ap when inclusive', () => {
      const values = matrix([
        [1, 0.6, 0.6, 0.5],
        [0.6, 1, 0.2, 0.1],
        [0.6, 0.2, 1, 0.3],
        [0.5, 0.1, 0.3, 1],
      ]);
      const m = labelPairMasks(Int32Array.of(0, 0, 1, 1));
      const positives = selectPositives(values, m, { strategy: 'easy' });
      expect(selectNegatives(values, m, { strategy: 'semihard', positives }).index[0]).to.equal(3);
      expect(selectNegatives(values, m, { strategy: 'semihard', positives, semiHardRule: 'inclusive' }).index[0]).to.equal(2);
    });

    it('skips near-duplicate positives (S > 0.9999) unless the threshold is null', () => {
      const values = matrix([
        [1, 0.99995, 0.8, 0.1],
        [0.99995, 1, 0.8, 0.1],
        [0.8, 0.8, 1, 0.1],
        [0.1, 0.1, 0.1, 1],
      ]);
      const m = labelPairMasks(Int32Array.of(0, 0, 0, 1));
      expect(selectPositives(values, m, { strategy: 'easy' }).index[0]).to.equal(2);
      expect(selectPositives(values, m, { strategy: 'easy', duplicateThreshold: null }).index[0]).to.equal(1);
      expect(selectPositives(values, m, { strategy: 'easy', duplicateThreshold: 0.5 }).found).to.equal(0);
    });
  });

  describe('pairs and the multi-similarity miner', () => {
    it('lists all ordered pairs in row-major order', () => {
      const pairs = allPairs(labelPairMasks(Int32Array.of(7, 7, 9)));
      expect(Array.from(pairs.positive.anchors)).to.deep.equal([0, 1]);
      expect(Array.from(pairs.positive.others)).to.deep.equal([1, 0]);
      expect(Array.from(pairs.negative.anchors)).to.deep.equal([0, 1, 2, 2]);
      expect(Array.from(pairs.negative.others)).to.deep.equal([2, 2, 0, 1]);
    });

    it('keeps p with S_ip - 0.1 < max_n S_in and n with S_in + 0.1 > min_p S_ip', () => {
      const values = matrix([
        [1, 0.9, 0.5, 0.45, 0.3],
        [0.9, 1, 0.95, 0.2, 0.1],
        [0.5, 0.95, 1, 0.0, 0.7],
        [0.45, 0.2, 0.0, 1, 0.6],
        [0.3, 0.1, 0.7, 0.6, 1],
      ]);
      const mined = mineMultiSimilarityPairs(values, labelPairMasks(Int32Array.of(0, 0, 0, 1, 1)));
      // Anchor 0: hardest negative 0.45 -> positives with S < 0.55: {2}; hardest positive 0.5 -> negatives > 0.4: {3}.
      // Anchor 1: hardest negative 0.2 -> none (0.9, 0.95 >= 0.3); hardest positive 0.9 -> none.
      // Anchor 2: hardest negative 0.7 -> positives < 0.8: {0}; hardest positive 0.5 -> negatives > 0.4: {4}.
      // Anchor 3: hardest negative 0.45 -> positive 0.6 >= 0.55: none; hardest positive 0.6 -> negatives > 0.5: none.
      // Anchor 4: hardest negative 0.7 -> positive 0.6 < 0.8: {3}; hardest positive 0.6 -> negatives > 0.5: {2}.
      expect(Array.from(mined.positive.anchors)).to.deep.equal([0, 2, 4]);
      expect(Array.from(mined.positive.others)).to.deep.equal([2, 0, 3]);
      expect(Array.from(mined.negative.anchors)).to.deep.equal([0, 2, 4]);
      expect(Array.from(mined.negative.others)).to.deep.equal([3, 4, 2]);
    });

    it('mines nothing for an anchor without positives or without negatives', () => {
      const values = matrix([
        [1, 0.2, 0.9],
        [0.2, 1, 0.1],
        [0.9, 0.1, 1],
      ]);
      const mined = mineMultiSimilarityPairs(values, labelPairMasks(Int32Array.of(0, 0, 1)));
      expect(Array.from(mined.negative.anchors)).to.not.include(2);
      const oneClass = mineMultiSimilarityPairs(values, labelPairMasks(Int32Array.of(0, 0, 0)));
      expect(oneClass.positive.anchors.length + oneClass.negative.anchors.length).to.equal(0);
    });
  });

  describe('triplets', () => {
    const labels = Int32Array.of(0, 0, 1, 1);
    const distances = matrix([
      [0, 0.5, 0.4, 0.6],
      [0.5, 0, 0.9, 0.52],
      [0.4, 0.9, 0, 0.3],
      [0.6, 0.52, 0.3, 0],
    ]);

    it('lists all valid triplets in lexicographic order', () => {
      const all = allTriplets(labelPairMasks(labels));
      expect(Array.from(all.anchors)).to.deep.equal([0, 0, 1, 1, 2, 2, 3, 3]);
      expect(Array.from(all.positives)).to.deep.equal([1, 1, 0, 0, 3, 3, 2, 2]);
      expect(Array.from(all.negatives)).to.deep.equal([2, 3, 2, 3, 0, 1, 0, 1]);
    });

    it('keeps d_an - d_ap <= margin (all), <= 0 (hard), in (0, margin] (semihard)', () => {
      const m = labelPairMasks(labels);
      // d_an - d_ap per triplet: -0.1, 0.1, 0.4, 0.02, 0.1, 0.6, 0.3, 0.22
      const pick = (type: 'all' | 'hard' | 'semihard'): number[] => {
        const t = mineTripletsByMargin(distances, m, type, 0.2);
        return Array.from(t.anchors, (a, k) => a * 100 + t.positives[k]! * 10 + t.negatives[k]!);
      };
      expect(pick('all')).to.deep.equal([12, 13, 103, 230]);
      expect(pick('hard')).to.deep.equal([12]);
      expect(pick('semihard')).to.deep.equal([13, 103, 230]);
    });
  });

  it('names bad arguments', () => {
    const m = labelPairMasks(Int32Array.of(0, 0, 1));
    expectDmlErrorSync(
      () => selectPositives(new Float32Array(4), m, { strategy: 'easy' }),
      'E_ARG',
      'Expected a row-major 3x3 matrix (9 values) for similarities but received Float32Array of length 4',
    );
    expectDmlErrorSync(() => selectPositives(new Float32Array(9), m, { strategy: 'middle' as 'easy' }), 'E_ARG', 'Expected one of easy, hard for strategy but received "middle"');
    expectDmlErrorSync(
      () => selectNegatives(new Float32Array(9), m, { strategy: 'semihard' }),
      'E_ARG',
      'Expected the positive selection of the same 3 anchors (required by semihard) for positives but received undefined',
    );
    expectDmlErrorSync(() => mineMultiSimilarityPairs(new Float32Array(9), m, -1), 'E_ARG', 'Expected a finite number >= 0 for epsilon but received -1');
    expectDmlErrorSync(() => mineTripletsByMargin(new Float32Array(9), m, 'easy' as 'all', 0.1), 'E_ARG', 'Expected one of all, hard, semihard for type but received "easy"');
    expectDmlErrorSync(() => mineTripletsByMargin(new Float32Array(9), m, 'all', Number.NaN), 'E_ARG', 'Expected a finite number for margin but received NaN');
  });
});
