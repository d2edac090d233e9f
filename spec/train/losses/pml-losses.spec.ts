/**
 * @file Golden values of Proxy-Anchor, ProxyNCA, Normalized Softmax, ArcFace, CosFace, Sub-center
 * ArcFace, SoftTriple, Circle, SupCon and FastAP against pytorch-metric-learning's formulas in float64
 * (scripts/reference/torch_pml_losses.py, spec/fixtures/losses/pml-losses.json): the loss, its gradient
 * with respect to the embeddings (through the L2 normalisation, as the trainer's model applies it and
 * PML's distances do) and, for the losses with a class table, with respect to the table,
 * on two batches (one with a class absent from the table's batch and a singleton class) and two option
 * sets each, and the pair losses on PML's miners (batch-hard, pair-margin, multi-similarity), whose
 * mined tuples are checked too; plus what every one of them must refuse (labels outside the table, a missing numClasses,
 * an unknown embedding size, embeddings of another size) and survive (degenerate batches).
 */
import { readFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { createLoss, type LossSpec } from '../../../lib/train/losses/registry.js';
import { labelPairMasks, normalizeEmbeddings } from '../../../lib/train/similarity.js';
import { LossBatch } from '../../../lib/train/losses/loss-batch.js';
import { mineBatchHardTriplets } from '../../../lib/train/mining/batch-hard-miner.js';
import { minePairsByMargin } from '../../../lib/train/mining/pair-margin-miner.js';
import { mineMultiSimilarityPairs } from '../../../lib/train/mining/multi-similarity-miner.js';
import type { PairMiner } from '../../../lib/train/mining/pair-miner.js';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';
import { expectZeroOnDegenerateBatches, onCpuBackend } from './loss-test-support.js';

interface GoldenCase {
  loss: string;
  batch: string;
  options: Record<string, unknown>;
  labels: number[];
  embeddings: number[][];
  table?: number[][];
  value: number;
  validCount: number;
  gradEmbeddings: number[][];
  gradTable?: number[][];
}

interface MinerCase {
  batch: string;
  miner: PairMiner & object;
  labels: number[];
  embeddings: number[][];
  mined: { anchors?: number[]; positives?: number[]; negatives?: number[]; positive?: number[][]; negative?: number[][] };
}

const fixture = JSON.parse(readFileSync(new URL('../../fixtures/losses/pml-losses.json', import.meta.url), 'utf8')) as { cases: GoldenCase[]; miners: MinerCase[] };

/** max |a − b| / max |b|: the largest difference relative to the gradient's scale. */
function relativeDifference(actual: ArrayLike<number>, expected: readonly number[]): number {
  let worst = 0;
  let scale = 0;
  expected.forEach((e, i) => {
    worst = Math.max(worst, Math.abs(actual[i]! - e));
    scale = Math.max(scale, Math.abs(e));
  });
  return worst / scale;
}

const TABLE_LOSSES = ['proxy-anchor', 'proxy-nca', 'normalized-softmax', 'arcface', 'cosface', 'subcenter-arcface', 'soft-triple'];

describe('train/losses: the losses of pytorch-metric-learning, against its formulas in float64', () => {
  onCpuBackend();

  for (const c of fixture.cases) {
    it(`${c.loss} ${JSON.stringify(c.options)} on ${c.batch}: loss, d/d embeddings${c.table ? ', d/d table' : ''}`, () => {
      const dim = c.embeddings[0]!.length;
      const loss = createLoss({ name: c.loss, ...c.options, ...(c.table ? { embeddingSize: dim } : {}) } as LossSpec);
      const table = loss.trainableVariables[0];
      if (c.table) table!.assign(tf.tensor2d(c.table));
      const embeddings = tf.variable(tf.tensor2d(c.embeddings));
      let counts = { validCount: 0, totalCount: 0 };
      const { value, grads } = tf.variableGrads(() => {
        const out = loss.compute(normalizeEmbeddings(embeddings), Int32Array.from(c.labels));
        counts = { validCount: out.validCount, totalCount: out.totalCount };
        return out.loss;
      }, [embeddings, ...loss.trainableVariables]);
      const got = value.dataSync()[0]!;
      expect(Math.abs(got - c.value) / Math.max(1, Math.abs(c.value)), `loss ${got} vs ${c.value}`).to.be.below(2e-6);
      expect(counts.validCount).to.equal(c.validCount);
      // The losses over anchors count the batch; contrastive and triplet-margin count pairs and triplets.
      if (!['contrastive', 'triplet-margin'].includes(c.loss)) expect(counts.totalCount).to.equal(c.labels.length);
      expect(relativeDifference(grads[embeddings.name]!.dataSync(), c.gradEmbeddings.flat()), 'd/d embeddings').to.be.below(2e-4);
      if (c.table) expect(relativeDifference(grads[table!.name]!.dataSync(), c.gradTable!.flat()), 'd/d table').to.be.below(2e-4);
      tf.dispose([value, ...Object.values(grads), embeddings, ...loss.trainableVariables]);
    });
  }

  it('covers every new loss, both batches and two option sets each, and the pair losses on each miner', () => {
    const names = new Set(fixture.cases.map((c) => c.loss));
    expect([...names]).to.deep.equal([...TABLE_LOSSES, 'circle', 'supcon', 'fast-ap', 'contrastive', 'triplet-margin']);
    for (const name of names) expect(fixture.cases.filter((c) => c.loss === name).length, name).to.be.at.least(2);
    const miners = fixture.cases.map((c) => c.options['miner']).filter((m) => m !== undefined).map((m) => (typeof m === 'string' ? m : (m as { name: string }).name));
    expect(new Set(miners)).to.deep.equal(new Set(['batch-hard', 'pair-margin', 'multi-similarity']));
  });

  describe("PML's miners mine the same tuples", () => {
    for (const m of fixture.miners) {
      it(`${JSON.stringify(m.miner)} on ${m.batch}`, () => {
        const batch = new LossBatch(tf.tensor2d(m.embeddings), Int32Array.from(m.labels));
        if (m.miner.name === 'batch-hard') {
          const triplets = mineBatchHardTriplets(batch.distances('euclidean').dataSync(), batch.masks);
          expect({ anchors: Array.from(triplets.anchors), positives: Array.from(triplets.positives), negatives: Array.from(triplets.negatives) }).to.deep.equal(m.mined);
        } else {
          const masks = batch.minedMasks(m.miner);
          const pairs = (mask: Uint8Array): number[][] => [...mask.keys()].filter((k) => mask[k] === 1).map((k) => [Math.floor(k / m.labels.length), k % m.labels.length]);
          expect({ positive: pairs(masks.positive), negative: pairs(masks.negative) }).to.deep.equal(m.mined);
        }
        // Mined pairs are label pairs.
        const labels = labelPairMasks(Int32Array.from(m.labels));
        const mined = batch.minedMasks(m.miner);
        mined.positive.forEach((v, k) => expect(v <= labels.positive[k]!).to.equal(true));
        mined.negative.forEach((v, k) => expect(v <= labels.negative[k]!).to.equal(true));
      });
    }
  });

  describe('bad input: one clear error', () => {
    for (const name of TABLE_LOSSES) {
      it(`${name}: numClasses missing, an unknown embedding size, a label outside the table, embeddings of another size`, () => {
        expectDmlErrorSync(() => createLoss({ name, embeddingSize: 4 } as LossSpec), 'E_ARG', 'Expected a number for loss.numClasses but received undefined');
        expectDmlErrorSync(
          () => createLoss({ name, numClasses: 3 } as LossSpec),
          'E_ARG',
          `Expected the embedding dimension of the ${name} loss's class table (the model spec does not give it) for loss.embeddingSize but received undefined`,
        );
        const loss = createLoss({ name, numClasses: 3 } as LossSpec, { embeddingDim: 4 });
        expect(loss.config).to.include({ numClasses: 3 });
        const embeddings = tf.tensor2d([[1, 0, 0, 0], [0, 1, 0, 0]]);
        expectDmlErrorSync(() => loss.compute(embeddings, Int32Array.of(0, 3)), 'E_ARG', `Expected a class index in [0, 3) (the ${name} loss's numClasses) for labels[1] but received 3`);
        expectDmlErrorSync(
          () => loss.compute(tf.tensor2d([[1, 0, 0], [0, 1, 0]]), Int32Array.of(0, 1)),
          'E_ARG',
          `Expected the embeddings' dimension 3 (the ${name} loss's class table has 4) for loss.embeddingSize but received 4`,
        );
        tf.dispose([embeddings, ...loss.trainableVariables]);
      });
    }

    it('the miners name a matrix of the wrong size and a margin that is not a number', () => {
      const masks = labelPairMasks(Int32Array.of(0, 0, 1));
      expectDmlErrorSync(() => mineBatchHardTriplets(new Float32Array(4), masks), 'E_ARG', /^Expected a row-major 3x3 matrix \(9 values\) for distances but received/);
      expectDmlErrorSync(() => minePairsByMargin(new Float32Array(9), masks, Number.NaN, 0.8), 'E_ARG', 'Expected a finite number for posMargin but received NaN');
      expectDmlErrorSync(() => mineMultiSimilarityPairs(new Float32Array(9), masks, -1), 'E_ARG', 'Expected a finite number >= 0 for epsilon but received -1');
    });

    it('a miner of an unknown name, or with an option of another miner, is named', () => {
      expectDmlErrorSync(() => createLoss({ name: 'contrastive', miner: { name: 'hardest' } } as unknown as LossSpec), 'E_ARG', /^Expected one of multi-similarity, pair-margin, batch-hard for loss\.miner\.name but received "hardest"$/);
      expectDmlErrorSync(() => createLoss({ name: 'circle', miner: { name: 'batch-hard', epsilon: 0.1 } } as unknown as LossSpec), 'E_ARG', /^Expected no unknown option \(known: name\) for loss\.miner\.epsilon but received 0\.1$/);
    });

    it('the pair losses survive degenerate batches (one class, singletons, one image, none): a constant 0', () => {
      expectZeroOnDegenerateBatches(createLoss({ name: 'circle' }));
      expectZeroOnDegenerateBatches(createLoss({ name: 'supcon' }));
      // FastAP ranks a one-class batch perfectly: 1 − AP = 0 up to rounding, every anchor counted.
      expectZeroOnDegenerateBatches(createLoss({ name: 'fast-ap' }), { oneClass: true });
    });
  });
});
