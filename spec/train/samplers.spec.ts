import { expect } from 'chai';
import { filledClassLength } from '../../lib/train/samplers/filled.js';
import { createSampler, type SamplerSpec } from '../../lib/train/samplers/sampler.js';
import { expectDmlErrorSync } from '../helpers/expect-dml-error.js';

/** Labels from class sizes: class k gets `sizes[k]` consecutive item indices. */
function labelsOf(sizes: number[]): Int32Array {
  return Int32Array.from(sizes.flatMap((size, k) => Array.from({ length: size }, () => k)));
}

/** The stream of an epoch cut into consecutive chunks of `sizes`. */
function chunks(stream: number[], n: number): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < stream.length; i += n) out.push(stream.slice(i, i + n));
  return out;
}

const flat = (batches: Int32Array[]): number[] => batches.flatMap((b) => [...b]);
const itemsOf = (labels: Int32Array, k: number): number[] => [...labels.keys()].filter((i) => labels[i] === k);

describe('train/samplers', () => {
  describe('filled (EPHN round-robin)', () => {
    it('derives the class length L like the authors (nearest) and their initial commit (up)', () => {
      expect(filledClassLength(5, 2, 'nearest')).to.equal(6); // remainder 1 >= floor(0.6) = 0: up
      expect(filledClassLength(33, 16, 'nearest')).to.equal(32); // remainder 1 < floor(4.8) = 4: down
      expect(filledClassLength(37, 16, 'nearest')).to.equal(48); // remainder 5 >= 4: up
      expect(filledClassLength(48, 16, 'nearest')).to.equal(48);
      expect(filledClassLength(3, 16, 'nearest')).to.equal(16); // would round down to 0; at least n
      expect(filledClassLength(33, 16, 'up')).to.equal(48);
      expect(filledClassLength(1500, 16, 'up')).to.equal(112); // above 1000: 100, rounded up
    });

    it('resamples every class to L and emits groups round-robin in one class order per round', () => {
      const labels = labelsOf([3, 5, 2]); // L = 6 with n = 2
      const sampler = createSampler({ kind: 'filled', groupSize: 2, batchSize: 4 }, labels, 7);
      const batches = sampler.batchesOfEpoch(0);
      expect(batches.map((b) => b.length)).to.deep.equal([4, 4, 4, 4, 2]);
      expect(sampler.imagesPerEpoch).to.equal(18);
      expect(sampler.batchesPerEpoch).to.equal(5);
      const groups = chunks(flat(batches), 2);
      const groupLabels = groups.map((g) => {
        const ls = new Set(g.map((i) => labels[i]));
        expect(ls.size, 'a group is one class').to.equal(1);
        return [...ls][0] as number;
      });
      const order = groupLabels.slice(0, 3);
      expect([...order].sort((x, y) => x - y)).to.deep.equal([0, 1, 2]);
      expect(groupLabels).to.deep.equal([...order, ...order, ...order]);
      for (const k of [0, 1, 2]) {
        const drawn = groups.filter((_, g) => groupLabels[g] === k).flat();
        expect(drawn).to.have.length(6);
        // Classes smaller than L keep every image and are padded with repeats.
        expect(new Set(drawn)).to.deep.equal(new Set(itemsOf(labels, k)));
      }
      // Every batch of c = 2 groups holds 2 distinct classes.
      for (const b of batches.slice(0, 4)) expect(new Set([...b].map((i) => labels[i])).size).to.equal(2);
      expect(sampler.describe()).to.deep.include({ kind: 'filled', classes: 3, classesPerBatch: 2, excludedClasses: 0, imagesPerEpoch: 18 });
      expect(sampler.describe().details).to.deep.equal({ classLength: 6, lengthRule: 'nearest', largestClass: 5 });
    });

    it('subsamples a class larger than L without replacement', () => {
      const labels = labelsOf([33, 4]); // n = 16: L = 32
      const stream = flat(createSampler({ kind: 'filled', groupSize: 16, batchSize: 32 }, labels, 1).batchesOfEpoch(0));
      const big = stream.filter((i) => labels[i] === 0);
      expect(big).to.have.length(32);
      expect(new Set(big).size).to.equal(32);
    });

    it('leaves one-image classes out by default, and pads them with copies when minClassSize is 1', () => {
      const labels = labelsOf([1, 3, 4]);
      const sampler = createSampler({ kind: 'filled', groupSize: 2, batchSize: 4 }, labels, 1);
      expect(sampler.describe()).to.deep.include({ classes: 2, excludedClasses: 1, excludedImages: 1, minClassSize: 2 });
      expect(flat(sampler.batchesOfEpoch(0))).not.to.include(0);
      const kept = createSampler({ kind: 'filled', groupSize: 2, batchSize: 4, minClassSize: 1 }, labels, 1);
      expect(flat(kept.batchesOfEpoch(0)).filter((i) => i === 0)).to.have.length(4); // L = 4
    });
  });

  describe('sample (one truncated group per class)', () => {
    it('takes min(n, class size) images of every class, one contiguous group per class', () => {
      const labels = labelsOf([1, 2, 5, 3]); // n = 3: groups of 1, 2, 3, 3
      const sampler = createSampler({ kind: 'sample', groupSize: 3, batchSize: 6 }, labels, 11);
      const batches = sampler.batchesOfEpoch(0);
      expect(batches.map((b) => b.length)).to.deep.equal([6, 3]);
      const stream = flat(batches);
      // Contiguous runs of one label, one run per class, each of min(3, size) distinct items.
      const runs: number[][] = [];
      for (const i of stream) {
        const last = runs[runs.length - 1];
        if (last && labels[last[0] as number] === labels[i]) last.push(i);
        else runs.push([i]);
      }
      expect(runs).to.have.length(4);
      const bySize = Object.fromEntries(runs.map((r) => [labels[r[0] as number], r]));
      expect(bySize[0]).to.deep.equal([0]); // the one-image class is kept (as a negative)
      expect([...(bySize[1] as number[])].sort((x, y) => x - y)).to.deep.equal([1, 2]);
      expect(new Set(bySize[2]).size).to.equal(3);
      expect((bySize[2] as number[]).every((i) => labels[i] === 2)).to.equal(true);
      expect([...(bySize[3] as number[])].sort((x, y) => x - y)).to.deep.equal([8, 9, 10]);
      expect(sampler.describe()).to.deep.include({ minClassSize: 1, imagesPerEpoch: 9, batchesPerEpoch: 2 });
      expect(sampler.describe().details).to.deep.equal({ classesSmallerThanGroup: 2 });
    });
  });

  describe('exact (exactly n per class)', () => {
    it('gives every class exactly n images, padding small classes with replacement', () => {
      const labels = labelsOf([2, 5, 7]);
      const sampler = createSampler({ kind: 'exact', groupSize: 4, batchSize: 8 }, labels, 3);
      const batches = sampler.batchesOfEpoch(0);
      expect(batches.map((b) => b.length)).to.deep.equal([8, 4]);
      const groups = chunks(flat(batches), 4);
      expect(new Set(groups.map((g) => labels[g[0] as number]))).to.deep.equal(new Set([0, 1, 2]));
      for (const g of groups) {
        const k = labels[g[0] as number] as number;
        expect(g.every((i) => labels[i] === k)).to.equal(true);
        if (k === 0) expect(new Set(g)).to.deep.equal(new Set([0, 1])); // both images, plus two repeats
        else expect(new Set(g).size, 'no repeats in a class of >= n').to.equal(4);
      }
      expect(sampler.describe().details).to.deep.equal({ classesPaddedWithReplacement: 1, replacement: true });
      const dropped = createSampler({ kind: 'exact', groupSize: 4, batchSize: 8, dropLast: true }, labels, 3);
      expect(dropped.batchesOfEpoch(0)).to.deep.equal(batches.slice(0, 1));
      expect(dropped.imagesPerEpoch).to.equal(8);
    });

    it('without replacement, a class smaller than n is an error naming it; minClassSize n leaves it out instead', () => {
      const labels = labelsOf([2, 5, 7]);
      expectDmlErrorSync(
        () => createSampler({ kind: 'exact', groupSize: 4, batchSize: 8, replacement: false }, labels, 3),
        'E_ARG',
        'Expected at most 2 when replacement is false (1 class(es) have fewer images than groupSize, e.g. label 0 with 2; set replacement: true, or minClassSize: 4 to leave them out) for sampler.groupSize but received 4',
      );
      // With the label names (as the trainer passes them), the class is named, not its code.
      expectDmlErrorSync(
        () => createSampler({ kind: 'exact', groupSize: 4, batchSize: 8, replacement: false }, labels, 3, ['bag', 'coat', 'dress']),
        'E_ARG',
        'Expected at most 2 when replacement is false (1 class(es) have fewer images than groupSize, e.g. class "bag" with 2; set replacement: true, or minClassSize: 4 to leave them out) for sampler.groupSize but received 4',
      );
      const sampler = createSampler({ kind: 'exact', groupSize: 4, batchSize: 8, replacement: false, minClassSize: 4 }, labels, 3);
      expect(sampler.describe()).to.deep.include({ classes: 2, excludedClasses: 1, excludedImages: 2, batchesPerEpoch: 1 });
      expect(flat(sampler.batchesOfEpoch(0)).some((i) => labels[i] === 0)).to.equal(false);
    });
  });

  describe('determinism and resuming', () => {
    const labels = labelsOf([6, 9, 4, 12, 7, 3]);
    const specs: SamplerSpec[] = [
      { kind: 'filled', groupSize: 2, batchSize: 6 },
      { kind: 'sample', groupSize: 4, batchSize: 8, repeat: 3 },
      { kind: 'exact', groupSize: 4, batchSize: 8, repeat: 2 },
    ];
    for (const spec of specs) {
      it(`${spec.kind}: batches are a pure function of (seed, epoch), so a resumed run sees the same remaining batches`, () => {
        const a = createSampler(spec, labels, 42);
        const run = [0, 1, 2, 3].map((e) => a.batchesOfEpoch(e));
        // A fresh sampler (a resumed process) asked for epoch 2 directly, from batch 1 on.
        const resumed = createSampler(spec, labels, 42).batchesOfEpoch(2).slice(1);
        expect(resumed).to.deep.equal((run[2] as Int32Array[]).slice(1));
        expect(a.batchesOfEpoch(1)).to.deep.equal(run[1]);
        expect(run[0]).not.to.deep.equal(run[1]);
        expect(createSampler(spec, labels, 43).batchesOfEpoch(0)).not.to.deep.equal(run[0]);
        for (const batches of run) {
          expect(batches).to.have.length(a.batchesPerEpoch);
          expect(batches.reduce((s, b) => s + b.length, 0)).to.equal(a.imagesPerEpoch);
        }
      });
    }
  });

  describe('validation', () => {
    const labels = labelsOf([3, 3, 3]);
    it('names the bad parameter, what was expected and what was received', () => {
      const bad: Array<[unknown, string]> = [
        [{ kind: 'random', groupSize: 2, batchSize: 4 }, "Expected one of 'filled', 'sample', 'exact', 'pairing' for sampler.kind but received \"random\""],
        [{ kind: 'filled', groupSize: 1, batchSize: 4 }, 'Expected an integer >= 2 for sampler.groupSize but received 1'],
        [{ kind: 'filled', groupSize: 2.5, batchSize: 5 }, 'Expected an integer >= 2 for sampler.groupSize but received 2.5'],
        [{ kind: 'sample', groupSize: 4, batchSize: 10 }, 'Expected a multiple of groupSize 4 holding at least 2 groups (8, 12, ...) for sampler.batchSize but received 10'],
        [{ kind: 'sample', groupSize: 4, batchSize: 4 }, 'Expected a multiple of groupSize 4 holding at least 2 groups (8, 12, ...) for sampler.batchSize but received 4'],
        [{ kind: 'exact', groupSize: 2, batchSize: 4, repeat: 0 }, 'Expected an integer >= 1 for sampler.repeat but received 0'],
        [{ kind: 'exact', groupSize: 2, batchSize: 4, dropLast: 'yes' }, 'Expected a boolean for sampler.dropLast but received "yes"'],
        [{ kind: 'filled', groupSize: 2, batchSize: 4, lengthRule: 'down' }, "Expected 'nearest' or 'up' for sampler.lengthRule but received \"down\""],
      ];
      for (const [spec, message] of bad) expectDmlErrorSync(() => createSampler(spec as SamplerSpec, labels, 0), 'E_ARG', message);
      const ok: SamplerSpec = { kind: 'exact', groupSize: 2, batchSize: 4 };
      expectDmlErrorSync(() => createSampler(ok, [0, 1] as unknown as Int32Array, 0), 'E_ARG', 'Expected a non-empty Int32Array for labels but received array of length 2');
      expectDmlErrorSync(() => createSampler(ok, labels, -1), 'E_ARG', 'Expected an integer in [0, 2^32) for seed but received -1');
      expectDmlErrorSync(() => createSampler(ok, labels, 0).batchesOfEpoch(1.5), 'E_ARG', 'Expected an integer in [0, 2^32) for epoch but received 1.5');
    });

    it('warns (without printing) when a batch is larger than the images sampled, and not otherwise', () => {
      const small = createSampler({ kind: 'filled', groupSize: 6, batchSize: 30 }, labelsOf([3, 3, 2, 2]), 0);
      expect(small.warnings).to.deep.equal([
        'sampler.batchSize 30 is larger than the 10 training images sampled: each batch repeats every image about 2.4 times; lower batchSize to at most 10 or train on more images',
      ]);
      expect(small.batchesOfEpoch(0)[0]).to.have.length(24); // one round: 4 classes x 6
      expect(createSampler({ kind: 'filled', groupSize: 2, batchSize: 6 }, labelsOf([3, 3, 2, 2]), 0).warnings).to.deep.equal([]);
    });

    it('needs two classes, and a batch when dropLast is set', () => {
      expectDmlErrorSync(
        () => createSampler({ kind: 'filled', groupSize: 2, batchSize: 4 }, labelsOf([5, 1]), 0),
        'E_EMPTY',
        'The sampler needs at least 2 classes with at least 2 image(s) each, but the labels have 1 (of 2 classes); too small: label 1 with 1',
      );
      expectDmlErrorSync(
        () => createSampler({ kind: 'filled', groupSize: 2, batchSize: 4 }, labelsOf([5, 1]), 0, ['bag', 'coat']),
        'E_EMPTY',
        'The sampler needs at least 2 classes with at least 2 image(s) each, but the labels have 1 (of 2 classes); too small: class "coat" with 1',
      );
      expectDmlErrorSync(
        () => createSampler({ kind: 'exact', groupSize: 2, batchSize: 8, dropLast: true }, labels, 0),
        'E_EMPTY',
        'An epoch of the exact sampler holds 6 images, fewer than batchSize 8, and dropLast leaves no batch',
      );
    });
  });
});
