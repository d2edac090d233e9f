/**
 * @file Shared checks for the loss specs: evaluation through the trainer's L2 normalisation,
 * finite-difference gradient checks, the golden-value fixtures of scripts/fixtures/make_loss_fixtures.py,
 * and the degenerate batches every loss must survive.
 */
import { readFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import type { LossOutput, MetricLoss } from '../../../lib/train/losses/metric-loss.js';
import { createLoss, type LossSpec } from '../../../lib/train/losses/registry.js';
import { normalizeEmbeddings } from '../../../lib/train/similarity.js';
import { Rng } from '../../../lib/util/rng.js';

export { onCpuBackend } from '../../helpers/tf-backend.js';

/** A batch of un-normalised embeddings (row-major) with labels. */
export interface RawBatch {
  values: Float32Array;
  rows: number;
  dim: number;
  labels: Int32Array;
}

/**
 * Gaussian class centres plus per-item noise: `noise` small makes mining stable under small
 * perturbations, large makes hinge terms active.
 */
export function clusteredBatch(seed: number, labels: readonly number[], dim: number, noise: number): RawBatch {
  const rng = new Rng(seed);
  const classes = Math.max(...labels) + 1;
  const centres = Array.from({ length: classes }, () => Array.from({ length: dim }, () => rng.nextGaussian()));
  const values = new Float32Array(labels.length * dim);
  labels.forEach((label, i) => {
    for (let d = 0; d < dim; d++) values[i * dim + d] = centres[label]![d]! + noise * rng.nextGaussian();
  });
  return { values, rows: labels.length, dim, labels: Int32Array.from(labels) };
}

/** The rows of a raw batch, L2-normalised in float64 (for reference computations). */
export function normalizedRows(batch: RawBatch): number[][] {
  return Array.from({ length: batch.rows }, (_, i) => {
    const row = Array.from(batch.values.subarray(i * batch.dim, (i + 1) * batch.dim));
    const norm = Math.hypot(...row);
    return row.map((x) => x / norm);
  });
}

/** The loss's output on a raw batch, normalised as the trainer does; returns plain numbers. */
export function evaluate(loss: MetricLoss, batch: RawBatch): { value: number; validCount: number; totalCount: number } {
  return tf.tidy(() => {
    const out = loss.compute(normalizeEmbeddings(tf.tensor2d(batch.values, [batch.rows, batch.dim])), batch.labels);
    return { value: out.loss.dataSync()[0]!, validCount: out.validCount, totalCount: out.totalCount };
  });
}

/** The loss's output on already-normalised embeddings given as rows. */
export function evaluateNormalized(loss: MetricLoss, embeddings: number[][], labels: readonly number[]): {
  value: number;
  validCount: number;
  totalCount: number;
} {
  return tf.tidy(() => {
    const out: LossOutput = loss.compute(tf.tensor2d(embeddings), Int32Array.from(labels));
    return { value: out.loss.dataSync()[0]!, validCount: out.validCount, totalCount: out.totalCount };
  });
}

/** Result of {@link gradientCheck}. */
export interface GradientCheck {
  /** max_i |g_fd − g| / max_i |g| over all coordinates. */
  relativeError: number;
  /** max_i |g| (to see that the check is not vacuous). */
  gradientScale: number;
}

/**
 * Compares the autodiff gradient of the loss w.r.t. the un-normalised embeddings (through
 * `x / sqrt(Σx² + 1e-12)`) with the 4-point central difference
 * `(−L(x+2h) + 8L(x+h) − 8L(x−h) + L(x−2h)) / 12h` (truncation O(h⁴)) in float32. At every
 * perturbed point the valid count and `signature` (e.g. the mined indices) must equal the
 * unperturbed ones, so the difference never straddles a change of selection or active set.
 */
export function gradientCheck(
  loss: MetricLoss,
  batch: RawBatch,
  step: number,
  signature: (normalized: tf.Tensor2D) => string = () => '',
): GradientCheck {
  const shape: [number, number] = [batch.rows, batch.dim];
  const valueAt = (values: Float32Array): { value: number; key: string } =>
    tf.tidy(() => {
      const normalized = normalizeEmbeddings(tf.tensor2d(values, shape));
      const out = loss.compute(normalized, batch.labels);
      return { value: out.loss.dataSync()[0]!, key: `${out.validCount}|${signature(normalized)}` };
    });
  const analytic = tf.tidy(() => {
    const grad = tf.grad((x: tf.Tensor) => loss.compute(normalizeEmbeddings(x as tf.Tensor2D), batch.labels).loss);
    return grad(tf.tensor2d(batch.values, shape)).dataSync() as Float32Array;
  });
  const base = valueAt(batch.values);
  const numeric = new Float64Array(batch.values.length);
  const probe = Float32Array.from(batch.values);
  for (let i = 0; i < probe.length; i++) {
    const original = batch.values[i]!;
    const at = (offset: number): number => {
      probe[i] = original + offset;
      const result = valueAt(probe);
      expect(result.key, `selection/active set changed at coordinate ${i}, offset ${offset}`).to.equal(base.key);
      return result.value;
    };
    numeric[i] = (-at(2 * step) + 8 * at(step) - 8 * at(-step) + at(-2 * step)) / (12 * step);
    probe[i] = original;
  }
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < numeric.length; i++) {
    worst = Math.max(worst, Math.abs(numeric[i]! - analytic[i]!));
    scale = Math.max(scale, Math.abs(analytic[i]!));
  }
  return { relativeError: worst / scale, gradientScale: scale };
}

