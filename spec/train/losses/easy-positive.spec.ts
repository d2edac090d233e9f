/**
 * @file Tests of the easy-positive family (EP, EPHN, EPSHN, EPEN, HP, HPHN) and of the 1st/2nd-order
 * NCA terms: docs/methods.md worked examples 1.6 and 2.1, the validity and reduction options, the
 * authors' EasyPositiveHardNegative code (fixture), degenerate batches and finite-difference
 * gradients through the L2 normalisation.
 */
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';
import { NCA_TRIPLET_VARIANTS, NcaTripletLoss, type NcaTripletOptions, type NcaTripletVariant } from '../../../lib/train/losses/easy-positive.js';
import { ncaTripletLosses } from '../../../lib/train/losses/nca.js';
import {
  checkFixture,
  clusteredBatch,
  expectDeterministic,
  expectZeroOnDegenerateBatches,
  gradientCheck,
  onCpuBackend,
} from './loss-test-support.js';

/** Unit vectors at the given angles (degrees), as rows of a [B, 2] tensor. */
function atAngles(degrees: readonly number[]): tf.Tensor2D {
  return tf.tensor2d(degrees.flatMap((d) => [Math.cos((d * Math.PI) / 180), Math.sin((d * Math.PI) / 180)]), [degrees.length, 2]);
}

/** docs/methods.md 1.6: angles 0, 20, 70 (class 0); 10, 35 (class 1); 90 (class 2). */
const WORKED_ANGLES = [0, 20, 70, 10, 35, 90];
const WORKED_LABELS = Int32Array.of(0, 0, 0, 1, 1, 2);

interface AnchorRow {
  anchor: number;
  positive: number;
  negative: number;
  loss: number;
}

function anchorRows(variant: NcaTripletVariant, options: NcaTripletOptions, degrees: readonly number[], labels: Int32Array): AnchorRow[] {
  return tf.tidy(() => {
    const result = new NcaTripletLoss(variant, options).anchorLosses(atAngles(degrees), labels);
    const losses = result.losses === null ? [] : Array.from(result.losses.dataSync());
    return Array.from(result.anchors, (anchor, k) => ({
      anchor,
      positive: result.positives[k]!,
      negative: result.negatives[k]!,
      loss: losses[k]!,
    }));
  });
}

function rowOf(rows: AnchorRow[], anchor: number): AnchorRow {
  const row = rows.find((r) => r.anchor === anchor);
  expect(row, `anchor ${anchor} kept`).to.not.equal(undefined);
  return row!;
}

