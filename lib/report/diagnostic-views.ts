/**
 * @file The evaluation report's diagnostic views (sections `Models` and `Diagnostics` of
 * sections.ts): per model its embedding dimension, file size and images per second; Recall@1 per
 * class as bars, worst first; the label pairs most often confused in the top K; the positive and
 * negative pair-similarity histograms. Labels are shown by their class names where the report has
 * them (`dataset.classNames`). Data from report.json (eval/diagnostics.ts, eval/run-report.ts).
 */
import type { RunReport } from '../eval/run-report.js';
import { classLabel } from './class-label.js';
import { htmlTable } from './html.js';
import { markdownTable } from './markdown.js';
import type { Report } from './report.js';
import { barChartSvg } from './svg-bars.js';
import { histogramSvg } from './svg-scatter.js';

/** Classes shown in the per-class Recall@1 bars (the worst of the first model). */
export const CLASS_BARS_SHOWN = 30;
/** Confused label pairs shown per model. */
export const CONFUSIONS_SHOWN = 10;

const pct = (v: number | null | undefined): string => (v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : (100 * v).toFixed(2));

/** File size in megabytes (MB = 10^6 bytes), two decimals. */
const megabytes = (bytes: number): string => (bytes / 1e6).toFixed(2);

/** One row per run: model, embedding dimension, file size, items embedded, embedding seconds, images/s, execution provider. */
export function modelsTable(report: Report): { header: string[]; rows: string[][] } {
  return {
    header: ['model', 'embedding dim', 'file MB', 'images', 'embed s', 'images/s', 'device'],
    rows: report.runs.map((run) => {
      const seconds = run.timings.embedSeconds;
      const count = run.dataset.embeddedCount;
      const cached = run.dataset.embeddingCache?.hit === true;
      return [
        run.name,
        run.model ? String(run.model.embeddingDim) : 'n/a',
        run.model?.fileBytes !== undefined ? megabytes(run.model.fileBytes) : 'n/a',
        count !== undefined ? String(count) : 'n/a',
        seconds !== undefined ? seconds.toFixed(1) : 'n/a',
        cached ? 'cached' : count !== undefined && seconds !== undefined && seconds > 0 ? (count / seconds).toFixed(1) : 'n/a',
        run.model?.executionProvider ?? 'n/a',
      ];
    }),
  };
}

