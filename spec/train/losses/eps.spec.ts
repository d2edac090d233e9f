/**
 * @file Tests of the EPS losses (paper 004): the easy positive, each loss's value on its own triplets
 * against a float64 evaluation of its formula, the options (distance, fallback, negative threshold,
 * per-class learnt β and its gradient), reproducible seeded draws, finite-difference gradients with
 * fixed draws, and degenerate batches.
 */
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';
import { EpsMarginLoss, EpsMultiSimilarityLoss, EpsTripletLoss, type EpsMarginOptions, type EpsTripletOptions } from '../../../lib/train/losses/eps.js';
import type { MetricLoss } from '../../../lib/train/losses/metric-loss.js';
import { normalizeEmbeddings } from '../../../lib/train/similarity.js';
import { clusteredBatch, evaluate, expectZeroOnDegenerateBatches, gradientCheck, normalizedRows, onCpuBackend, type RawBatch } from './loss-test-support.js';

const dot = (u: number[], v: number[]): number => u.reduce((s, x, i) => s + x * v[i]!, 0);
const relu = (x: number): number => Math.max(x, 0);

/** The triplets a fresh loss (same options, so same seed) draws on the batch. */
function tripletsOf(make: () => EpsTripletLoss | EpsMarginLoss, batch: RawBatch): { anchors: number[]; positives: number[]; negatives: number[] } {
  return tf.tidy(() => {
    const t = make().triplets(normalizeEmbeddings(tf.tensor2d(batch.values, [batch.rows, batch.dim])), batch.labels);
    return { anchors: Array.from(t.anchors), positives: Array.from(t.positives), negatives: Array.from(t.negatives) };
  }) as unknown as { anchors: number[]; positives: number[]; negatives: number[] };
}

/** A loss that builds a fresh instance for every evaluation, so every evaluation draws the same negatives. */
function freshEachTime(make: () => MetricLoss): MetricLoss {
  const template = make();
  return { name: template.name, config: template.config, trainableVariables: [], compute: (e, l) => make().compute(e, l) };
}

