/**
 * @file Tests of the LoOp losses: Algorithm 1's pairing and B(B − N)/8 couples, the live rebuilt
 * distances against the detached solver, the four losses against a float64 re-implementation of the
 * formulas, the options (segment geometry, halves, soft min, reduction), HPHN = LS at N = 2,
 * finite-difference gradients with a fixed case/selection, and degenerate batches.
 */
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';
import { closestPointsOnArcs, closestPointsOnSegments } from '../../../lib/train/losses/loop-geometry.js';
import { couplePairs, LoopLoss, pairPositives, type LoopName, type LoopOptions } from '../../../lib/train/losses/loop.js';
import { normalizeEmbeddings } from '../../../lib/train/similarity.js';
import {
  clusteredBatch,
  evaluate,
  expectDeterministic,
  expectZeroOnDegenerateBatches,
  gradientCheck,
  normalizedRows,
  onCpuBackend,
} from './loss-test-support.js';

const NAMES: LoopName[] = ['loop-triplet', 'loop-hphn', 'loop-lifted', 'loop-ms'];

/** c classes × n images, each class's images consecutive. */
const grouped = (classes: number, n: number): number[] => Array.from({ length: classes * n }, (_, i) => Math.floor(i / n));

const dot = (u: number[], v: number[]): number => u.reduce((s, x, i) => s + x * v[i]!, 0);
const chord = (u: number[], v: number[]): number => Math.sqrt(Math.max(2 - 2 * dot(u, v), 1e-12));
const relu = (x: number): number => Math.max(x, 0);

/** The losses written out in float64 from the formulas of loop.ts's file comment (mean over contributing pairs). */
function reference(name: LoopName, options: LoopOptions & Record<string, unknown>, rows: number[][], labels: number[]): { value: number; contributing: number } {
  const margin = (options['margin'] as number | undefined) ?? 0.1;
  const pairs: [number, number][] = [];
  const open = new Map<number, number>();
  labels.forEach((label, i) => {
    if (open.has(label)) {
      pairs.push([open.get(label)!, i]);
      open.delete(label);
    } else open.set(label, i);
  });
  const arc = (s: number, t: number): number => {
    const [[i, j], [k, l]] = [pairs[s]!, pairs[t]!];
    const g = { x1x2: dot(rows[i]!, rows[j]!), y1y2: dot(rows[k]!, rows[l]!), x1y1: dot(rows[i]!, rows[k]!), x1y2: dot(rows[i]!, rows[l]!), x2y1: dot(rows[j]!, rows[k]!), x2y2: dot(rows[j]!, rows[l]!) };
    return options.geometry === 'segment' ? closestPointsOnSegments(g).distance : closestPointsOnArcs(g).distance;
  };
  const samePositives = (m: number): number[] => labels.flatMap((label, k) => (label === labels[m] && k !== m ? [k] : []));
  let total = 0;
  let contributing = 0;
  pairs.forEach(([i, j], s) => {
    const others = pairs.flatMap((_, t) => (labels[pairs[t]![0]] !== labels[i] ? [arc(s, t)] : []));
    if (others.length === 0) return;
    const dij = chord(rows[i]!, rows[j]!);
    const nearest = Math.min(...others);
    let loss: number;
    if (name === 'loop-triplet') loss = others.reduce((sum, d) => sum + relu(dij - d + margin), 0);
    else if (name === 'loop-hphn') {
      const hardest = Math.max(...[i, j].flatMap((m) => samePositives(m).map((k) => chord(rows[m]!, rows[k]!))));
      loss = relu(hardest + margin - nearest);
    } else if (name === 'loop-lifted') {
      const negative = options['negativeMin'] === 'soft' ? -Math.log(others.reduce((sum, d) => sum + Math.exp(-d), 0)) : nearest;
      loss = relu(dij + margin - negative);
    } else {
      const [alpha, beta, base, epsilon] = [2, 50, 0.5, -0.02];
      const positives = [i, j].flatMap((m) => samePositives(m).map((k) => dot(rows[m]!, rows[k]!)));
      const arcs = others.map((d) => 1 - (d * d) / 2);
      const negatives = arcs.filter((x) => x > Math.min(...positives) - epsilon);
      const kept = positives.filter((x) => x < Math.max(...arcs) + epsilon);
      if (negatives.length === 0 || kept.length === 0) return;
      loss =
        Math.log1p(kept.reduce((sum, x) => sum + Math.exp(-alpha * (x - base)), 0)) / alpha +
        Math.log1p(negatives.reduce((sum, x) => sum + Math.exp(beta * (x - base)), 0)) / beta;
    }
    total += loss;
    contributing++;
  });
  return { value: contributing === 0 ? 0 : total / contributing, contributing };
}