describe('train/losses/easy-positive', () => {
  onCpuBackend();

  describe('docs/methods.md 1.6 worked example (tau = 0.1)', () => {
    it('EPHN, 1st and 2nd order: anchors 0 and 2; anchor 5 (singleton class) dropped', () => {
      const first = anchorRows('ephn', {}, WORKED_ANGLES, WORKED_LABELS);
      expect(first.map((r) => r.anchor)).to.deep.equal([0, 1, 2, 3, 4]);
      expect(rowOf(first, 0)).to.include({ positive: 1, negative: 3 });
      expect(rowOf(first, 0).loss).to.be.closeTo(0.944, 1e-4);
      expect(rowOf(first, 2)).to.include({ positive: 1, negative: 5 });
      expect(rowOf(first, 2).loss).to.be.closeTo(3.0191, 1e-4);
      const second = anchorRows('ephn', { order: 2 }, WORKED_ANGLES, WORKED_LABELS);
      expect(rowOf(second, 0).loss).to.be.closeTo(0.6291, 1e-4);
      expect(rowOf(second, 2).loss).to.be.closeTo(0.7201, 1e-4);
    });

    it('EP (all negatives) = 1.0542 at anchor 0; HP picks 2, SHN picks 4 (anchor 0) and 3 (anchor 2)', () => {
      expect(rowOf(anchorRows('ep', {}, WORKED_ANGLES, WORKED_LABELS), 0).loss).to.be.closeTo(1.0542, 1e-4);
      expect(rowOf(anchorRows('hp', {}, WORKED_ANGLES, WORKED_LABELS), 0)).to.include({ positive: 2, negative: 3 });
      const semiHard = anchorRows('epshn', {}, WORKED_ANGLES, WORKED_LABELS);
      expect(rowOf(semiHard, 0)).to.include({ positive: 1, negative: 4 });
      expect(rowOf(semiHard, 2)).to.include({ positive: 1, negative: 3 });
      // softplus((S_an - S_ap)/tau) with S_ap = cos 20, S_an = cos 35 at anchor 0.
      const expected = Math.log1p(Math.exp((Math.cos((35 * Math.PI) / 180) - Math.cos((20 * Math.PI) / 180)) / 0.1));
      expect(rowOf(semiHard, 0).loss).to.be.closeTo(expected, 1e-5);
    });

    it('reduces the kept anchors by mean (default) or sum, counting 5 of 6', () => {
      const rows = anchorRows('ephn', {}, WORKED_ANGLES, WORKED_LABELS);
      const total = rows.reduce((sum, r) => sum + r.loss, 0);
      for (const [reduction, expected] of [['mean', total / 5], ['sum', total]] as const) {
        const out = tf.tidy(() => {
          const result = new NcaTripletLoss('ephn', { reduction }).compute(atAngles(WORKED_ANGLES), WORKED_LABELS);
          return { value: result.loss.dataSync()[0]!, validCount: result.validCount, totalCount: result.totalCount };
        });
        expect(out.value).to.be.closeTo(expected, 1e-5);
        expect(out).to.include({ validCount: 5, totalCount: 6 });
      }
    });
  });

  describe('docs/methods.md 2.1: L2nd at (S_ap, S_an) = (0.9, 0.8), tau = 0.1', () => {
    it('gives 0.16022 with dL/dS_ap = -0.14805 and dL/dS_an = 1.18438', () => {
      const [value, gradAp, gradAn] = tf.tidy(() => {
        const f = (ap: tf.Tensor, an: tf.Tensor): tf.Scalar => tf.sum(ncaTripletLosses(ap as tf.Tensor1D, an as tf.Tensor1D, 2, 0.1));
        const ap = tf.tensor1d([0.9]);
        const an = tf.tensor1d([0.8]);
        const [dAp, dAn] = tf.grads(f)([ap, an]);
        return [f(ap, an).dataSync()[0]!, dAp!.dataSync()[0]!, dAn!.dataSync()[0]!];
      });
      expect(value).to.be.closeTo(0.16022, 1e-5);
      expect(gradAp).to.be.closeTo(-0.14805, 1e-5);
      expect(gradAn).to.be.closeTo(1.18438, 1e-5);
      // 1st order at the same point: softplus(-1) and its derivatives -T/tau, +T/tau with T = sigmoid(-1).
      const firstOrder = tf.tidy(() => ncaTripletLosses(tf.tensor1d([0.9]), tf.tensor1d([0.8]), 1, 0.1).dataSync()[0]!);
      expect(firstOrder).to.be.closeTo(Math.log1p(Math.exp(-1)), 1e-6);
    });
  });

  describe('options', () => {
    it('validity: positive-similarity (HEAD code) drops anchors whose positive or negative has cosine <= 0', () => {
      // Class 0 at 0 and 120 degrees (positives at cosine -0.5), class 1 at 10 and 30 degrees.
      const degrees = [0, 120, 10, 30];
      const labels = Int32Array.of(0, 0, 1, 1);
      expect(anchorRows('ephn', {}, degrees, labels).map((r) => r.anchor)).to.deep.equal([0, 1, 2, 3]);
      expect(anchorRows('ephn', { validity: 'positive-similarity' }, degrees, labels).map((r) => r.anchor)).to.deep.equal([2, 3]);
      // EP looks at the hardest negative: anchor 2's hardest negative (0 deg, cos 10) is positive, so it stays.
      expect(anchorRows('ep', { validity: 'positive-similarity' }, degrees, labels).map((r) => r.anchor)).to.deep.equal([2, 3]);
    });

    it('duplicateThreshold: a near-duplicate positive is skipped by default and kept with null', () => {
      const degrees = [0, 0, 30, 5, 50];
      const labels = Int32Array.of(0, 0, 0, 1, 1);
      expect(rowOf(anchorRows('ephn', {}, degrees, labels), 0).positive).to.equal(2);
      expect(rowOf(anchorRows('ephn', { duplicateThreshold: null }, degrees, labels), 0).positive).to.equal(1);
      // An anchor whose only positive is a duplicate has no positive.
      expect(anchorRows('ephn', {}, [0, 0, 40], Int32Array.of(0, 0, 1))).to.deep.equal([]);
    });

    it('EPSHN drops an anchor without a semi-hard negative', () => {
      // Anchor 0: easy positive at 40 deg, every negative closer (10, 20 deg).
      const rows = anchorRows('epshn', {}, [0, 40, 10, 20], Int32Array.of(0, 0, 1, 1));
      expect(rows.map((r) => r.anchor)).to.not.include(0);
    });

    it('rejects bad options and batches with errors naming the parameter', () => {
      expectDmlErrorSync(() => new NcaTripletLoss('ephn', { temperature: 0 }), 'E_ARG', 'Expected a number > 0 for loss.temperature but received 0');
      expectDmlErrorSync(() => new NcaTripletLoss('ephn', { order: 3 as 1 }), 'E_ARG', 'Expected one of 1, 2 for loss.order but received 3');
      expectDmlErrorSync(
        () => new NcaTripletLoss('ephn', { reduction: 'max' as 'sum' }),
        'E_ARG',
        'Expected one of mean, sum for loss.reduction but received "max"',
      );
      expectDmlErrorSync(
        () => new NcaTripletLoss('ephn', { semiHardRule: 'inclusive' }),
        'E_ARG',
        /^Expected no unknown option \(known: temperature, order, reduction, validity, duplicateThreshold\) for loss.semiHardRule/,
      );
      expectDmlErrorSync(
        () => new NcaTripletLoss('ephn', { duplicateThreshold: 'off' as unknown as null }),
        'E_ARG',
        'Expected a number or null for loss.duplicateThreshold but received "off"',
      );
      expectDmlErrorSync(() => new NcaTripletLoss('ephn', 5 as NcaTripletOptions), 'E_ARG', 'Expected an object for loss but received 5');
      expectDmlErrorSync(() => new NcaTripletLoss('xx' as 'ep'), 'E_ARG', /^Expected one of ep, ephn, epshn, epen, hp, hphn for variant but received "xx"$/);
      const loss = new NcaTripletLoss('ephn');
      expectDmlErrorSync(
        () => tf.tidy(() => void loss.compute(atAngles([0, 10]), Int32Array.of(0))),
        'E_ARG',
        'Expected an Int32Array of length 2 (one label per embedding) for labels but received Int32Array of length 1',
      );
      expectDmlErrorSync(
        () => tf.tidy(() => void loss.compute(tf.zeros([2]) as unknown as tf.Tensor2D, Int32Array.of(0, 0))),
        'E_ARG',
        'Expected a tensor of rank 2 [B, D] for embeddings but received "a tensor of shape [2]"',
      );
    });
  });

  it('matches the EasyPositiveHardNegative code (initial commit and HEAD) to 1e-5', () => {
    checkFixture('ephn-authors-code', 'ephn', 1e-5);
  });

  it('returns 0 with validCount 0 (never NaN) for batches without a valid triplet', () => {
    for (const variant of NCA_TRIPLET_VARIANTS) expectZeroOnDegenerateBatches(new NcaTripletLoss(variant));
  });

  it('is deterministic', () => {
    expectDeterministic(new NcaTripletLoss('epshn', { order: 2 }), clusteredBatch(3, [0, 0, 0, 1, 1, 1, 2], 4, 0.7));
  });

  describe('gradient w.r.t. the un-normalised embeddings matches finite differences (rel. error < 1e-3)', () => {
    // Two classes of three and one of two, plus a singleton (dropped as anchor, used as negative).
    const batch = clusteredBatch(11, [0, 0, 0, 1, 1, 1, 2, 2, 3], 4, 0.6);
    for (const variant of NCA_TRIPLET_VARIANTS) {
      for (const order of [1, 2] as const) {
        it(`${variant}, order ${order}`, () => {
          const loss = new NcaTripletLoss(variant, { order });
          const selection = (normalized: tf.Tensor2D): string => {
            const result = loss.anchorLosses(normalized, batch.labels);
            return [result.anchors, result.positives, result.negatives].map((a) => a.join(',')).join('/');
          };
          const check = gradientCheck(loss, batch, 3e-3, selection);
          expect(check.gradientScale).to.be.above(1e-3);
          expect(check.relativeError).to.be.below(1e-3);
        });
      }
    }
  });
});
