/**
 * @file The charts of training runs against the optimiser step, for the run's dashboard
 * (training-html.ts: one run, raw and smoothed) and for `dml compare` of runs (compare-runs-html.ts:
 * one line per run): loss, learning rate, valid-anchor fraction and validation metrics. Inline SVG
 * strings (lib/report/svg-line-chart.ts).
 *
 * Smoothing is TensorBoard's: an exponential moving average with weight {@link LOSS_SMOOTHING},
 * debiased at the start (`s_t = w s_{t-1} + (1 - w) v_t`, shown as `s_t / (1 - w^n)` after n values),
 * skipping steps without a value. A run of more than {@link MAX_CHART_POINTS} steps is drawn from the
 * means of equal buckets of consecutive steps (the legend says how many), the smoothed curve from
 * every step, sampled at the buckets' ends.
 */
import { fittedRange, lineChartSvg, type ChartSeries } from '../report/svg-line-chart.js';
import { stepOfPeriod, type RunFolder, type StepEntry } from './run-log.js';
import type { EpochRecord } from './epoch-record.js';

/** Weight of the exponential moving average of the smoothed curves. */
export const LOSS_SMOOTHING = 0.9;

/** At most this many points per drawn series (longer runs are bucketed). */
export const MAX_CHART_POINTS = 1000;

/** A run in a chart: its folder read back, the name its legend entries carry and its colour. */
export interface ChartRun {
  name: string;
  run: Pick<RunFolder, 'steps' | 'periods'>;
  /** CSS colour of the run's lines (a comparison gives each run its own); default the palette's. */
  colour?: string;
}

/** The debiased exponential moving average of `values` (see the file comment); null stays null, and is skipped. */
export function emaSmoothed(values: ReadonlyArray<number | null>, weight = LOSS_SMOOTHING): Array<number | null> {
  let last = 0;
  let n = 0;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return null;
    last = weight * last + (1 - weight) * v;
    n++;
    return last / (1 - weight ** n);
  });
}

/**
 * `points` (x ascending) reduced to at most `max`: the mean x-last, y-mean of buckets of `size`
 * consecutive points (non-finite y left out of a mean; a bucket without any gives NaN, a gap). Fewer
 * points are returned as they are, with size 1.
 */
export function bucketMeans(points: ReadonlyArray<{ x: number; y: number }>, max = MAX_CHART_POINTS): { points: Array<{ x: number; y: number }>; size: number } {
  if (points.length <= max) return { points: [...points], size: 1 };
  const size = Math.ceil(points.length / max);
  const out: Array<{ x: number; y: number }> = [];
  for (let start = 0; start < points.length; start += size) {
    const bucket = points.slice(start, start + size);
    const ys = bucket.map((p) => p.y).filter((y) => Number.isFinite(y));
    out.push({ x: (bucket[bucket.length - 1] as { x: number }).x, y: ys.length === 0 ? Number.NaN : ys.reduce((a, b) => a + b, 0) / ys.length });
  }
  return { points: out, size };
}

/** `values` sampled at the buckets' last points, as {@link bucketMeans} of the same length makes them. */
function sampledAtBucketEnds(points: ReadonlyArray<{ x: number; y: number }>, size: number): Array<{ x: number; y: number }> {
  if (size === 1) return [...points];
  const out: Array<{ x: number; y: number }> = [];
  for (let start = 0; start < points.length; start += size) out.push(points[Math.min(points.length, start + size) - 1] as { x: number; y: number });
  return out;
}

const bucketNote = (size: number): string => (size > 1 ? `, mean of each ${size} steps` : '');

/** One series per run (or, with `raw`, the run's raw values faint under the smoothed line) of a per-step value. */
function perStepSeries(runs: readonly ChartRun[], value: (s: StepEntry) => number | null, what: string, smooth: boolean): ChartSeries[] {
  const single = runs.length === 1;
  return runs.flatMap(({ name, run, colour }) => {
    const raw = run.steps.map((s) => ({ x: s.globalStep, y: value(s) ?? Number.NaN }));
    const { points, size } = bucketMeans(raw);
    const label = single ? what : `${name}`;
    const own = colour !== undefined ? { colour } : {};
    if (!smooth) return [{ name: `${label}${bucketNote(size)}`, points, ...own }];
    const smoothed = emaSmoothed(run.steps.map(value)).map((y, i) => ({ x: (run.steps[i] as StepEntry).globalStep, y: y ?? Number.NaN }));
    const smoothedSeries = { name: `${label}, smoothed (EMA ${LOSS_SMOOTHING})`, points: sampledAtBucketEnds(smoothed, size), ...own };
    // Beside other runs a raw curve is noise: a comparison draws the smoothed ones alone.
    return single ? [{ name: `${what}, raw${bucketNote(size)}`, points, opacity: 0.35, colour: colour ?? '#1f77b4' }, { ...smoothedSeries, colour: colour ?? '#1f77b4' }] : [smoothedSeries];
  });
}