describe('train/losses/eps', () => {
  onCpuBackend();
  // Four classes of four plus a singleton (never an anchor, still a negative).
  const batch = clusteredBatch(21, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4], 6, 1.0);
  const rows = normalizedRows(batch);
  const labels = Array.from(batch.labels);

  it('pairs every anchor with its closest same-class image (the easy positive)', () => {
    const t = tripletsOf(() => new EpsTripletLoss(), batch);
    expect(t.anchors).to.deep.equal([...Array(16).keys()]);
    t.anchors.forEach((a, k) => {
      const same = labels.flatMap((l, j) => (l === labels[a] && j !== a ? [j] : []));
      const closest = same.reduce((best, j) => (dot(rows[a]!, rows[j]!) > dot(rows[a]!, rows[best]!) ? j : best));
      expect(t.positives[k]).to.equal(closest);
      expect(labels[t.negatives[k]!]).to.not.equal(labels[a]);
    });
  });

  describe('eps-triplet', () => {
    for (const options of [{}, { distance: 'euclidean', margin: 0.1 }, { semiHardFallback: 'drop', seed: 3 }] as EpsTripletOptions[]) {
      it(`equals the mean of [D_ap − D_an + m]_+ over its triplets, negatives semi-hard or fallback ${JSON.stringify(options)}`, () => {
        const t = tripletsOf(() => new EpsTripletLoss(options), batch);
        const margin = options.margin ?? 0.2;
        const d = (i: number, j: number): number => {
          const squared = Math.max(2 - 2 * dot(rows[i]!, rows[j]!), 0);
          return options.distance === 'euclidean' ? Math.sqrt(Math.max(squared, 1e-12)) : squared;
        };
        let semiHard = 0;
        const expected =
          t.anchors.reduce((sum, a, k) => {
            const [p, n] = [t.positives[k]!, t.negatives[k]!];
            const [dap, dan] = [Math.sqrt(2 - 2 * dot(rows[a]!, rows[p]!)), Math.sqrt(2 - 2 * dot(rows[a]!, rows[n]!))];
            if (dan > dap && dan < dap + margin) semiHard++;
            else expect(options.semiHardFallback, 'a fallback negative only with fallback random').to.not.equal('drop');
            return sum + relu(d(a, p) - d(a, n) + margin);
          }, 0) / t.anchors.length;
        expect(semiHard).to.be.above(0);
        const out = evaluate(new EpsTripletLoss(options), batch);
        expect(out.value).to.be.closeTo(expected, 1e-5);
        expect(out).to.include({ validCount: t.anchors.length, totalCount: 17 });
      });
    }

    it('draws reproducibly from its seed, and advances its generator with every batch', () => {
      const loose = clusteredBatch(5, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3], 4, 3);
      const draws = (seed: number): string[] => {
        const loss = new EpsTripletLoss({ seed, margin: 2 });
        return [0, 1, 2].map(() => tripletsOf(() => loss, loose).negatives.join());
      };
      expect(draws(7)).to.deep.equal(draws(7));
      expect(draws(7)).to.not.deep.equal(draws(8));
      expect(new Set(draws(7)).size, 'successive batches draw anew').to.be.above(1);
    });
  });

  describe('eps-margin', () => {
    const marginValue = (options: EpsMarginOptions, beta: (label: number) => number): number => {
      const t = tripletsOf(() => new EpsMarginLoss(options), batch);
      const d = (i: number, j: number): number => Math.sqrt(Math.max(2 - 2 * dot(rows[i]!, rows[j]!), 1e-12));
      let sum = 0;
      let nonZero = 0;
      t.anchors.forEach((a, k) => {
        const b = beta(labels[a]!);
        for (const term of [relu(d(a, t.positives[k]!) - b + 0.2), relu(b - d(a, t.negatives[k]!) + 0.2)]) {
          sum += term;
          if (term > 0) nonZero++;
        }
      });
      return sum / nonZero + (options.nu ?? 0) * t.anchors.reduce((s, a) => s + beta(labels[a]!), 0);
    };

    it('equals Σ(pos + neg)/#non-zero over its distance-weighted triplets (scalar and per-class β, ν)', () => {
      expect(evaluate(new EpsMarginLoss({ learnBeta: false }), batch).value).to.be.closeTo(marginValue({ learnBeta: false }, () => 1.2), 1e-5);
      const perClass = new EpsMarginLoss({ numClasses: 5, nu: 0.01 });
      const betas = [1.0, 1.1, 1.2, 1.3, 1.4];
      perClass.trainableVariables[0]!.assign(tf.tensor1d(betas));
      expect(evaluate(perClass, batch).value).to.be.closeTo(marginValue({ numClasses: 5, nu: 0.01 }, (label) => betas[label]!), 1e-5);
      perClass.trainableVariables[0]!.dispose();
    });

    it('learns β per class: its gradient matches finite differences', () => {
      const loss = new EpsMarginLoss({ numClasses: 5, beta: 1.0, seed: 2 });
      const variable = loss.trainableVariables[0]! as tf.Variable<tf.Rank.R1>;
      // Fresh instances draw the same negatives; share the variable's values with them.
      const valueAt = (betas: number[]): number => {
        const probe = new EpsMarginLoss({ numClasses: 5, beta: 1.0, seed: 2 });
        probe.trainableVariables[0]!.assign(tf.tensor1d(betas));
        const value = evaluate(probe, batch).value;
        probe.trainableVariables[0]!.dispose();
        return value;
      };
      const analytic = tf.tidy(() => {
        const { grads } = tf.variableGrads(() => loss.compute(normalizeEmbeddings(tf.tensor2d(batch.values, [batch.rows, batch.dim])), batch.labels).loss, [variable]);
        return Array.from(grads[variable.name]!.dataSync());
      });
      const base = [1, 1, 1, 1, 1];
      const h = 1e-3;
      base.forEach((_, c) => {
        const up = base.map((b, k) => (k === c ? b + h : b));
        const down = base.map((b, k) => (k === c ? b - h : b));
        expect(analytic[c]!, `class ${c}`).to.be.closeTo((valueAt(up) - valueAt(down)) / (2 * h), 2e-3);
      });
      expect(Math.max(...analytic.map(Math.abs))).to.be.above(1e-2);
      variable.dispose();
    });

    it('rejects labels outside [0, numClasses)', () => {
      const loss = new EpsMarginLoss({ numClasses: 2 });
      expectDmlErrorSync(
        () => tf.tidy(() => void loss.compute(normalizeEmbeddings(tf.tensor2d([[1, 0], [0, 1], [1, 1]])), Int32Array.of(0, 1, 2))),
        'E_ARG',
        "Expected a class index in [0, 2) (the margin loss's numClasses) for labels[2] but received 2",
      );
      loss.trainableVariables[0]!.dispose();
    });
  });

  describe('eps-ms', () => {
    const msValue = (negativeThreshold: 'hardest-positive' | 'easy-positive', epsilon: number): { value: number; kept: number } => {
      const [alpha, beta, base] = [2, 50, 1];
      let sum = 0;
      let kept = 0;
      rows.forEach((row, a) => {
        const same = labels.flatMap((l, j) => (l === labels[a] && j !== a ? [dot(row, rows[j]!)] : []));
        if (same.length === 0) return;
        const sap = Math.max(...same);
        const bound = negativeThreshold === 'hardest-positive' ? Math.min(...same) : sap;
        const negatives = labels.flatMap((l, j) => (l !== labels[a] && dot(row, rows[j]!) + epsilon > bound ? [dot(row, rows[j]!)] : []));
        if (negatives.length === 0) return;
        sum += Math.log1p(Math.exp(-alpha * (sap - base))) / alpha + Math.log1p(negatives.reduce((s, x) => s + Math.exp(beta * (x - base)), 0)) / beta;
        kept++;
      });
      return { value: sum / kept, kept };
    };

    for (const [negativeThreshold, epsilon] of [['hardest-positive', 0.1], ['easy-positive', 0.1], ['easy-positive', 0.4]] as const) {
      it(`equals the MS terms of the easy positive and the mined negatives (${negativeThreshold}, ε ${epsilon})`, () => {
        const expected = msValue(negativeThreshold, epsilon);
        const out = evaluate(new EpsMultiSimilarityLoss({ negativeThreshold, epsilon }), batch);
        expect(expected.kept).to.be.above(0);
        expect(out.value).to.be.closeTo(expected.value, 1e-5);
        expect(out).to.include({ validCount: expected.kept, totalCount: 17 });
      });
    }
  });

  describe('gradient w.r.t. the un-normalised embeddings matches finite differences (rel. error < 1e-3)', () => {
    const small = clusteredBatch(32, [0, 0, 0, 1, 1, 1, 2, 2, 2], 4, 0.9);
    const cases: [string, () => MetricLoss][] = [
      ['eps-triplet', () => new EpsTripletLoss({ margin: 0.5 })],
      ['eps-triplet euclidean', () => new EpsTripletLoss({ margin: 0.5, distance: 'euclidean' })],
      ['eps-margin', () => new EpsMarginLoss({ learnBeta: false, beta: 0.9 })],
      ['eps-ms', () => new EpsMultiSimilarityLoss({ base: 0.5, epsilon: 0.3 })],
    ];
    for (const [label, make] of cases) {
      it(label, () => {
        const loss = freshEachTime(make);
        const signature = (normalized: tf.Tensor2D): string => {
          const instance = make();
          return 'triplets' in instance ? Object.values((instance as EpsTripletLoss).triplets(normalized, small.labels)).map((a) => Array.from(a).join()).join('/') : '';
        };
        const check = gradientCheck(loss, small, 2e-3, signature);
        expect(check.gradientScale).to.be.above(1e-3);
        expect(check.relativeError).to.be.below(1e-3);
      });
    }
  });

  it('returns 0 with validCount 0 (never NaN) without a valid triplet', () => {
    expectZeroOnDegenerateBatches(new EpsTripletLoss());
    expectZeroOnDegenerateBatches(new EpsMarginLoss({ learnBeta: false }));
    expectZeroOnDegenerateBatches(new EpsMultiSimilarityLoss());
  });

  it('names bad options', () => {
    expectDmlErrorSync(() => new EpsTripletLoss({ seed: -1 }), 'E_ARG', 'Expected a number >= 0 for loss.seed but received -1');
    expectDmlErrorSync(() => new EpsMultiSimilarityLoss({ negativeThreshold: 'any' as 'easy-positive' }), 'E_ARG', 'Expected one of hardest-positive, easy-positive for loss.negativeThreshold but received "any"');
    expectDmlErrorSync(() => new EpsMarginLoss({ upperCutoff: 0 }), 'E_ARG', 'Expected a number > 0 for loss.upperCutoff but received 0');
  });
});
