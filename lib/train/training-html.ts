/**
 * @file The dashboard of a training run (`<out>/report.html`), made from what the run folder holds
 * (run-log.ts): a summary (state, backend and device, budget and progress, the last and best
 * validation, throughput), the loss per step raw and smoothed, the learning rate per step, the
 * fraction of anchors with a valid tuple per step, the validation metrics against the step, the
 * positive and negative pair-similarity histograms of the validation points, the first and the latest
 * triplet scatter diagrams, the validation points as a table and the resolved configuration. The same
 * for `steps` and `epochs` runs (the x axis is the step of both).
 *
 * `dml train` rewrites it (atomically) at every validation point while the run trains, with a
 * `<meta http-equiv="refresh">` so an open page follows the run, and once more at the end without it.
 * One self-contained file: inline SVG, no scripts.
 */
import path from 'node:path';
import { writeFileAtomic } from '../util/atomic-write.js';
import { htmlTable, reportPageStart } from '../report/html.js';
import { escapeXml } from '../report/svg-line-chart.js';
import { histogramSvg, scatterRanges, scatterSvg } from '../report/svg-scatter.js';
import { readRunFolder, stepOfPeriod, type RunFolder, type ScatterEntry } from './run-log.js';
import { emaSmoothed, learningRateChartSvg, stepLossChartSvg, validationMetrics, validationStepChartSvg, validationValue, validFractionChartSvg } from './training-charts.js';
import type { EpochRecord } from './epoch-record.js';

/** Seconds between reloads of the page of a run that is still training. */
export const TRAINING_PAGE_REFRESH_SECONDS = 30;

/** At most this many validation points get their pair-similarity histograms on the page (first, last, and spread between). */
export const HISTOGRAMS_SHOWN = 6;

/** Where the run stands, and what trains it (a finished run's report.json says the latter itself). */
export interface TrainingPageStatus {
  /** `training`: the page reloads itself; `stopped`: the run ended with an error (`message`). */
  state: 'training' | 'finished' | 'stopped';
  message?: string;
  /** The TensorFlow.js backend, or `onnx` (the graph trainer). */
  backend?: string;
  /** The onnx backend's execution provider. */
  provider?: string;
}

const pct = (v: number | null | undefined): string => (v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : (100 * v).toFixed(2));
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The run's budget from its resolved config: `{ unit: 'steps', total }` or `{ unit: 'epochs', total }`. */
function budgetOf(config: Record<string, unknown>): { unit: 'steps' | 'epochs'; total: number } | undefined {
  const steps = num(config['steps']);
  if (steps !== undefined) return { unit: 'steps', total: steps };
  const epochs = num(config['epochs']);
  return epochs !== undefined ? { unit: 'epochs', total: epochs } : undefined;
}

/** Images per step: the sampler's batch size from the resolved config, when it says. */
export function batchSizeOf(config: Record<string, unknown>): number | undefined {
  return num((config['sampler'] as Record<string, unknown> | undefined)?.['batchSize']);
}

/** Steps per second over the run's periods (their steps over their seconds), null before any. */
export function meanStepsPerSecond(periods: readonly EpochRecord[]): number | null {
  const timed = periods.filter((p) => p.steps > 0 && p.seconds > 0);
  const seconds = timed.reduce((a, p) => a + p.seconds, 0);
  return seconds > 0 ? timed.reduce((a, p) => a + p.steps, 0) / seconds : null;
}

/** The validation point with the highest Recall@1 (the first of equals), if any was validated. */
export function bestValidation(periods: readonly EpochRecord[]): EpochRecord | undefined {
  let best: EpochRecord | undefined;
  for (const p of periods) if (p.validation && (best === undefined || validationValue(p, 'R@1') > validationValue(best, 'R@1'))) best = p;
  return best;
}

/** The resolved configuration as rows of a dotted field path and its value (JSON for arrays and scalars). */
export function flattenConfig(value: unknown, prefix = ''): Array<[string, string]> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    if (entries.length === 0 && prefix !== '') return [[prefix, '{}']];
    return entries.flatMap(([k, v]) => flattenConfig(v, prefix === '' ? k : `${prefix}.${k}`));
  }
  return [[prefix, typeof value === 'string' ? value : JSON.stringify(value)]];
}

/** The step a scatter entry was drawn at (an `epochs` run's files are named by epoch). */
function scatterStep(run: RunFolder, entry: ScatterEntry): number {
  if (entry.unit === 'step') return entry.index;
  const period = run.periods.find((p) => p.epoch === entry.index);
  return period ? stepOfPeriod(run, period) : 0;
}