/** The classes of the per-class bars: the first run's {@link CLASS_BARS_SHOWN} lowest Recall@1 (then by label), each run's value. */
export function perClassRecallRows(report: Report, shown = CLASS_BARS_SHOWN): { rows: Array<{ label: string; values: number[] }>; total: number } {
  const first = report.runs[0] as RunReport;
  const byLabel = report.runs.map((r) => new Map(r.metrics.perClass.map((c) => [c.label, c.recallAt1])));
  const classes = [...first.metrics.perClass].sort((a, b) => a.recallAt1 - b.recallAt1 || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
  return {
    rows: classes.slice(0, shown).map((c) => ({ label: classLabel(first, c.label), values: byLabel.map((m) => m.get(c.label) ?? Number.NaN) })),
    total: classes.length,
  };
}

/** The per-class Recall@1 bars (see {@link perClassRecallRows}). */
export function perClassRecallSvg(report: Report): string {
  const { rows, total } = perClassRecallRows(report);
  const first = (report.runs[0] as RunReport).name;
  const title = rows.length < total ? `Recall@1 per class: the ${rows.length} worst of ${total} (of ${first})` : `Recall@1 per class, worst first${report.runs.length > 1 ? ` (of ${first})` : ''}`;
  return barChartSvg(rows, { title, series: report.runs.map((r) => r.name) });
}

/**
 * The confused label pairs: the {@link CONFUSIONS_SHOWN} most frequent of each run (their union, in
 * the first run's order, then the next run's), with each run's share of the query label's top-K places.
 */
export function confusionsTable(report: Report): { header: string[]; rows: string[][]; k: number | undefined } {
  const runs = report.runs.filter((r) => r.diagnostics !== undefined);
  const key = (q: string, n: string): string => JSON.stringify([q, n]);
  const pairs: Array<[string, string]> = [];
  const seen = new Set<string>();
  for (const run of runs) {
    for (const c of run.diagnostics?.confusions.slice(0, CONFUSIONS_SHOWN) ?? []) {
      if (seen.has(key(c.queryLabel, c.neighbourLabel))) continue;
      seen.add(key(c.queryLabel, c.neighbourLabel));
      pairs.push([c.queryLabel, c.neighbourLabel]);
    }
  }
  const first = runs[0] as RunReport;
  const shares = runs.map((run) => new Map(run.diagnostics?.confusions.map((c) => [key(c.queryLabel, c.neighbourLabel), c]) ?? []));
  return {
    header: ['queries of', 'confused with', ...runs.map((r) => (runs.length > 1 ? `% ${r.name}` : '% of top-K places')), ...(runs.length === 1 ? ['neighbours'] : [])],
    rows: pairs.map(([q, n]) => [
      classLabel(first, q),
      classLabel(first, n),
      ...shares.map((m) => {
        const c = m.get(key(q, n));
        // A pair outside a run's kept list was rarer than its last kept pair: shown as "<" that share.
        const last = [...m.values()].at(-1);
        return c ? pct(c.fraction) : last ? `< ${pct(last.fraction)}` : 'n/a';
      }),
      ...(runs.length === 1 ? [String(shares[0]?.get(key(q, n))?.count ?? 0)] : []),
    ]),
    k: first?.diagnostics?.confusionK,
  };
}

/** One positive/negative similarity histogram per run (runs without diagnostics left out). */
export function similarityHistogramsSvg(report: Report): string[] {
  return report.runs.flatMap((run) => {
    const h = run.diagnostics?.similarities;
    if (h === undefined) return [];
    const mean = (v: number | null): string => (v === null ? 'n/a' : v.toFixed(3));
    const gap = h.positiveMean !== null && h.negativeMean !== null ? `, gap ${(h.positiveMean - h.negativeMean).toFixed(3)}` : '';
    return [
      histogramSvg(
        [
          { name: `positive pairs (mean ${mean(h.positiveMean)})`, counts: h.positiveCounts },
          { name: `negative pairs (mean ${mean(h.negativeMean)})`, counts: h.negativeCounts },
        ],
        [-1, 1],
        { title: `${run.name}: pair similarities${gap}`, xLabel: `cosine similarity (${h.mode === 'all' ? 'every pair' : 'sampled pairs'})`, width: 480 },
      ),
    ];
  });
}

/** The Diagnostics section of report.html (see the file comment). */
export function diagnosticsHtml(report: Report): string {
  const confusions = confusionsTable(report);
  const parts = [
    `<div class="charts">\n<div class="chart" data-chart="per-class-recall">\n${perClassRecallSvg(report)}\n</div>\n</div>`,
  ];
  if (confusions.k !== undefined) {
    parts.push(
      `<h3>Labels most often confused in the top ${confusions.k}</h3>`,
      `<p>Per pair: the share of the query label's top-${confusions.k} places (queries of that label x ${confusions.k}) taken by items of the other label.</p>`,
      `<div class="confusions">${htmlTable(confusions, false)}</div>`,
      '<h3>Pair similarities</h3>',
      '<p>Cosine similarities of positive (same label) and negative query-gallery pairs, as fractions of each kind; a query is never paired with itself. Well-separated embeddings put the two humps apart.</p>',
      `<div class="charts">\n${similarityHistogramsSvg(report)
        .map((svg) => `<div class="chart" data-chart="similarities">\n${svg}\n</div>`)
        .join('\n')}\n</div>`,
    );
  }
  return parts.join('\n');
}

/** The Models section of report.md. */
export function modelsMarkdown(report: Report): string {
  return ['', 'Models (file MB = 10^6 bytes; images/s over the embedding stage):', '', ...markdownTable(modelsTable(report))].join('\n');
}

/** The Diagnostics section of report.md: the confused label pairs and the mean pair similarities. */
export function diagnosticsMarkdown(report: Report): string {
  const confusions = confusionsTable(report);
  if (confusions.k === undefined) return '';
  const means = report.runs.flatMap((run) => {
    const h = run.diagnostics?.similarities;
    return h ? [`- ${run.name}: mean similarity of positive pairs ${h.positiveMean?.toFixed(3) ?? 'n/a'}, of negative pairs ${h.negativeMean?.toFixed(3) ?? 'n/a'} (${h.mode === 'all' ? 'every pair' : 'sampled pairs'})`] : [];
  });
  return ['', `Labels most often confused in the top ${confusions.k} (% of the query label's top-${confusions.k} places):`, '', ...markdownTable(confusions), '', ...means].join('\n');
}
