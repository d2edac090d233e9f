/**
 * @file Tests of the margin loss: pytorch-metric-learning golden values (scalar beta, per-class
 * learnable beta with nu, learnable scalar beta), the trainable variables, degenerate batches and
 * finite-difference gradients w.r.t. the embeddings and beta.
 */
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';
import { MarginLoss } from '../../../lib/train/losses/margin.js';
import { normalizeEmbeddings } from '../../../lib/train/similarity.js';
import {
  checkFixture,
  clusteredBatch,
  evaluate,
  expectDeterministic,
  expectZeroOnDegenerateBatches,
  gradientCheck,
  onCpuBackend,
} from './loss-test-support.js';

describe('train/losses/margin', () => {
  onCpuBackend();

  it('equals MarginLoss with DivisorReducer (fixed, per-class and scalar learnable beta) to 1e-5', () => {
    checkFixture('margin', 'margin', 1e-5, (options) => {
      const { assignBeta, ...rest } = options;
      if (assignBeta === undefined) return { options: rest };
      return { options: rest, after: (loss) => loss.trainableVariables[0]!.assign(tf.tensor1d(assignBeta as number[])) };
    });
  });

  it('owns one variable when beta is learnt: [1] shared or [numClasses] per class', () => {
    const none = new MarginLoss();
    const shared = new MarginLoss({ learnBeta: true });
    const perClass = new MarginLoss({ learnBeta: true, numClasses: 5, beta: 1.1 });
    expect(none.trainableVariables).to.have.length(0);
    expect(shared.trainableVariables[0]!.shape).to.deep.equal([1]);
    expect(Array.from(perClass.trainableVariables[0]!.dataSync())).to.deep.equal(new Array(5).fill(Math.fround(1.1)));
    expect(perClass.config).to.include({ learnBeta: true, numClasses: 5, beta: 1.1, margin: 0.2, nu: 0 });
    for (const loss of [shared, perClass]) loss.trainableVariables[0]!.dispose();
  });

  it('rejects labels outside [0, numClasses) when beta is per class', () => {
    const loss = new MarginLoss({ numClasses: 2 });
    const batch = clusteredBatch(1, [0, 2, 0, 1], 3, 0.5);
    expectDmlErrorSync(
      () => evaluate(loss, batch),
      'E_ARG',
      "Expected a class index in [0, 2) (the margin loss's numClasses) for labels[1] but received 2",
    );
    expectDmlErrorSync(() => new MarginLoss({ numClasses: 0 }), 'E_ARG', 'Expected a number >= 1 for loss.numClasses but received 0');
  });

  it('returns 0 with validCount 0 without triplets or active terms, and is deterministic', () => {
    expectZeroOnDegenerateBatches(new MarginLoss());
    // A margin of -5: no distance comes within 5 of beta, so no term is active.
    expect(evaluate(new MarginLoss({ margin: -5 }), clusteredBatch(2, [0, 0, 1, 1], 3, 0.5))).to.deep.equal({
      value: 0,
      validCount: 0,
      totalCount: 16,
    });
    expectDeterministic(new MarginLoss(), clusteredBatch(3, [0, 0, 1, 1, 2, 2], 4, 0.7));
  });

  it('gradient through the normalisation matches finite differences', () => {
    const batch = clusteredBatch(51, [0, 0, 0, 1, 1, 2, 2, 3], 4, 0.8);
    const check = gradientCheck(new MarginLoss({ beta: 1.0 }), batch, 3e-3);
    expect(check.relativeError).to.be.below(1e-3);
    expect(check.gradientScale).to.be.above(1e-3);
  });

  it('gradient w.r.t. a learnable per-class beta matches finite differences', () => {
    const batch = clusteredBatch(52, [0, 0, 0, 1, 1, 2, 2], 4, 0.8);
    const loss = new MarginLoss({ learnBeta: true, numClasses: 3, nu: 0.1, beta: 1.0 });
    const beta = loss.trainableVariables[0]!;
    const embeddings = tf.tensor2d(batch.values, [batch.rows, batch.dim]);
    const lossValue = (): number => tf.tidy(() => loss.compute(normalizeEmbeddings(embeddings), batch.labels).loss.dataSync()[0]!);
    const { grads } = tf.tidy(() => tf.variableGrads(() => loss.compute(normalizeEmbeddings(embeddings), batch.labels).loss, [beta]));
    const analytic = grads[beta.name]!.dataSync();
    const original = Array.from(beta.dataSync());
    const step = 1e-3;
    for (let c = 0; c < 3; c++) {
      const at = (offset: number): number => {
        beta.assign(tf.tensor1d(original.map((v, k) => (k === c ? v + offset : v))));
        return lossValue();
      };
      const numeric = (at(step) - at(-step)) / (2 * step);
      expect(Math.abs(numeric - analytic[c]!), `class ${c}`).to.be.below(1e-3 * Math.max(1, Math.abs(analytic[c]!)));
    }
    tf.dispose([embeddings, grads[beta.name]!, beta]);
  });
});
