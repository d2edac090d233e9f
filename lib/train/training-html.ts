/**
 * @file The HTML page of a training run (`<out>/report.html`, written by `dml train` beside report.json):
 * the loss and the validation metrics per epoch as line charts (axes fitted to the values, legends
 * below the plot), the last epoch's triplet scatter diagram (its range fitted to the points, with a
 * legend) and the epochs as a table. One self-contained file: inline SVG, no scripts.
 */
import { readdir } from 'node:fs/promises';
import { readRegularFile } from '../util/regular-file.js';
import path from 'node:path';
import type { EpochRecord } from './epoch-record.js';
import type { TripletScatter } from './scatter.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { htmlTable, reportPageStart } from '../report/html.js';
import { escapeXml, fittedRange, lineChartSvg } from '../report/svg-line-chart.js';
import { scatterRanges, scatterSvg } from '../report/svg-scatter.js';

/** What the training page shows: the run's epochs, and the latest scatter diagram when one was drawn. */
export interface TrainingReportInput {
  /** The run folder, named in the title. */
  out: string;
  backend: string;
  /** The epoch records, epoch 0 (the untrained model) first. */
  history: readonly EpochRecord[];
  /** The latest epoch's triplet scatter diagram and its epoch. */
  scatter?: { epoch: number; scatter: TripletScatter };
}

const pct = (v: number | null | undefined): string => (v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : (100 * v).toFixed(2));

/** Training loss per epoch (epochs with a loss); the y axis fitted to the values, from 0 when none is negative. */
export function lossChartSvg(history: readonly EpochRecord[]): string {
  const points = history.filter((r) => r.loss !== null && Number.isFinite(r.loss)).map((r) => ({ x: r.epoch, y: r.loss as number }));
  const values = points.map((p) => p.y);
  const range = fittedRange(values, values.every((v) => v >= 0) ? [0, Number.POSITIVE_INFINITY] : undefined);
  return lineChartSvg([{ name: 'training loss (mean over steps)', points }], { title: 'Loss per epoch', xLabel: 'epoch', yLabel: 'loss', yRange: range });
}

/** Validation Recall@K (each K), MAP@R and NMI per epoch; the y axis fitted to the values within [0, 1]. */
export function validationChartSvg(history: readonly EpochRecord[]): string {
  const validated = history.filter((r) => r.validation !== undefined);
  const ks = [...new Set(validated.flatMap((r) => Object.keys(r.validation?.recall ?? {})))].sort((a, b) => Number(a) - Number(b));
  const series = [
    ...ks.map((k) => ({ name: `R@${k}`, points: validated.map((r) => ({ x: r.epoch, y: r.validation?.recall[k] ?? Number.NaN })) })),
    { name: 'MAP@R', points: validated.map((r) => ({ x: r.epoch, y: r.validation?.mapAtR ?? Number.NaN })) },
    { name: 'NMI', points: validated.map((r) => ({ x: r.epoch, y: r.validation?.nmi ?? Number.NaN })) },
  ];
  const [low, high] = fittedRange(series.flatMap((s) => s.points.map((p) => p.y)), [0, 1]);
  return lineChartSvg(series, { title: 'Validation per epoch', xLabel: 'epoch', yLabel: `value (axis ${low.toFixed(2)} to ${high.toFixed(2)})`, yRange: [low, high] });
}

/** The training page (see the file comment). */
export function trainingReportHtml(input: TrainingReportInput): string {
  const { history } = input;
  const ks = [...new Set(history.flatMap((r) => Object.keys(r.validation?.recall ?? {})))].sort((a, b) => Number(a) - Number(b));
  const table = htmlTable({
    header: ['epoch', 'loss', 'valid %', 'steps/s', 'learning rate', ...ks.map((k) => `R@${k}`), 'MAP@R', 'NMI', 'below diagonal %'],
    rows: history.map((r) => [
      String(r.epoch),
      r.loss === null ? 'n/a' : r.loss.toFixed(4),
      pct(r.validFraction),
      r.stepsPerSecond === null ? 'n/a' : r.stepsPerSecond.toFixed(2),
      String(r.learningRate),
      ...ks.map((k) => pct(r.validation?.recall[k])),
      pct(r.validation?.mapAtR),
      pct(r.validation?.nmi),
      pct(r.scatter?.correctFraction),
    ]),
  });
  const scatter = input.scatter;
  const scatterSection =
    scatter === undefined
      ? '<p>No triplet scatter diagram was drawn (set <code>scatter.every</code> in the config).</p>'
      : scatterSvg(scatter.scatter.points, {
          title: `Triplet scatter, epoch ${scatter.epoch}: ${pct(scatter.scatter.correctFraction)}% below the diagonal`,
          xLabel: 'similarity of the easiest positive',
          yLabel: 'similarity of the hardest negative',
          diagonal: true,
          ...scatterRanges([...scatter.scatter.points, ...(scatter.scatter.loop?.points ?? [])]),
          mainLabel: 'anchors',
          ...(scatter.scatter.loop ? { series: [{ name: `LoOp optimal negative (${scatter.scatter.loop.geometry}s)`, colour: '#2ca02c', points: scatter.scatter.loop.points }] } : {}),
        });
  return `${reportPageStart('dmlkit training report')}
</style>
</head>
<body>
<h1>dmlkit training report</h1>
<p>Run <code>${escapeXml(input.out)}</code> on the <code>${escapeXml(input.backend)}</code> backend, ${history.length - 1} epoch(s) after the untrained model (epoch 0). The scatter diagram: per anchor, the similarity of its easiest positive (x) against that of its hardest negative (y); below the diagonal the anchor's triplets are correctly ordered.</p>
<div class="charts">
${lossChartSvg(history)}
${validationChartSvg(history)}
${scatterSection}
</div>
<h2>Epochs</h2>
${table}
</body>
</html>
`;
}

/**
 * Writes `<out>/report.html` for a finished run (atomically) and returns its path: the history given,
 * and the latest `scatter/epoch-NNN.json` of the run folder when there is one.
 */
export async function writeTrainingReportHtml(out: string, backend: string, history: readonly EpochRecord[]): Promise<string> {
  const files = await readdir(path.join(out, 'scatter')).catch(() => [] as string[]);
  const latest = files.filter((f) => /^epoch-\d+\.json$/.test(f)).sort().at(-1);
  const scatter =
    latest === undefined ? undefined : { epoch: Number(latest.slice(6, -5)), scatter: JSON.parse((await readRegularFile(path.join(out, 'scatter', latest), 'scatter file')).toString('utf8')) as TripletScatter };
  const file = path.join(out, 'report.html');
  await writeFileAtomic(file, trainingReportHtml({ out, backend, history, ...(scatter !== undefined ? { scatter } : {}) }));
  return file;
}
