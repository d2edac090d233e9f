/**
 * @file The side-by-side Markdown table printed on stdout: one row per run.
 */
import { describeProviderChoice } from '../onnx/devices.js';
import type { Report, RunReport } from './report.js';

const pct = (v: number | null | undefined): string => (v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : (100 * v).toFixed(2));

/** Markdown table of the runs' metrics (percent), followed by notes on protocol and parameters. */
export function reportMarkdown(report: Report): string {
  const runs: RunReport[] = report.runs;
  const ks = [...new Set(runs.flatMap((r) => Object.keys(r.metrics.recall).map(Number)))].sort((a, b) => a - b);
  const curveKs = [...new Set(runs.flatMap((r) => r.metrics.nmiCurve.map((p) => p.clusters)))].sort((a, b) => a - b);
  const hasAnn = runs.some((r) => r.metrics.annRecall !== undefined);
  const header = [
    'model',
    ...ks.map((k) => `R@${k}`),
    'R-Prec',
    'MAP@R',
    'NMI',
    'F1',
    ...curveKs.map((k) => `NMI k=${k}`),
    ...(hasAnn ? ks.map((k) => `ANN R@${k}`) : []),
    'lone q',
  ];
  const rows = runs.map((r) => [
    r.name,
    ...ks.map((k) => pct(r.metrics.recall[String(k)])),
    pct(r.metrics.rPrecision),
    pct(r.metrics.mapAtR),
    pct(r.metrics.nmi),
    pct(r.metrics.f1),
    ...curveKs.map((k) => pct(r.metrics.nmiCurve.find((p) => p.clusters === k)?.nmi)),
    ...(hasAnn ? ks.map((k) => pct(r.metrics.annRecall?.[String(k)])) : []),
    String(r.metrics.loneQueries),
  ]);
  const lines = [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ];
  const d = report.dataset;
  const p = report.parameters;
  const index = p.index.kind === 'exact' ? 'exact search' : `HNSW (M=${p.index.m}, efConstruction=${p.index.efConstruction}, ef=${p.index.ef})`;
  lines.push(
    '',
    `Values in %. Data: ${d.spec} (${d.protocol}); ${d.queryCount} queries, ${d.galleryCount} gallery items${d.sameSet ? ', query set = gallery set (self excluded by id)' : ''}.`,
    `Index: ${index}. k-means: ${p.kmeans.init}${p.kmeans.init === 'k-means++' ? ` (rounds of ${p.kmeans.roundFraction})` : ''}, Lloyd until the relative inertia change is <= ${p.kmeans.tolerance} (at most ${p.kmeans.maxIterations} iterations), ${p.kmeans.restarts} restart(s), seed ${p.kmeans.seed}; NMI/F1 at K = ${report.metrics.labelCount} labels.`,
  );
  for (const r of runs) {
    if (r.model !== undefined) lines.push(`Execution provider: ${describeProviderChoice(r.name, { provider: r.model.executionProvider, attempts: r.model.providerAttempts })}.`);
  }
  const skipped = runs.reduce((n, r) => n + r.dataset.skippedImages.length, 0);
  if (skipped > 0) lines.push(`Skipped images (--skip-bad-images): ${skipped}; see report.json.`);
  return lines.join('\n');
}