/** The summary table's rows (two columns: what, value). */
export function summaryRows(run: RunFolder, status: TrainingPageStatus): string[][] {
  const rows: string[][] = [];
  rows.push(['state', status.state === 'training' ? `training (this page reloads every ${TRAINING_PAGE_REFRESH_SECONDS} s)` : status.state === 'stopped' ? `stopped: ${status.message ?? 'error'}` : 'finished']);
  const backend = run.finished?.backend ?? status.backend;
  const provider = run.finished?.device?.provider ?? status.provider;
  if (backend !== undefined) rows.push(['backend', provider !== undefined ? `${backend} (${provider})` : backend]);
  const lastStep = run.steps.at(-1);
  const budget = budgetOf(run.config);
  if (budget !== undefined) {
    const done = budget.unit === 'steps' ? `step ${lastStep?.globalStep ?? 0} of ${budget.total}` : `epoch ${lastStep?.epoch ?? 0} of ${budget.total} (step ${lastStep?.globalStep ?? 0})`;
    rows.push(['progress', done]);
  }
  const smoothed = emaSmoothed(run.steps.map((s) => s.loss)).filter((v): v is number => v !== null);
  if (smoothed.length > 0) rows.push(['loss (smoothed, last step)', (smoothed.at(-1) as number).toFixed(4)]);
  const validated = run.periods.filter((p) => p.validation !== undefined);
  const last = validated.at(-1);
  if (last) {
    rows.push([`last validation (step ${stepOfPeriod(run, last)})`, `R@1 ${pct(validationValue(last, 'R@1'))}, MAP@R ${pct(validationValue(last, 'MAP@R'))}, NMI ${pct(validationValue(last, 'NMI'))}`]);
    const best = bestValidation(validated) as EpochRecord;
    rows.push(['best R@1', `${pct(validationValue(best, 'R@1'))} at step ${stepOfPeriod(run, best)}${best.epoch > 0 ? ` (epoch ${best.epoch})` : ''}`]);
  }
  const speed = meanStepsPerSecond(run.periods);
  if (speed !== null) {
    const batch = batchSizeOf(run.config);
    rows.push(['throughput', `${speed.toFixed(2)} steps/s${batch !== undefined ? `, ${(speed * batch).toFixed(1)} images/s (batch ${batch})` : ''}`]);
    rows.push(['training time', `${run.periods.reduce((a, p) => a + p.seconds, 0).toFixed(1)} s (validation not included)`]);
  }
  return rows;
}

/** The table of validation points (one row each, epoch 0 first). */
export function validationTable(run: RunFolder): { header: string[]; rows: string[][] } {
  const metrics = validationMetrics([{ name: '', run }]);
  return {
    header: ['epoch', 'step', 'loss', 'valid %', 'steps/s', 'learning rate', ...metrics, 'below diagonal %'],
    rows: run.periods.map((r) => [
      String(r.epoch),
      String(stepOfPeriod(run, r)),
      r.loss === null ? 'n/a' : r.loss.toFixed(4),
      pct(r.validFraction),
      r.stepsPerSecond === null ? 'n/a' : r.stepsPerSecond.toFixed(2),
      String(Number(r.learningRate.toPrecision(4))),
      ...metrics.map((m) => pct(validationValue(r, m))),
      pct(r.scatter?.correctFraction),
    ]),
  };
}

/** Up to `count` entries of `list`: the first, the last and evenly spaced between. */
export function spreadPick<T>(list: readonly T[], count: number): T[] {
  if (list.length <= count) return [...list];
  const picked = new Set<number>();
  for (let i = 0; i < count; i++) picked.add(Math.round((i * (list.length - 1)) / (count - 1)));
  return [...picked].sort((a, b) => a - b).map((i) => list[i] as T);
}

/** One validation point's triplet scatter diagram (with its LoOp series, for LoOp losses). */
function scatterChart(step: number, entry: ScatterEntry): string {
  const { scatter } = entry;
  return scatterSvg(scatter.points, {
    title: `Triplet scatter, step ${step}: ${pct(scatter.correctFraction)}% below the diagonal`,
    xLabel: 'similarity of the easiest positive',
    yLabel: 'similarity of the hardest negative',
    diagonal: true,
    ...scatterRanges([...scatter.points, ...(scatter.loop?.points ?? [])]),
    mainLabel: 'anchors',
    ...(scatter.loop ? { series: [{ name: `LoOp optimal negative (${scatter.loop.geometry}s)`, colour: '#2ca02c', points: scatter.loop.points }] } : {}),
  });
}