describe('train/losses/loop', () => {
  onCpuBackend();

  describe('pairing (Algorithm 1)', () => {
    it('pairs each class consecutively in batch order and forms B(B − N)/8 couples of different classes', () => {
      const labels = Int32Array.from(grouped(4, 8)); // B = 32, N = 8
      const pairs = pairPositives(labels);
      expect(Array.from(pairs.first.slice(0, 4))).to.deep.equal([0, 2, 4, 6]);
      expect(Array.from(pairs.second.slice(0, 4))).to.deep.equal([1, 3, 5, 7]);
      expect(couplePairs(pairs, labels, 'all').a.length).to.equal((32 * (32 - 8)) / 8);
      expect(couplePairs(pairPositives(Int32Array.from(grouped(3, 4))), Int32Array.from(grouped(3, 4)), 'all').a.length).to.equal((12 * 8) / 8);
      // Interleaved classes pair by class; an odd last image stays unpaired.
      const mixed = pairPositives(Int32Array.of(0, 1, 0, 1, 0));
      expect([Array.from(mixed.first), Array.from(mixed.second)]).to.deep.equal([[0, 1], [2, 3]]);
    });

    it('halves: the t-th pair of the first half against the t-th of the second, when the classes differ', () => {
      const labels = Int32Array.from(grouped(4, 4)); // 8 pairs: classes 0 0 1 1 | 2 2 3 3
      const couples = couplePairs(pairPositives(labels), labels, 'halves');
      expect([Array.from(couples.a), Array.from(couples.b)]).to.deep.equal([[0, 1, 2, 3], [4, 5, 6, 7]]);
      const same = Int32Array.from([0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1]); // pair classes 0 0 1 | 0 1 1
      expect(Array.from(couplePairs(pairPositives(same), same, 'halves').a)).to.deep.equal([1]);
    });
  });

  it('rebuilds from the live embeddings the distances the detached solver found', () => {
    const batch = clusteredBatch(4, grouped(3, 4), 6, 1.2);
    for (const geometry of ['arc', 'segment'] as const) {
      const loss = new LoopLoss('loop-triplet', { geometry, margin: 5 });
      // With a margin of 5 every hinge is active: loss per pair = Σ (d_ij − d_q + 5), so Σ_q d_q follows.
      const out = tf.tidy(() => {
        const f = normalizeEmbeddings(tf.tensor2d(batch.values, [batch.rows, batch.dim]));
        const result = loss.pairLosses(f, batch.labels);
        return { detached: Array.from(result.solved.distances), live: Array.from(result.losses!.dataSync()), cases: Array.from(result.solved.cases), live_points: result.solved.pointsA.filter((p) => !Number.isNaN(p.liveAngle)).length };
      });
      const expected = reference('loop-triplet', { geometry, margin: 5 }, normalizedRows(batch), Array.from(batch.labels));
      expect(out.live.reduce((a, b) => a + b, 0) / out.live.length).to.be.closeTo(expected.value, 1e-5);
      if (geometry === 'arc') expect(out.live_points, 'some optimal points inside their arcs').to.be.above(0);
    }
  });

  describe('the four losses equal a float64 re-implementation of their formulas (1e-5)', () => {
    const cases: [LoopName, LoopOptions & Record<string, unknown>][] = [
      ['loop-triplet', {}],
      ['loop-triplet', { geometry: 'segment', margin: 0.3 }],
      ['loop-hphn', {}],
      ['loop-hphn', { margin: 0.5 }],
      ['loop-lifted', {}],
      ['loop-lifted', { negativeMin: 'soft' }],
      ['loop-lifted', { geometry: 'segment', margin: 0.4 }],
      ['loop-ms', {}],
      ['loop-ms', { geometry: 'segment' }],
    ];
    for (const [seed, labels] of [
      [1, grouped(3, 4)],
      [2, grouped(4, 2)],
      [3, [0, 0, 1, 1, 1, 1, 2, 2, 0, 0, 3]],
    ] as const) {
      for (const [name, options] of cases) {
        it(`${name} ${JSON.stringify(options)}, batch ${seed}`, () => {
          const batch = clusteredBatch(seed, [...labels], 5, 1.0);
          const out = evaluate(new LoopLoss(name, options), batch);
          const expected = reference(name, options, normalizedRows(batch), [...labels]);
          expect(expected.contributing).to.be.above(0);
          expect(out.value).to.be.closeTo(expected.value, 1e-5 * Math.max(1, expected.value));
          expect(out.validCount).to.equal(expected.contributing);
          expect(out.totalCount).to.equal(pairPositives(batch.labels).first.length);
        });
      }
    }
  });

  it('reduction sum = mean × contributing pairs; HPHN = lifted structure at N = 2', () => {
    const batch = clusteredBatch(6, grouped(4, 4), 5, 1.0);
    const mean = evaluate(new LoopLoss('loop-hphn'), batch);
    const sum = evaluate(new LoopLoss('loop-hphn', { reduction: 'sum' }), batch);
    expect(sum.value).to.be.closeTo(mean.value * mean.validCount, 1e-5);
    const two = clusteredBatch(7, grouped(5, 2), 5, 1.0);
    expect(evaluate(new LoopLoss('loop-hphn'), two).value).to.be.closeTo(evaluate(new LoopLoss('loop-lifted'), two).value, 1e-6);
  });

  describe('gradient w.r.t. the un-normalised embeddings matches finite differences (rel. error < 1e-3)', () => {
    const batch = clusteredBatch(12, grouped(3, 4), 5, 1.1);
    const cases: [LoopName, LoopOptions][] = [
      ['loop-triplet', { margin: 0.3 }],
      ['loop-triplet', { geometry: 'segment', margin: 0.3 }],
      ['loop-hphn', { margin: 0.6 }],
      ['loop-lifted', { margin: 0.6 }],
      ['loop-lifted', { negativeMin: 'soft', margin: 0.6 }],
      ['loop-ms', {}],
    ];
    for (const [name, options] of cases) {
      it(`${name} ${JSON.stringify(options)}`, () => {
        const loss = new LoopLoss(name, options);
        // The KKT case and point roles of every couple, and the sign of every per-pair loss, must not change.
        const signature = (normalized: tf.Tensor2D): string => {
          const result = loss.pairLosses(normalized, batch.labels);
          const role = (p: { first: number; second: number }): string => (p.first === 1 ? 's' : p.second === 1 ? 'e' : 'i');
          const roles = result.solved.pointsA.map((p, q) => `${result.solved.cases[q]}${role(p)}${role(result.solved.pointsB[q]!)}`);
          const active = result.losses === null ? '' : Array.from(result.losses.dataSync(), (v) => (v > 0 ? 1 : 0)).join('');
          return `${roles.join(',')}|${active}`;
        };
        const check = gradientCheck(loss, batch, 2e-3, signature);
        expect(check.gradientScale).to.be.above(1e-3);
        expect(check.relativeError).to.be.below(1e-3);
      });
    }
  });

  it('keeps the gradient finite for near-duplicate pairs (constant weights on arcs shorter than sin 1e-3)', () => {
    const batch = clusteredBatch(9, grouped(3, 2), 4, 0.8);
    // Make the pair of class 0 nearly identical: arc length ~1e-4.
    for (let d = 0; d < batch.dim; d++) batch.values[batch.dim + d] = batch.values[d]! + (d === 0 ? 1e-4 : 0);
    for (const name of NAMES) {
      const options = name === 'loop-ms' ? { epsilon: 1 } : { margin: 1 };
      const gradient = tf.tidy(() =>
        Array.from(tf.grad((x: tf.Tensor) => new LoopLoss(name, options).compute(normalizeEmbeddings(x as tf.Tensor2D), batch.labels).loss)(tf.tensor2d(batch.values, [batch.rows, batch.dim])).dataSync()),
      );
      expect(gradient.every(Number.isFinite), name).to.equal(true);
    }
  });

  it('returns 0 with validCount 0 (never NaN) without two classes of pairs, and is deterministic', () => {
    for (const name of NAMES) {
      expectZeroOnDegenerateBatches(new LoopLoss(name));
      expectDeterministic(new LoopLoss(name), clusteredBatch(3, grouped(3, 4), 4, 0.7));
    }
    // One pair per class but only one class with a pair: no couple.
    const out = evaluate(new LoopLoss('loop-triplet'), clusteredBatch(2, [0, 0, 1, 2], 3, 0.5));
    expect(out).to.deep.equal({ value: 0, validCount: 0, totalCount: 1 });
  });

  it('names bad options', () => {
    expectDmlErrorSync(() => new LoopLoss('loop-ms', { margin: 0.1 } as LoopOptions), 'E_ARG', /^Expected no unknown option \(known: geometry, reduction, alpha, beta, base, epsilon\) for loss.margin/);
    expectDmlErrorSync(() => new LoopLoss('loop-lifted', { negativeMin: 'avg' as 'soft' }), 'E_ARG', 'Expected one of hard, soft for loss.negativeMin but received "avg"');
    expectDmlErrorSync(() => new LoopLoss('loop-triplet', { geometry: 'line' as 'arc' }), 'E_ARG', 'Expected one of arc, segment for loss.geometry but received "line"');
  });
});
