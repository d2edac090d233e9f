/**
 * @file Training runs side by side (`dml compare runs/a runs/b ...`): a table of each run's state,
 * backend, progress, last loss, last and best validation and throughput; their curves overlaid, one
 * colour per run in every chart (smoothed loss, validation Recall@1 and MAP@R against the step,
 * learning rate, valid-anchor fraction); and the configuration fields in which they differ. Made from
 * the run folders (run-log.ts), finished or still training. One self-contained page, no scripts.
 */
import path from 'node:path';
import { htmlTable, reportPageStart } from '../report/html.js';
import { CHART_COLOURS, escapeXml } from '../report/svg-line-chart.js';
import { stepOfPeriod, type RunFolder } from './run-log.js';
import { emaSmoothed, learningRateChartSvg, stepLossChartSvg, validationStepChartSvg, validationValue, validFractionChartSvg, type ChartRun } from './training-charts.js';
import { batchSizeOf, bestValidation, flattenConfig, meanStepsPerSecond } from './training-html.js';

const pct = (v: number | undefined): string => (v === undefined || !Number.isFinite(v) ? 'n/a' : (100 * v).toFixed(2));

/** Names for the runs in legends and tables: their folders' names, or their paths where two names are the same. */
export function runNames(runs: readonly RunFolder[]): string[] {
  const base = runs.map((r) => path.basename(path.resolve(r.dir)));
  return runs.map((r, i) => (base.filter((b) => b === base[i]).length > 1 ? r.dir : (base[i] as string)));
}

/** The summary table: one row per run. */
export function runsSummaryTable(runs: readonly RunFolder[], names: readonly string[]): { header: string[]; rows: string[][] } {
  return {
    header: ['run', 'state', 'backend', 'steps', 'loss (smoothed)', 'last R@1', 'best R@1 (step)', 'last MAP@R', 'last NMI', 'steps/s', 'images/s'],
    rows: runs.map((run, i) => {
      const loss = emaSmoothed(run.steps.map((s) => s.loss)).filter((v): v is number => v !== null).at(-1);
      const validated = run.periods.filter((p) => p.validation !== undefined);
      const last = validated.at(-1);
      const best = bestValidation(validated);
      const speed = meanStepsPerSecond(run.periods);
      const batch = batchSizeOf(run.config);
      return [
        names[i] as string,
        run.finished ? 'finished' : 'unfinished',
        run.finished ? `${run.finished.backend}${run.finished.device ? ` (${run.finished.device.provider})` : ''}` : String(run.config['backend'] ?? 'n/a'),
        String(run.steps.at(-1)?.globalStep ?? 0),
        loss === undefined ? 'n/a' : loss.toFixed(4),
        last ? pct(validationValue(last, 'R@1')) : 'n/a',
        best ? `${pct(validationValue(best, 'R@1'))} (${stepOfPeriod(run, best)})` : 'n/a',
        last ? pct(validationValue(last, 'MAP@R')) : 'n/a',
        last ? pct(validationValue(last, 'NMI')) : 'n/a',
        speed === null ? 'n/a' : speed.toFixed(2),
        speed === null || batch === undefined ? 'n/a' : (speed * batch).toFixed(1),
      ];
    }),
  };
}

/** The configuration fields whose values differ between the runs (the output folder left out), one row each. */
export function configDifferences(runs: readonly RunFolder[], names: readonly string[]): { header: string[]; rows: string[][] } {
  const flat = runs.map((r) => new Map(flattenConfig(r.config)));
  const fields = [...new Set(flat.flatMap((m) => [...m.keys()]))].filter((f) => f !== 'out').sort();
  return {
    header: ['field', ...names],
    rows: fields.filter((f) => new Set(flat.map((m) => m.get(f) ?? '(absent)')).size > 1).map((f) => [f, ...flat.map((m) => m.get(f) ?? '(absent)')]),
  };
}

const chart = (name: string, svg: string): string => `<div class="chart" data-chart="${name}">\n${svg}\n</div>`;

/** The comparison page of `runs` (see the file comment). */
export function compareRunsHtml(runs: readonly RunFolder[]): string {
  const names = runNames(runs);
  const charts: ChartRun[] = runs.map((run, i) => ({ name: names[i] as string, run, colour: CHART_COLOURS[i % CHART_COLOURS.length] as string }));
  const differences = configDifferences(runs, names);
  return `${reportPageStart('dmlkit training runs compared')}
.chart { max-width: 100%; }
</style>
</head>
<body>
<h1>dmlkit training runs compared</h1>
<p>${runs.length} runs: ${runs.map((r) => `<code>${escapeXml(r.dir)}</code>`).join(', ')}. Each run has one colour in every chart; losses are smoothed (the debiased exponential moving average of the run's own page).</p>
${htmlTable(runsSummaryTable(runs, names))}
<h2>Curves</h2>
<div class="charts">
${chart('loss', stepLossChartSvg(charts))}
${chart('validation-R@1', validationStepChartSvg(charts, 'R@1'))}
${chart('validation-MAP@R', validationStepChartSvg(charts, 'MAP@R'))}
${chart('learning-rate', learningRateChartSvg(charts))}
${chart('valid-fraction', validFractionChartSvg(charts))}
</div>
<h2>Configuration differences</h2>
${differences.rows.length === 0 ? '<p>The runs share every configuration field (but their output folders).</p>' : `<div class="config">${htmlTable(differences, false)}</div>`}
</body>
</html>
`;
}
