/**
 * @file Tests of the direct-gradient framework (paper 003): the injected gradient of the presets with
 * a closed form equals that loss's autograd gradient to 1e-5 (w.r.t. the normalised features and
 * through the normalisation), the components (directions, pair and triplet weights, the MS relative
 * terms and the sc1/sc2 masks), the options, degenerate batches and determinism.
 */
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';
import {
  DIRECT_GRADIENT_NAMES,
  DirectGradientLoss,
  type DirectGradientName,
  type DirectGradientOptions,
} from '../../../lib/train/losses/direct-gradient.js';
import {
  pairWeights,
  tripletDirections,
  tripletWeight,
  type TripletSimilarities,
  type WeightParameters,
} from '../../../lib/train/losses/direct-gradient-weights.js';
import { createLoss } from '../../../lib/train/losses/registry.js';
import { normalizeEmbeddings, selectRows } from '../../../lib/train/similarity.js';
import { clusteredBatch, expectDeterministic, expectZeroOnDegenerateBatches, onCpuBackend, type RawBatch } from './loss-test-support.js';

const PARAMETERS: WeightParameters = { tau: 10, alpha: 2, beta: 10, base: 0.5, msRelative: 'mean-others', sc2Boundary: 'circle' };

/** Closed-form per-triplet losses of the presets, written with tf ops (autograd reference). */
const CLOSED_FORMS: Partial<Record<DirectGradientName, (fa: tf.Tensor2D, fp: tf.Tensor2D, fn: tf.Tensor2D, tau: number) => tf.Tensor1D>> = {
  'dg-triplet-euclidean': (fa, fp, fn) => tf.div(tf.sub(tf.sum(tf.square(tf.sub(fa, fp)), 1), tf.sum(tf.square(tf.sub(fa, fn)), 1)), 4),
  'dg-triplet-cosine': (fa, fp, fn, tau) => tf.div(tf.softplus(tf.mul(tf.sub(dots(fa, fn), dots(fa, fp)), tau)), tau),
  'dg-circle': (fa, fp, fn, tau) => {
    const sap = dots(fa, fp);
    const san = dots(fa, fn);
    return tf.div(tf.softplus(tf.mul(tf.sub(tf.square(san), tf.mul(sap, tf.sub(2, sap))), tau)), 2 * tau);
  },
  'dg-binomial-deviance': (fa, fp, fn) => {
    const positive = tf.div(tf.softplus(tf.mul(tf.sub(dots(fa, fp), 0.5), -2)), 2);
    const negative = tf.div(tf.softplus(tf.mul(tf.sub(dots(fa, fn), 0.5), 10)), 10);
    return tf.div(tf.add(positive, negative), 2);
  },
};

function dots(u: tf.Tensor2D, v: tf.Tensor2D): tf.Tensor1D {
  return tf.sum(tf.mul(u, v), 1);
}

/** Loss value and gradient w.r.t. `x` of the direct-gradient loss and of its closed form, on the same triplets. */
function compareWithClosedForm(
  name: DirectGradientName,
  options: DirectGradientOptions,
  batch: RawBatch,
  throughNormalization: boolean,
): { injected: Float32Array; reference: Float32Array; value: number; referenceValue: number } {
  const loss = new DirectGradientLoss(name, options);
  const closedForm = CLOSED_FORMS[name]!;
  const tau = options.tau ?? 10;
  return tf.tidy(() => {
    const x = tf.tensor2d(batch.values, [batch.rows, batch.dim]);
    const features = (input: tf.Tensor): tf.Tensor2D => (throughNormalization ? normalizeEmbeddings(input as tf.Tensor2D) : (input as tf.Tensor2D));
    const at = throughNormalization ? x : normalizeEmbeddings(x);
    const mined = loss.triplets(features(at), batch.labels);
    expect(mined.anchors.length).to.be.above(3);
    const reference = (input: tf.Tensor): tf.Scalar => {
      const f = features(input);
      const perTriplet = closedForm(selectRows(f, mined.anchors), selectRows(f, mined.positives), selectRows(f, mined.negatives), tau);
      return (options.reduction === 'sum' ? tf.sum(perTriplet) : tf.mean(perTriplet)) as tf.Scalar;
    };
    const injected = tf.grad((input: tf.Tensor) => loss.compute(features(input), batch.labels).loss)(at);
    return {
      injected: injected.dataSync() as Float32Array,
      reference: tf.grad(reference)(at).dataSync() as Float32Array,
      value: loss.compute(features(at), batch.labels).loss.dataSync()[0]!,
      referenceValue: reference(at).dataSync()[0]!,
    };
  });
}

