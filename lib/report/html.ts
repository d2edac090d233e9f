/**
 * @file A self-contained HTML page for a report: the metrics table and its notes as HTML, the Recall@K
 * and NMI-curve plots as inline SVG, each run's worst classes, the parameters as a table and the metric
 * definitions. No scripts, no external resources.
 */
import { metricsTable, reportNotes, WORST_CLASSES_SHOWN, worstClassesTable } from './markdown.js';
import type { Report } from './report.js';
import { escapeXml, lineChartSvg } from './svg-line-chart.js';

/** Recall@K against K, one line per run. */
export function recallChartSvg(report: Report): string {
  return lineChartSvg(
    report.runs.map((r) => ({
      name: r.name,
      points: Object.entries(r.metrics.recall).map(([k, v]) => ({ x: Number(k), y: v })),
    })),
    { title: 'Recall@K', xLabel: 'K', yLabel: 'Recall@K', logX: true },
  );
}

/** NMI against the number of k-means clusters, one line per run. */
export function nmiChartSvg(report: Report): string {
  return lineChartSvg(
    report.runs.map((r) => ({ name: r.name, points: r.metrics.nmiCurve.map((p) => ({ x: p.clusters, y: p.nmi })) })),
    { title: 'NMI curve (NMI over cluster counts)', xLabel: 'k-means clusters', yLabel: 'NMI', logX: true },
  );
}

/** An HTML table; cells after the first column are numbers, right-aligned. */
function htmlTable({ header, rows }: { header: string[]; rows: string[][] }): string {
  const cell = (tag: 'th' | 'td', text: string, i: number): string => `<${tag}${i > 0 ? ' class="num"' : ''}>${escapeXml(text)}</${tag}>`;
  return [
    '<table>',
    `<thead><tr>${header.map((h, i) => cell('th', h, i)).join('')}</tr></thead>`,
    `<tbody>${rows.map((row) => `<tr>${row.map((c, i) => cell('td', c, i)).join('')}</tr>`).join('\n')}</tbody>`,
    '</table>',
  ].join('\n');
}

/** Name/value rows of a flat view of `value` (nested keys joined with dots). */
function parameterRows(value: unknown, prefix = ''): string[][] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [[prefix, Array.isArray(value) ? value.join(', ') : String(value)]];
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => parameterRows(v, prefix === '' ? k : `${prefix}.${k}`));
}

/** The whole page: the metrics table and its notes, the plots, each run's worst classes, parameters and definitions. */
export function reportHtml(report: Report): string {
  const definitions = Object.entries(report.definitions)
    .map(([k, v]) => `<dt>${escapeXml(k)}</dt><dd>${escapeXml(v)}</dd>`)
    .join('\n');
  const perClass = report.runs
    .map((run) => `<h3>${escapeXml(run.name)}: the ${Math.min(WORST_CLASSES_SHOWN, run.metrics.perClass.length)} worst of ${run.metrics.perClass.length} classes</h3>\n${htmlTable(worstClassesTable(run))}`)
    .join('\n');
  const parameters = [...parameterRows({ parameters: report.parameters, dataset: { ...report.dataset, skippedImages: report.dataset.skippedImages.length }, versions: report.versions })];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>dmlkit evaluation report</title>
<style>
body { font-family: DejaVu Sans, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 14px; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
dt { font-weight: bold; margin-top: 0.5em; }
</style>
</head>
<body>
<h1>dmlkit evaluation report</h1>
<p>Created ${escapeXml(report.createdAt)} by <code>${escapeXml(report.command.join(' '))}</code>.</p>
<h2>Metrics</h2>
${htmlTable(metricsTable(report))}
${reportNotes(report)
  .map((n) => `<p>${escapeXml(n)}</p>`)
  .join('\n')}
<div class="charts">
${recallChartSvg(report)}
${nmiChartSvg(report)}
</div>
<h2>Per class</h2>
${perClass}
<h2>Parameters</h2>
${htmlTable({ header: ['parameter', 'value'], rows: parameters })}
<h2>Definitions</h2>
<dl>
${definitions}
</dl>
</body>
</html>
`;
}
