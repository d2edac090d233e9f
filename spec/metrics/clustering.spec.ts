/**
 * @file Tests of NMI, AMI and the pairwise clustering F1: hand-computed cases, degenerate partitions, and
 * scikit-learn 1.2 references (normalized_mutual_info_score, adjusted_mutual_info_score, pair_confusion_matrix).
 */

import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { expectDmlErrorSync } from '../helpers/expect-dml-error.js';
import { adjustedMutualInformation, normalizedMutualInformation, pairwiseClusteringF1, type PairwiseClusteringF1 } from '../../lib/metrics/clustering.js';

interface ClusteringCase {
  name: string;
  labels: number[];
  clusters: number[];
  nmi: number;
  ami: number;
  pairwiseF1: PairwiseClusteringF1;
}

const fixture = JSON.parse(readFileSync(new URL('../fixtures/metrics/clustering.json', import.meta.url), 'utf8')) as {
  cases: ClusteringCase[];
};

describe('metrics/clustering', () => {
  describe('hand-computed cases', () => {
    it('scores a partial match: labels 000111, clusters 001111', () => {
      // Cells (label, cluster): (0,0) 2, (0,1) 1, (1,1) 3; label sizes 3, 3; cluster sizes 2, 4; N = 6.
      // I = 2/6 ln(6*2/(3*2)) + 1/6 ln(6*1/(3*4)) + 3/6 ln(6*3/(3*4)) = ln3/2 - ln2/3
      // H(Y) = ln2, H(C) = -(1/3 ln(1/3) + 2/3 ln(2/3)) = ln3 - 2/3 ln2
      // NMI = 2I / (H(Y) + H(C)) = (ln3 - 2/3 ln2) / (ln3 + 1/3 ln2) = 0.478704...
      const labels = Int32Array.of(0, 0, 0, 1, 1, 1);
      const clusters = Int32Array.of(0, 0, 1, 1, 1, 1);
      const expectedNmi = (Math.log(3) - (2 / 3) * Math.log(2)) / (Math.log(3) + Math.log(2) / 3);
      expect(normalizedMutualInformation(labels, clusters)).to.be.closeTo(expectedNmi, 1e-15);
      expect(expectedNmi).to.be.closeTo(0.478704, 1e-6);
      // TP = C(2,2) + C(1,2) + C(3,2) = 4; same cluster = C(2,2) + C(4,2) = 7; same label = 3 + 3 = 6.
      // P = 4/7, R = 2/3, F1 = 2PR/(P+R) = (16/21)/(26/21) = 8/13.
      const scores = pairwiseClusteringF1(labels, clusters);
      expect(scores).to.include({ truePositivePairs: 4, sameClusterPairs: 7, sameLabelPairs: 6 });
      expect(scores.precision).to.equal(4 / 7);
      expect(scores.recall).to.equal(4 / 6);
      expect(scores.f1).to.be.closeTo(8 / 13, 1e-15);
    });

    it('gives 1 for identical partitions under any names, 0 for independent ones', () => {
      expect(normalizedMutualInformation(Int32Array.of(0, 0, 1, 1), Int32Array.of(7, 7, -3, -3))).to.equal(1);
      // Unclipped, I and (H(Y) + H(C))/2 round differently here and the ratio would be 1 + 2^-52.
      expect(normalizedMutualInformation(Int32Array.of(5, 5, 4), Int32Array.of(5, 5, 4))).to.equal(1);
      expect(pairwiseClusteringF1(Int32Array.of(0, 0, 1, 1), Int32Array.of(7, 7, -3, -3))).to.deep.equal({
        precision: 1,
        recall: 1,
        f1: 1,
        truePositivePairs: 2,
        sameClusterPairs: 2,
        sameLabelPairs: 2,
      });
      // Each of the 4 cells holds one item: ln(N n_lc / (n_l n_c)) = ln(4 * 1 / (2 * 2)) = ln 1 = 0 exactly.
      expect(normalizedMutualInformation(Int32Array.of(0, 0, 1, 1), Int32Array.of(0, 1, 0, 1))).to.equal(0);
      expect(pairwiseClusteringF1(Int32Array.of(0, 0, 1, 1), Int32Array.of(0, 1, 0, 1))).to.include({
        truePositivePairs: 0,
        precision: 0,
        recall: 0,
        f1: 0,
      });
    });

    it('follows scikit-learn 1.2 for single-group partitions', () => {
      // Both a single group: 1 (nothing to split). Exactly one a single group: I = 0, so 0.
      expect(normalizedMutualInformation(Int32Array.of(4, 4, 4), Int32Array.of(0, 0, 0))).to.equal(1);
      expect(normalizedMutualInformation(Int32Array.of(9), Int32Array.of(2))).to.equal(1);
      expect(normalizedMutualInformation(Int32Array.of(0, 1, 2), Int32Array.of(0, 0, 0))).to.equal(0);
      expect(normalizedMutualInformation(Int32Array.of(0, 0, 0), Int32Array.of(0, 1, 1))).to.equal(0);
    });

    it('corrects the mutual information for chance (AMI)', () => {
      // Labels 0011, clusters 0101: I = 0. E[I]: a = b = (2, 2), N = 4; only the cell value n = 2 has a
      // non-zero log term, (2/4) ln(4·2/(2·2)) = ln2/2, with probability 2!2!2!2! / (4! 2! 0! 0! 2!) = 1/6,
      // for each of the 4 label x cluster pairs: E[I] = ln2/3. H(Y) = H(C) = ln2.
      // AMI = (0 − ln2/3) / (ln2 − ln2/3) = −1/2: worse than chance.
      expect(adjustedMutualInformation(Int32Array.of(0, 0, 1, 1), Int32Array.of(0, 1, 0, 1))).to.be.closeTo(-0.5, 1e-15);
      // Identical partitions: 1; both a single group: 1; one a single group: E[I] = I = 0, so 0.
      expect(adjustedMutualInformation(Int32Array.of(0, 0, 1, 1, 2), Int32Array.of(3, 3, 9, 9, 1))).to.be.closeTo(1, 1e-15);
      expect(adjustedMutualInformation(Int32Array.of(4, 4, 4), Int32Array.of(0, 0, 0))).to.equal(1);
      expect(adjustedMutualInformation(Int32Array.of(0, 1, 2), Int32Array.of(0, 0, 0))).to.equal(0);
      // scikit-learn 1.2 adjusted_mutual_info_score([0,0,0,1,1,1], [0,0,1,1,1,1]) = 0.3552453212757635.
      expect(adjustedMutualInformation(Int32Array.of(0, 0, 0, 1, 1, 1), Int32Array.of(0, 0, 1, 1, 1, 1))).to.be.closeTo(0.3552453212757635, 1e-14);
    });

    it('defines ratios with a zero denominator as 0 in the pairwise F1', () => {
      // All singletons on both sides: no same-cluster and no same-label pairs.
      expect(pairwiseClusteringF1(Int32Array.of(0, 1, 2), Int32Array.of(5, 6, 7))).to.deep.equal({
        precision: 0,
        recall: 0,
        f1: 0,
        truePositivePairs: 0,
        sameClusterPairs: 0,
        sameLabelPairs: 0,
      });
    });

    it('counts pairs exactly beyond 2^32 (100,000 items in one group: 4,999,950,000 pairs)', () => {
      const oneGroup = new Int32Array(100_000);
      const scores = pairwiseClusteringF1(oneGroup, oneGroup);
      expect(scores.truePositivePairs).to.equal(4_999_950_000);
      expect(scores.sameClusterPairs).to.equal(4_999_950_000);
      expect(scores.f1).to.equal(1);
    });
  });

  describe('scikit-learn references', () => {
    for (const testCase of fixture.cases) {
      it(`matches on "${testCase.name}"`, () => {
        const labels = Int32Array.from(testCase.labels);
        const clusters = Int32Array.from(testCase.clusters);
        expect(normalizedMutualInformation(labels, clusters)).to.be.closeTo(testCase.nmi, 1e-9);
        expect(adjustedMutualInformation(labels, clusters)).to.be.closeTo(testCase.ami, 1e-9);
        const scores = pairwiseClusteringF1(labels, clusters);
        const expected = testCase.pairwiseF1;
        expect(scores).to.include({
          truePositivePairs: expected.truePositivePairs,
          sameClusterPairs: expected.sameClusterPairs,
          sameLabelPairs: expected.sameLabelPairs,
        });
        expect(scores.precision).to.be.closeTo(expected.precision, 1e-12);
        expect(scores.recall).to.be.closeTo(expected.recall, 1e-12);
        expect(scores.f1).to.be.closeTo(expected.f1, 1e-12);
      });
    }

    it('covers many clusters, a single cluster and a large random assignment', () => {
      const clusterCounts = fixture.cases.map((testCase) => new Set(testCase.clusters).size);
      expect(Math.max(...clusterCounts)).to.be.at.least(1000);
      expect(clusterCounts).to.include(1);
      expect(fixture.cases.some((testCase) => testCase.labels.length >= 5000)).to.equal(true);
    });

    it('does not depend on item order', () => {
      const testCase = fixture.cases[0]!;
      const labels = Int32Array.from(testCase.labels);
      const clusters = Int32Array.from(testCase.clusters);
      const reversedNmi = normalizedMutualInformation(labels.slice().reverse(), clusters.slice().reverse());
      expect(reversedNmi).to.equal(normalizedMutualInformation(labels, clusters));
      expect(adjustedMutualInformation(labels.slice().reverse(), clusters.slice().reverse())).to.equal(adjustedMutualInformation(labels, clusters));
    });
  });

  it('rejects mismatched, empty and non-Int32 inputs', () => {
    expectDmlErrorSync(() => normalizedMutualInformation(Int32Array.of(0, 1), Int32Array.of(0)), 'E_ARG', /length 2 .*for clusters/);
    expectDmlErrorSync(() => pairwiseClusteringF1(new Int32Array(0), new Int32Array(0)), 'E_EMPTY', /empty/);
    expectDmlErrorSync(() => adjustedMutualInformation(Int32Array.of(0, 1), Int32Array.of(0, 1, 2)), 'E_ARG', /length 2 .*for clusters/);
    expectDmlErrorSync(
      () => normalizedMutualInformation([0, 1] as unknown as Int32Array, Int32Array.of(0, 1)),
      'E_ARG',
      /Int32Array for labels/,
    );
  });
});