const chart = (name: string, svg: string): string => `<div class="chart" data-chart="${name}">\n${svg}\n</div>`;

/** The dashboard (see the file comment) of the run folder read back as `run`. */
export function trainingReportHtml(run: RunFolder, status: TrainingPageStatus): string {
  const charts = [{ name: run.dir, run }];
  const budget = budgetOf(run.config);
  const located = run.scatters.map((entry) => ({ step: scatterStep(run, entry), entry }));
  const histograms = spreadPick(located, HISTOGRAMS_SHOWN);
  const scatterCharts = [...new Set([located[0], located.at(-1)])].filter((s) => s !== undefined);
  const validated = run.periods.some((p) => p.validation !== undefined);
  const scatterPart =
    located.length === 0
      ? `<p>${validated ? 'No triplet scatter diagram was drawn yet.' : 'No validation point yet (or the dataset holds no held-out items to validate on).'}</p>`
      : `<p>Per anchor, the similarity of its easiest positive (x) against that of its hardest negative (y); below the diagonal the anchor's triplets are correctly ordered. The first and the latest of ${located.length} diagram(s); each validation point's files are in <code>scatter/</code>.</p>
<div class="charts">
${scatterCharts.map((s) => chart(`scatter-${s.step}`, scatterChart(s.step, s.entry))).join('\n')}
</div>
<h3>Pair similarities</h3>
<p>The cosine similarities of positive and negative pairs of the ${run.config['scatter'] !== undefined && (run.config['scatter'] as Record<string, unknown>)['set'] === 'train' ? 'training' : 'validation'} sample, as fractions of each kind${histograms.length < located.length ? `, at ${histograms.length} of the ${located.length} validation points (the first, the last and spread between)` : ', at each validation point'}.</p>
<div class="charts">
${histograms
  .map((s) =>
    chart(
      `histogram-${s.step}`,
      histogramSvg(
        [
          { name: 'positive pairs', counts: s.entry.scatter.positiveCounts },
          { name: 'negative pairs', counts: s.entry.scatter.negativeCounts },
        ],
        [-1, 1],
        { title: `Pair similarities, step ${s.step}`, xLabel: 'cosine similarity', width: 340, height: 240 },
      ),
    ),
  )
  .join('\n')}
</div>`;
  const description = budget === undefined ? '' : ` A budget of ${budget.total} ${budget.unit}.`;
  return `${reportPageStart(`dmlkit training report: ${run.dir}`, status.state === 'training' ? TRAINING_PAGE_REFRESH_SECONDS : undefined)}
.chart { max-width: 100%; }
.config td:first-child { font-family: monospace; }
</style>
</head>
<body>
<h1>dmlkit training report</h1>
<p>Run <code>${escapeXml(run.dir)}</code>: ${run.steps.length} step(s) logged, ${run.periods.length} validation point(s) (the first is the untrained model).${description}</p>
${htmlTable({ header: ['', run.dir], rows: summaryRows(run, status) }, false)}
<h2>Training</h2>
<div class="charts">
${chart('loss', stepLossChartSvg(charts))}
${chart('learning-rate', learningRateChartSvg(charts))}
${chart('valid-fraction', validFractionChartSvg(charts))}
</div>
<h2>Validation</h2>
<div class="charts">
${chart('validation', validationStepChartSvg(charts))}
</div>
${htmlTable(validationTable(run))}
<h2>Triplet scatter</h2>
${scatterPart}
<h2>Configuration</h2>
<p>The resolved configuration (<code>config.json</code>: the file's fields, the flags given, the defaults filled in).</p>
<div class="config">${htmlTable({ header: ['field', 'value'], rows: flattenConfig(run.config) }, false)}</div>
</body>
</html>
`;
}

/**
 * Writes `<out>/report.html` (atomically) from the run folder as it is now and returns its path;
 * `status` says whether the run still trains (see the file comment).
 */
export async function writeTrainingReportHtml(out: string, status: TrainingPageStatus = { state: 'finished' }): Promise<string> {
  const run = await readRunFolder(out);
  const file = path.join(out, 'report.html');
  await writeFileAtomic(file, trainingReportHtml(run, status));
  return file;
}
