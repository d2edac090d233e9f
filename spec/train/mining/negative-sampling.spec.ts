/**
 * @file Tests of the seeded negative samplers: Roth's semi-hard draw (window, fallback, uniformity)
 * and distance-weighted sampling (frequencies against the weights q(d)⁻¹, the cutoffs, rows without a
 * valid negative), both reproducible from the generator's seed.
 */
import { expect } from 'chai';
import { sampleDistanceWeightedNegatives, sampleSemiHardNegatives } from '../../../lib/train/mining/negative-sampling.js';
import { labelPairMasks } from '../../../lib/train/similarity.js';
import { Rng } from '../../../lib/util/rng.js';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';

/** A symmetric row-major distance matrix with row 0 given (the rest filled with 1). */
function withAnchorRow(row: number[]): Float64Array {
  const size = row.length;
  const out = new Float64Array(size * size).fill(1);
  row.forEach((d, j) => {
    out[j] = d;
    out[j * size] = d;
  });
  for (let i = 0; i < size; i++) out[i * size + i] = 0;
  return out;
}

describe('train/mining/negative-sampling', () => {
  // Anchor 0 and positive 1 (class 0); negatives 2..6 (class 1).
  const labels = Int32Array.of(0, 0, 1, 1, 1, 1, 1);
  const masks = labelPairMasks(labels);
  const positives = Int32Array.of(1, -1, -1, -1, -1, -1, -1);

  describe('semi-hard', () => {
    it('draws uniformly among d_ap < d_an < d_ap + margin', () => {
      const distances = withAnchorRow([0, 0.5, 0.4, 0.55, 0.6, 0.69, 0.9]); // window (0.5, 0.7): 3, 4, 5
      const rng = new Rng(1);
      const counts = new Map<number, number>();
      for (let t = 0; t < 3000; t++) {
        const negative = sampleSemiHardNegatives(distances, masks, positives, 0.2, 'random', rng)[0]!;
        counts.set(negative, (counts.get(negative) ?? 0) + 1);
      }
      expect([...counts.keys()].sort()).to.deep.equal([3, 4, 5]);
      for (const count of counts.values()) expect(count).to.be.within(900, 1100);
    });

    it('falls back to a uniform negative, or drops the anchor, when none is semi-hard; anchors without a positive draw nothing', () => {
      const distances = withAnchorRow([0, 0.5, 0.4, 0.45, 0.9, 1.0, 1.1]);
      const rng = new Rng(2);
      const drawn = new Set<number>();
      for (let t = 0; t < 200; t++) {
        const negatives = sampleSemiHardNegatives(distances, masks, positives, 0.2, 'random', rng);
        drawn.add(negatives[0]!);
        expect(Array.from(negatives.subarray(1))).to.deep.equal([-1, -1, -1, -1, -1, -1]);
      }
      expect([...drawn].sort()).to.deep.equal([2, 3, 4, 5, 6]);
      expect(sampleSemiHardNegatives(distances, masks, positives, 0.2, 'drop', rng)[0]).to.equal(-1);
    });

    it('is reproducible from the seed', () => {
      const distances = withAnchorRow([0, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6]);
      const draw = (seed: number): number[] => {
        const rng = new Rng(seed);
        return Array.from({ length: 20 }, () => sampleSemiHardNegatives(distances, masks, positives, 0.2, 'random', rng)[0]!);
      };
      expect(draw(4)).to.deep.equal(draw(4));
      expect(draw(4)).to.not.deep.equal(draw(5));
    });
  });

  describe('distance-weighted', () => {
    const logWeight = (d: number, dim: number): number => (2 - dim) * Math.log(Math.max(d, 0.5)) - ((dim - 3) / 2) * Math.log(1 - Math.max(d, 0.5) ** 2 / 4);

    it('draws with frequencies proportional to q(d)^-1 (d clamped at the cutoff), never a positive', () => {
      const row = [0, 0.3, 0.2, 0.8, 1.1, 1.3, 1.5];
      const distances = withAnchorRow(row);
      for (const dim of [4, 8]) {
        const rng = new Rng(dim);
        const counts = new Array<number>(7).fill(0);
        const draws = 20000;
        for (let t = 0; t < draws; t++) counts[sampleDistanceWeightedNegatives(distances, masks, positives, { dim, cutoff: 0.5, upperCutoff: null }, rng)[0]!]!++;
        const weights = row.map((d, j) => (j >= 2 ? Math.exp(logWeight(d, dim)) : 0));
        const total = weights.reduce((a, b) => a + b, 0);
        counts.forEach((count, j) => {
          const p = weights[j]! / total;
          // Within 5 standard deviations of the binomial count.
          expect(Math.abs(count - draws * p), `dim ${dim} negative ${j}`).to.be.below(5 * Math.sqrt(draws * p * (1 - p)) + 1);
        });
      }
    });

    it('zeroes weights at or beyond upperCutoff and non-finite ones (d = 2), and skips rows without a valid negative', () => {
      const distances = withAnchorRow([0, 0.3, 1.45, 1.5, 2, 2, 1.2]);
      const rng = new Rng(9);
      for (let t = 0; t < 100; t++) {
        expect(sampleDistanceWeightedNegatives(distances, masks, positives, { dim: 8, cutoff: 0.5, upperCutoff: 1.4 }, rng)[0]).to.equal(6);
        expect(sampleDistanceWeightedNegatives(distances, masks, positives, { dim: 8, cutoff: 0.5, upperCutoff: null }, rng)[0]).to.not.be.oneOf([4, 5]);
      }
      const farOnly = withAnchorRow([0, 0.3, 1.5, 1.6, 1.7, 1.8, 1.9]);
      expect(sampleDistanceWeightedNegatives(farOnly, masks, positives, { dim: 8, cutoff: 0.5, upperCutoff: 1.4 }, rng)[0]).to.equal(-1);
    });

    it('rejects positives of the wrong length', () => {
      expectDmlErrorSync(
        () => sampleDistanceWeightedNegatives(withAnchorRow([0, 1, 1, 1, 1, 1, 1]), masks, Int32Array.of(1), { dim: 4, cutoff: 0.5, upperCutoff: null }, new Rng(0)),
        'E_ARG',
        'Expected an Int32Array of 7 positive indices (-1 for none) for positives but received Int32Array of length 1',
      );
    });
  });
});