/** One batch of a golden-value fixture file. */
export interface FixtureBatch {
  name: string;
  labels: number[];
  embeddings: number[][];
  expected: { options: Record<string, unknown>; loss: number; validCount: number; totalCount: number }[];
}

/** Reads `spec/fixtures/losses/<file>.json`. */
export function readLossFixture(file: string): { description: string; batches: FixtureBatch[] } {
  return JSON.parse(readFileSync(new URL(`../../fixtures/losses/${file}.json`, import.meta.url), 'utf8')) as {
    description: string;
    batches: FixtureBatch[];
  };
}

/**
 * Checks every case of a fixture file against `createLoss({ name, ...options })` (a case's own
 * `name` option overrides `name`) to `tolerance` (absolute, or relative above 1). `prepare` may
 * adjust the loss (e.g. assign learnable values) and returns the options to pass.
 */
export function checkFixture(
  file: string,
  name: string,
  tolerance: number,
  prepare: (options: Record<string, unknown>) => { options: Record<string, unknown>; after?: (loss: MetricLoss) => void } = (options) => ({
    options,
  }),
): number {
  let worst = 0;
  for (const batch of readLossFixture(file).batches) {
    for (const expected of batch.expected) {
      const { options, after } = prepare(expected.options);
      const loss = createLoss({ name, ...options } as LossSpec);
      after?.(loss);
      const out = evaluateNormalized(loss, batch.embeddings, batch.labels);
      const label = `${file} ${batch.name} ${JSON.stringify(expected.options)}`;
      const diff = Math.abs(out.value - expected.loss) / Math.max(1, Math.abs(expected.loss));
      worst = Math.max(worst, diff);
      expect(diff, `${label}: ${out.value} vs ${expected.loss}`).to.be.below(tolerance);
      expect(out.validCount, `${label} validCount`).to.equal(expected.validCount);
      expect(out.totalCount, `${label} totalCount`).to.equal(expected.totalCount);
      for (const variable of loss.trainableVariables) variable.dispose();
    }
  }
  return worst;
}

/**
 * The degenerate batches every loss must handle: one class (no negative), all singletons (no
 * positive), an empty batch and a batch of one. Each must give a constant 0 with validCount 0 and
 * no NaN, or (where the loss documents it, e.g. a one-class batch for contrastive) a finite value.
 */
export function expectZeroOnDegenerateBatches(loss: MetricLoss, allowed: { oneClass?: boolean; singletons?: boolean } = {}): void {
  const cases: [string, number[], boolean][] = [
    ['one class', [3, 3, 3, 3], allowed.oneClass ?? false],
    ['all singletons', [0, 1, 2, 3], allowed.singletons ?? false],
    ['one image', [5], false],
    ['empty', [], false],
  ];
  for (const [what, labels, mayBeNonZero] of cases) {
    const batch = clusteredBatch(7, labels.length === 0 ? [0] : labels, 3, 0.5);
    const empty = labels.length === 0;
    const out = tf.tidy(() => {
      const embeddings = empty ? tf.zeros([0, 3]) : normalizeEmbeddings(tf.tensor2d(batch.values, [batch.rows, batch.dim]));
      const result = loss.compute(embeddings as tf.Tensor2D, empty ? new Int32Array(0) : batch.labels);
      return { value: result.loss.dataSync()[0]!, validCount: result.validCount, rank: result.loss.rank };
    });
    expect(out.rank, `${what}: scalar`).to.equal(0);
    expect(Number.isFinite(out.value), `${what}: finite`).to.equal(true);
    if (!mayBeNonZero) {
      expect(out.value, `${what}: loss`).to.equal(0);
      expect(out.validCount, `${what}: validCount`).to.equal(0);
    }
  }
}

/** Two evaluations of the same batch give bit-identical results. */
export function expectDeterministic(loss: MetricLoss, batch: RawBatch): void {
  expect(evaluate(loss, batch)).to.deep.equal(evaluate(loss, batch));
}
