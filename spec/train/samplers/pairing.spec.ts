/**
 * @file Tests of the LoOp pairing sampler: batches of c distinct classes × n (even) consecutive images
 * that the LoOp losses pair into B/2 same-class pairs and B(B − N)/8 couples, the seed-image walk
 * (classes in proportion to their size, groups without replacement when possible), determinism, and
 * the errors for an odd group size or too few classes.
 */
import { expect } from 'chai';
import { couplePairs, pairPositives } from '../../../lib/train/losses/loop.js';
import { createSampler } from '../../../lib/train/samplers/sampler.js';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';

/** Labels from class sizes: class k gets `sizes[k]` consecutive item indices. */
function labelsOf(sizes: number[]): Int32Array {
  return Int32Array.from(sizes.flatMap((size, k) => Array.from({ length: size }, () => k)));
}

describe('train/samplers/pairing', () => {
  const labels = labelsOf([12, 3, 20, 9, 6, 40]);

  it('emits batches of c distinct classes × n consecutive images, paired by the LoOp losses', () => {
    const sampler = createSampler({ kind: 'pairing', groupSize: 4, batchSize: 16 }, labels, 5);
    expect(sampler.describe()).to.deep.include({ kind: 'pairing', classesPerBatch: 4, minClassSize: 2, imagesPerEpoch: 80, batchesPerEpoch: 5 });
    expect(sampler.describe().details).to.deep.equal({ batchesPerRound: 5, seedWalk: 'image permutation' });
    for (const epoch of [0, 1, 7]) {
      for (const batch of sampler.batchesOfEpoch(epoch)) {
        expect(batch).to.have.length(16);
        const batchLabels = Int32Array.from(batch, (i) => labels[i]!);
        const groupClasses = [0, 1, 2, 3].map((g) => {
          const group = new Set(batchLabels.subarray(4 * g, 4 * g + 4));
          expect(group.size, 'a group is one class').to.equal(1);
          return [...group][0]!;
        });
        expect(new Set(groupClasses).size, 'distinct classes').to.equal(4);
        const pairs = pairPositives(batchLabels);
        expect(pairs.first.length).to.equal(8);
        expect(Array.from(pairs.first)).to.deep.equal([0, 2, 4, 6, 8, 10, 12, 14]);
        expect(couplePairs(pairs, batchLabels, 'all').a.length).to.equal((16 * (16 - 4)) / 8);
      }
    }
  });

  it('draws the rest of a group without replacement when the class allows it, else pads with its other images', () => {
    const sampler = createSampler({ kind: 'pairing', groupSize: 6, batchSize: 12 }, labels, 2);
    for (let epoch = 0; epoch < 5; epoch++) {
      for (const batch of sampler.batchesOfEpoch(epoch)) {
        for (const start of [0, 6]) {
          const group = Array.from(batch.subarray(start, start + 6));
          const size = labels.filter((l) => l === labels[group[0]!]).length;
          if (size >= 6) expect(new Set(group).size, `class of ${size}`).to.equal(6);
          else {
            // The class of 3: its two other images each at least once after the seed.
            const others = new Set(labels.reduce<number[]>((acc, l, i) => (l === labels[group[0]!] && i !== group[0] ? [...acc, i] : acc), []));
            for (const other of others) expect(group.slice(1)).to.include(other);
          }
        }
      }
    }
  });

  it('picks classes in proportion to their size (the walk over images), deterministically per (seed, epoch)', () => {
    const sampler = createSampler({ kind: 'pairing', groupSize: 2, batchSize: 4 }, labels, 11);
    const counts = new Array<number>(6).fill(0);
    for (let epoch = 0; epoch < 40; epoch++) for (const batch of sampler.batchesOfEpoch(epoch)) for (let g = 0; g < 4; g += 2) counts[labels[batch[g]!]!]!++;
    // The class of 40 images leads groups far more often than the class of 3.
    expect(counts[5]!).to.be.above(4 * counts[1]!);
    expect(sampler.batchesOfEpoch(3)).to.deep.equal(createSampler({ kind: 'pairing', groupSize: 2, batchSize: 4 }, labels, 11).batchesOfEpoch(3));
    expect(sampler.batchesOfEpoch(3)).to.not.deep.equal(sampler.batchesOfEpoch(4));
  });

  it('rejects an odd group size and a batch with more classes than there are', () => {
    expectDmlErrorSync(
      () => createSampler({ kind: 'pairing', groupSize: 3, batchSize: 12 }, labels, 0),
      'E_ARG',
      'Expected an even integer >= 2 (the pairing sampler pairs the images of a class) for sampler.groupSize but received 3',
    );
    expectDmlErrorSync(
      () => createSampler({ kind: 'pairing', groupSize: 4, batchSize: 28 }, labels, 0),
      'E_ARG',
      /^Expected at most groupSize × 6 .* for sampler.batchSize but received 28$/,
    );
    expectDmlErrorSync(() => createSampler({ kind: 'pairs' as 'pairing', groupSize: 4, batchSize: 8 }, labels, 0), 'E_ARG', /'exact', 'pairing' for sampler.kind/);
  });
});
