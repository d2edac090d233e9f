/**
 * @file A self-contained HTML page for a report: the metrics table, the Recall@K and NMI+ plots as
 * inline SVG, the parameters and the metric definitions. No scripts, no external resources.
 */
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

/** The whole page. `markdownTable` is the same table printed on stdout. */
export function reportHtml(report: Report, markdownTable: string): string {
  const pre = (text: string): string => `<pre>${escapeXml(text)}</pre>`;
  const definitions = Object.entries(report.definitions)
    .map(([k, v]) => `<dt>${escapeXml(k)}</dt><dd>${escapeXml(v)}</dd>`)
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>dmlkit evaluation report</title>
<style>
body { font-family: DejaVu Sans, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
pre { background: #f6f6f6; padding: 1em; overflow-x: auto; font-size: 13px; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
dt { font-weight: bold; margin-top: 0.5em; }
</style>
</head>
<body>
<h1>dmlkit evaluation report</h1>
<p>Created ${escapeXml(report.createdAt)} by <code>${escapeXml(report.command.join(' '))}</code>.</p>
<h2>Metrics</h2>
${pre(markdownTable)}
<div class="charts">
${recallChartSvg(report)}
${nmiChartSvg(report)}
</div>
<h2>Parameters</h2>
${pre(JSON.stringify({ parameters: report.parameters, dataset: report.dataset, versions: report.versions }, null, 2))}
<h2>Definitions</h2>
<dl>
${definitions}
</dl>
</body>
</html>
`;
}