function maxAbsDifference(a: ArrayLike<number>, b: ArrayLike<number>): { difference: number; scale: number } {
  let difference = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    difference = Math.max(difference, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return { difference, scale };
}

const dot = (u: ArrayLike<number>, v: ArrayLike<number>): number => Array.from(u).reduce((s, x, d) => s + x * v[d]!, 0);
const unit = (v: number[]): number[] => v.map((x) => x / Math.hypot(...v));

describe('train/losses/direct-gradient', () => {
  onCpuBackend();

  describe('the injected gradient equals the closed-form loss\'s autograd gradient (1e-5)', () => {
    // Three classes of three and one of two, plus a singleton (dropped as anchor, still a negative).
    const batch = clusteredBatch(5, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 4], 6, 0.9);
    for (const name of Object.keys(CLOSED_FORMS) as DirectGradientName[]) {
      for (const [options, through] of [
        [{}, false],
        [{}, true],
        [{ reduction: 'sum', tau: 4 }, true],
      ] as const) {
        it(`${name} ${JSON.stringify(options)}, w.r.t. ${through ? 'the raw embeddings (through the L2 normalisation)' : 'the normalised features'}`, () => {
          const result = compareWithClosedForm(name, options, batch, through);
          const { difference, scale } = maxAbsDifference(result.injected, result.reference);
          expect(scale, 'gradient not vacuous').to.be.above(1e-2);
          expect(difference).to.be.below(1e-5);
          expect(result.value, 'reported value = closed form').to.be.closeTo(result.referenceValue, 1e-5);
        });
      }
    }
  });

  it('dg-triplet-cosine injects EPHN 1st order\'s gradient divided by τ, through the normalisation (same triplets, temperature 1/τ)', () => {
    const batch = clusteredBatch(7, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 4], 6, 0.9);
    for (const tau of [10, 4]) {
      const gradient = (loss: { compute(e: tf.Tensor2D, labels: Int32Array): { loss: tf.Scalar } }): Float32Array =>
        tf.tidy(() => tf.grad((x: tf.Tensor) => loss.compute(normalizeEmbeddings(x as tf.Tensor2D), batch.labels).loss)(tf.tensor2d(batch.values, [batch.rows, batch.dim])).dataSync() as Float32Array);
      const preset = gradient(new DirectGradientLoss('dg-triplet-cosine', { tau }));
      const ephn = gradient(createLoss({ name: 'ephn', order: 1, temperature: 1 / tau }));
      const { difference, scale } = maxAbsDifference(preset, ephn.map((g) => g / tau));
      expect(scale, 'gradient not vacuous').to.be.above(1e-3);
      expect(difference).to.be.below(1e-6);
    }
  });

  describe('components', () => {
    it('triplet weights: T_con, T_cos, T_cir and the sc1 / sc2 masks (both sc2 readings)', () => {
      const sig = (z: number): number => 1 / (1 + Math.exp(-z));
      expect(tripletWeight('con', 0.8, 0.3, PARAMETERS)).to.deep.equal({ weight: 0.5, keepPositive: true });
      expect(tripletWeight('cos', 0.8, 0.3, PARAMETERS).weight).to.be.closeTo(sig(10 * (0.3 - 0.8)), 1e-12);
      expect(tripletWeight('cir', 0.8, 0.3, PARAMETERS).weight).to.be.closeTo(sig(10 * (0.09 - 0.8 * 1.2)), 1e-12);
      expect(tripletWeight('cos+sc1', 0.5, 0.6, PARAMETERS)).to.include({ keepPositive: false });
      expect(tripletWeight('cos+sc1', 0.6, 0.5, PARAMETERS)).to.include({ keepPositive: true });
      // (S_ap, S_an) = (0.9, 0.2): (1 - S_ap)^2 + S_an^2 = 0.05 <= 0.5, inside the easy circle.
      expect(tripletWeight('cir+sc2', 0.9, 0.2, PARAMETERS).keepPositive).to.equal(true);
      expect(tripletWeight('cir+sc2', 0.3, 0.6, PARAMETERS).keepPositive).to.equal(false);
      const text = { ...PARAMETERS, sc2Boundary: 'text' as const };
      expect(tripletWeight('cir+sc2', 0.9, 0.2, text).keepPositive).to.equal(false);
      expect(tripletWeight('cir+sc2', 0.3, 0.6, text).keepPositive).to.equal(true);
    });

    it('pair weights P_con, P_euc, P_lin, P_sig', () => {
      const t: TripletSimilarities = { sap: 0.7, san: 0.4, dap: 0.77, dan: 1.1, relativePositives: [], relativeNegatives: [] };
      expect(pairWeights('con', t, PARAMETERS)).to.deep.equal([1, 1]);
      expect(pairWeights('euc', t, PARAMETERS)).to.deep.equal([0.77, 1.1]);
      const [lp, ln] = pairWeights('lin', t, PARAMETERS);
      expect(lp).to.be.closeTo(0.3, 1e-12);
      expect(ln).to.be.closeTo(0.4, 1e-12);
      const [sp, sn] = pairWeights('sig', t, PARAMETERS);
      expect(sp).to.be.closeTo(1 / (1 + Math.exp(2 * 0.2)), 1e-12);
      expect(sn).to.be.closeTo(1 / (1 + Math.exp(-10 * -0.1)), 1e-12);
      // With empty relative sets the MS weights reduce to P_sig and P_lin (mean-others).
      expect(pairWeights('sig-ms', t, PARAMETERS)).to.deep.equal([sp, sn]);
      expect(pairWeights('lin-ms', t, PARAMETERS)).to.deep.equal([lp, ln]);
    });

    it('P_sig-ms with sum-with-selected is the MS loss\'s derivative w.r.t. the selected pair', () => {
      const { alpha, beta, base } = PARAMETERS;
      const sap = 0.8;
      const san = 0.6;
      const otherPositives = [0.5, 0.65];
      const otherNegatives = [0.45, 0.55];
      // L_MS = (1/α) log(1 + Σ_P e^{−α(S−λ)}) + (1/β) log(1 + Σ_N e^{β(S−λ)}), P and N including the selected pair.
      const positiveTerm = (s: number): number => Math.log1p([s, ...otherPositives].reduce((t, r) => t + Math.exp(-alpha * (r - base)), 0)) / alpha;
      const negativeTerm = (s: number): number => Math.log1p([s, ...otherNegatives].reduce((t, r) => t + Math.exp(beta * (r - base)), 0)) / beta;
      const h = 1e-6;
      const dPositive = (positiveTerm(sap + h) - positiveTerm(sap - h)) / (2 * h);
      const dNegative = (negativeTerm(san + h) - negativeTerm(san - h)) / (2 * h);
      const t: TripletSimilarities = { sap, san, dap: 0, dan: 0, relativePositives: otherPositives, relativeNegatives: otherNegatives };
      const [wp, wn] = pairWeights('sig-ms', t, { ...PARAMETERS, msRelative: 'sum-with-selected' });
      expect(wp).to.be.closeTo(-dPositive, 1e-8);
      expect(wn).to.be.closeTo(dNegative, 1e-8);
      // mean-others: m+ = mean e^{α(S_ap − R)}; mean-with-selected adds the selected pair's e^0 = 1.
      const mOthers = (Math.exp(alpha * 0.3) + Math.exp(alpha * 0.15)) / 2;
      expect(pairWeights('sig-ms', t, PARAMETERS)[0]).to.be.closeTo(1 / (mOthers + Math.exp(alpha * (sap - base))), 1e-12);
      const mWith = (1 + Math.exp(alpha * 0.3) + Math.exp(alpha * 0.15)) / 3;
      expect(pairWeights('sig-ms', t, { ...PARAMETERS, msRelative: 'mean-with-selected' })[0]).to.be.closeTo(1 / (mWith + Math.exp(alpha * (sap - base))), 1e-12);
      // lin-ms (Eq. 14): (1 − mean(S_ap − R))(1 − S_ap), (1 + mean(S_an − R)) S_an.
      const [lp, ln] = pairWeights('lin-ms', t, PARAMETERS);
      expect(lp).to.be.closeTo((1 - (0.3 + 0.15) / 2) * 0.2, 1e-12);
      expect(ln).to.be.closeTo((1 + (0.15 + 0.05) / 2) * 0.6, 1e-12);
    });

    it('directions: e_euc and e_cos; the orthogonal variants are unit vectors orthogonal to f_a − f_p', () => {
      const fa = unit([1, 0.2, 0.1]);
      const fp = unit([0.8, 0.5, -0.2]);
      const fn = unit([0.7, -0.1, 0.6]);
      const cos = tripletDirections('cos', fa, fp, fn, 'negative');
      expect(Array.from(cos.ep)).to.deep.equal(fa.map((x) => -x));
      expect(Array.from(cos.en)).to.deep.equal(fa);
      expect(Array.from(cos.eap)).to.deep.equal(fp.map((x) => -x));
      expect(Array.from(cos.ean)).to.deep.equal(fn);
      const euc = tripletDirections('euc', fa, fp, fn, 'negative');
      const toward = unit(fp.map((x, d) => x - fa[d]!));
      Array.from(euc.ep).forEach((x, d) => expect(x).to.be.closeTo(toward[d]!, 1e-12));
      Array.from(euc.eap).forEach((x, d) => expect(x).to.be.closeTo(-toward[d]!, 1e-12));
      const axis = fa.map((x, d) => x - fp[d]!);
      for (const kind of ['euc-orth', 'cos-orth'] as const) {
        const negativeOnly = tripletDirections(kind, fa, fp, fn, 'negative');
        expect(dot(negativeOnly.en, axis)).to.be.closeTo(0, 1e-12);
        expect(Math.hypot(...negativeOnly.en)).to.be.closeTo(1, 1e-12);
        // e_n keeps a positive component along its unprojected direction.
        const plain = tripletDirections(kind === 'euc-orth' ? 'euc' : 'cos', fa, fp, fn, 'negative');
        expect(dot(negativeOnly.en, plain.en)).to.be.above(0);
        expect(Array.from(negativeOnly.ean)).to.deep.equal(Array.from(plain.ean));
        const both = tripletDirections(kind, fa, fp, fn, 'negative-and-anchor');
        expect(dot(both.ean, axis)).to.be.closeTo(0, 1e-12);
        expect(Math.hypot(...both.ean)).to.be.closeTo(1, 1e-12);
      }
      // Guard: a positive identical to the anchor leaves e_n unprojected, and its Euclidean direction is 0.
      const same = tripletDirections('euc-orth', fa, fa, fn, 'negative');
      expect(Array.from(same.ep)).to.deep.equal([0, 0, 0]);
      expect(Array.from(same.en)).to.deep.equal(Array.from(tripletDirections('euc', fa, fa, fn, 'negative').en));
    });
  });

  it('injects T·P·e summed over the triplets each feature is in (cos-orth + lin-ms + cir + sc2, by hand)', () => {
    // The expected gradient assembled from the component functions over the mined triplets, with the
    // multi-similarity relative sets written out; τ = 1 (paper 003's Fig. 3) keeps every weight visible.
    const batch = clusteredBatch(8, [0, 0, 0, 1, 1, 1, 2, 2], 5, 1.2);
    const loss = new DirectGradientLoss('dg-best', { tripletWeight: 'cir+sc2', reduction: 'sum', tau: 1 });
    const parameters = { ...PARAMETERS, tau: 1 };
    const { gradient, mined, features, similarities } = tf.tidy(() => {
      const f = normalizeEmbeddings(tf.tensor2d(batch.values, [batch.rows, batch.dim]));
      return {
        gradient: Array.from(tf.grad((x: tf.Tensor) => loss.compute(x as tf.Tensor2D, batch.labels).loss)(f).dataSync()),
        mined: { ...loss.triplets(f, batch.labels) },
        features: Array.from(f.dataSync()),
        similarities: Array.from(tf.matMul(f, f, false, true).dataSync()),
      };
    });
    const row = (i: number): number[] => features.slice(i * batch.dim, (i + 1) * batch.dim);
    const expected = new Array<number>(batch.rows * batch.dim).fill(0);
    let masked = 0;
    let withRelative = 0;
    const relativeOf = (a: number, selected: number, positive: boolean): number[] => {
      // The multi-similarity rule over the anchor's row (ε = 0.1), minus the selected pair.
      const same = (j: number): boolean => batch.labels[j] === batch.labels[a] && j !== a;
      const other = (j: number): boolean => batch.labels[j] !== batch.labels[a];
      const s = (j: number): number => similarities[a * batch.rows + j]!;
      const indices = [...Array(batch.rows).keys()];
      const hardestNegative = Math.max(...indices.filter(other).map(s));
      const hardestPositive = Math.min(...indices.filter(same).map(s));
      return indices
        .filter((j) => j !== selected && (positive ? same(j) && s(j) - 0.1 < hardestNegative : other(j) && s(j) + 0.1 > hardestPositive))
        .map(s);
    };
    mined.anchors.forEach((a: number, k: number) => {
      const p = mined.positives[k]!;
      const n = mined.negatives[k]!;
      const sap = similarities[a * batch.rows + p]!;
      const san = similarities[a * batch.rows + n]!;
      const t: TripletSimilarities = { sap, san, dap: 0, dan: 0, relativePositives: relativeOf(a, p, true), relativeNegatives: relativeOf(a, n, false) };
      const { weight, keepPositive } = tripletWeight('cir+sc2', sap, san, parameters);
      const [wp, wn] = pairWeights('lin-ms', t, parameters);
      masked += keepPositive ? 0 : 1;
      withRelative += t.relativePositives.length + t.relativeNegatives.length > 0 ? 1 : 0;
      const e = tripletDirections('cos-orth', row(a), row(p), row(n), 'negative');
      for (let d = 0; d < batch.dim; d++) {
        expected[p * batch.dim + d]! += weight * (keepPositive ? wp : 0) * e.ep[d]!;
        expected[n * batch.dim + d]! += weight * wn * e.en[d]!;
        expected[a * batch.dim + d]! += weight * ((keepPositive ? wp : 0) * e.eap[d]! + wn * e.ean[d]!);
      }
    });
    expect(masked, 'some positives masked by sc2, not all').to.be.within(1, mined.anchors.length - 1);
    expect(withRelative, 'triplets with relative-similarity terms').to.be.above(0);
    const { difference, scale } = maxAbsDifference(gradient, expected);
    expect(scale).to.be.above(1e-2);
    expect(difference).to.be.below(1e-6);
  });

  it('every registry name builds with its preset components, trains (finite gradients) and is deterministic', () => {
    const batch = clusteredBatch(3, [0, 0, 0, 1, 1, 1, 2], 4, 0.7);
    for (const name of DIRECT_GRADIENT_NAMES) {
      const loss = new DirectGradientLoss(name);
      const gradient = tf.tidy(() =>
        Array.from(tf.grad((x: tf.Tensor) => loss.compute(normalizeEmbeddings(x as tf.Tensor2D), batch.labels).loss)(tf.tensor2d(batch.values, [batch.rows, batch.dim])).dataSync()),
      );
      expect(gradient.every(Number.isFinite), name).to.equal(true);
      expect(Math.max(...gradient.map(Math.abs)), name).to.be.above(1e-4);
      expectDeterministic(loss, batch);
    }
    expect(new DirectGradientLoss('dg-best').config).to.include({ direction: 'cos-orth', pairWeight: 'lin-ms', tripletWeight: 'cir', tau: 10 });
    expect(new DirectGradientLoss('dg-sct', { tau: 5 }).config).to.include({ direction: 'cos', pairWeight: 'con', tripletWeight: 'cos+sc1', tau: 5 });
    expect(new DirectGradientLoss('direct-gradient', { direction: 'cos-orth', pairWeight: 'lin-ms', tripletWeight: 'cir+sc2' }).config).to.include({
      name: 'direct-gradient',
      direction: 'cos-orth',
    });
  });

  it('returns 0 with validCount 0 (never NaN) without a valid triplet', () => {
    for (const name of DIRECT_GRADIENT_NAMES) expectZeroOnDegenerateBatches(new DirectGradientLoss(name));
  });

  it('names bad options', () => {
    expectDmlErrorSync(
      () => new DirectGradientLoss('direct-gradient', { tripletWeight: 'sc2' as 'cir+sc2' }),
      'E_ARG',
      'Expected one of con, cos, cir, con+sc1, con+sc2, cos+sc1, cos+sc2, cir+sc1, cir+sc2 for loss.tripletWeight but received "sc2"',
    );
    expectDmlErrorSync(() => new DirectGradientLoss('dg-best', { direction: 'up' as 'cos' }), 'E_ARG', 'Expected one of euc, cos, euc-orth, cos-orth for loss.direction but received "up"');
    expectDmlErrorSync(() => new DirectGradientLoss('dg-ms', { tau: 0 }), 'E_ARG', 'Expected a number > 0 for loss.tau but received 0');
  });
});