const finiteValues = (series: readonly ChartSeries[]): number[] => series.flatMap((s) => s.points.map((p) => p.y)).filter((y) => Number.isFinite(y));

/** Training loss per step: raw and smoothed (one run), or smoothed per run; y fitted to the values, from 0 when none is negative. */
export function stepLossChartSvg(runs: readonly ChartRun[]): string {
  const series = perStepSeries(runs, (s) => s.loss, 'loss', true);
  const values = finiteValues(series);
  const range = fittedRange(values, values.every((v) => v >= 0) ? [0, Number.POSITIVE_INFINITY] : undefined);
  return lineChartSvg(series, { title: 'Training loss per step', xLabel: 'step', yLabel: 'loss', yRange: range, xTicks: 'linear', markers: false });
}

/** Learning rate per step (the schedule as it was applied); y fitted to the values. */
export function learningRateChartSvg(runs: readonly ChartRun[]): string {
  const series = perStepSeries(runs, (s) => s.learningRate, 'learning rate', false);
  const values = finiteValues(series);
  const largest = Math.max(0, ...values.map(Math.abs));
  const range = fittedRange(values, [0, Number.POSITIVE_INFINITY], largest > 0 ? largest * 0.05 : 1e-12);
  return lineChartSvg(series, { title: 'Learning rate per step', xLabel: 'step', yLabel: 'learning rate', yRange: range, xTicks: 'linear', markers: false });
}

/** Fraction of the batch's anchors (or tuples) with a valid tuple, per step; y fitted within [0, 1]. */
export function validFractionChartSvg(runs: readonly ChartRun[]): string {
  const series = perStepSeries(runs, (s) => (s.totalCount > 0 ? s.validCount / s.totalCount : null), 'valid anchors', runs.length > 1);
  const range = fittedRange(finiteValues(series), [0, 1]);
  return lineChartSvg(series, { title: 'Anchors with a valid tuple, per step', xLabel: 'step', yLabel: 'fraction of the batch', yRange: range, xTicks: 'linear', markers: false });
}

/** The validation metrics a chart can show, by name: Recall@K (`R@1`, ...), `MAP@R`, `NMI`, `NMI+`. */
export function validationValue(record: EpochRecord, metric: string): number {
  const v = record.validation;
  if (v === undefined) return Number.NaN;
  if (metric.startsWith('R@')) return v.recall[metric.slice(2)] ?? Number.NaN;
  if (metric === 'MAP@R') return v.mapAtR ?? Number.NaN;
  if (metric === 'NMI') return v.nmi;
  if (metric === 'NMI+') return v.nmiPlus ?? Number.NaN;
  return Number.NaN;
}

/** The metrics recorded by the validations of `runs`: each Recall@K, MAP@R, NMI, and NMI+ where it was computed. */
export function validationMetrics(runs: readonly ChartRun[]): string[] {
  const validated = runs.flatMap((r) => r.run.periods.filter((p) => p.validation !== undefined));
  const ks = [...new Set(validated.flatMap((p) => Object.keys(p.validation?.recall ?? {})))].sort((a, b) => Number(a) - Number(b));
  const withPlus = validated.some((p) => p.validation?.nmiPlus !== null && p.validation?.nmiPlus !== undefined);
  return [...ks.map((k) => `R@${k}`), 'MAP@R', 'NMI', ...(withPlus ? ['NMI+'] : [])];
}

/**
 * Validation metrics against the step: for one run, every metric of {@link validationMetrics} (and the
 * scatter's fraction below the diagonal); for several, `metrics` (default R@1) with a line per run.
 * y fitted within [0, 1].
 */
export function validationStepChartSvg(runs: readonly ChartRun[], metric?: string): string {
  const pointsOf = (run: ChartRun['run'], value: (r: EpochRecord) => number): Array<{ x: number; y: number }> =>
    run.periods.filter((p) => p.validation !== undefined || p.scatter !== undefined).map((p) => ({ x: stepOfPeriod(run, p), y: value(p) }));
  let series: ChartSeries[];
  let title: string;
  if (runs.length === 1 && metric === undefined) {
    const { run } = runs[0] as ChartRun;
    series = validationMetrics(runs).map((m) => ({ name: m, points: pointsOf(run, (r) => validationValue(r, m)) }));
    if (run.periods.some((p) => p.scatter !== undefined)) {
      series.push({ name: 'scatter: anchors below the diagonal', points: pointsOf(run, (r) => r.scatter?.correctFraction ?? Number.NaN) });
    }
    title = 'Validation per step';
  } else {
    const m = metric ?? 'R@1';
    series = runs.map(({ name, run, colour }) => ({ name, points: pointsOf(run, (r) => validationValue(r, m)), ...(colour !== undefined ? { colour } : {}) }));
    title = `Validation ${m} per step`;
  }
  const [low, high] = fittedRange(finiteValues(series), [0, 1]);
  return lineChartSvg(series, { title, xLabel: 'step', yLabel: `value (axis ${low.toFixed(2)} to ${high.toFixed(2)})`, yRange: [low, high], xTicks: 'linear' });
}
