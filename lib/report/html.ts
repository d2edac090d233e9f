/**
 * @file A self-contained HTML page for a report: the metrics table and its notes as HTML, the Recall@K
 * and NMI-curve plots as inline SVG, each run's worst classes, its retrieval examples (thumbnails as
 * `data:` URIs, see thumbnails.ts), the parameters as a table and the metric definitions. No scripts,
 * no external resources.
 */
import type { RetrievalExample } from '../eval/retrieval-examples.js';
import { exampleMark, exampleTitle, metricsTable, parametersTable, reportNotes, WORST_CLASSES_SHOWN, worstClassesTable } from './markdown.js';
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

/** An HTML table; with `numeric`, cells after the first column are numbers, right-aligned. */
function htmlTable({ header, rows }: { header: string[]; rows: string[][] }, numeric = true): string {
  const cell = (tag: 'th' | 'td', text: string, i: number): string => `<${tag}${numeric && i > 0 ? ' class="num"' : ''}>${escapeXml(text)}</${tag}>`;
  return [
    '<table>',
    `<thead><tr>${header.map((h, i) => cell('th', h, i)).join('')}</tr></thead>`,
    `<tbody>${rows.map((row) => `<tr>${row.map((c, i) => cell('td', c, i)).join('')}</tr>`).join('\n')}</tbody>`,
    '</table>',
  ].join('\n');
}

/** Options of {@link reportHtml}. */
export interface ReportHtmlOptions {
  /** Thumbnails of the examples' items as `data:` URIs, by id (see {@link exampleThumbnails}); items without one show their id. */
  thumbnails?: ReadonlyMap<string, string>;
}

/** One image of an example: its thumbnail (or its id in a box), its label marked ✓/✗ and, for a neighbour, its similarity. */
function exampleFigure(item: { id: string; label: string }, role: 'query' | { correct: boolean; similarity: number }, thumbnails: ReadonlyMap<string, string>): string {
  const uri = thumbnails.get(item.id);
  const picture = uri !== undefined ? `<img src="${escapeXml(uri)}" alt="${escapeXml(item.id)}" title="${escapeXml(item.id)}">` : `<span class="no-thumb" title="${escapeXml(item.id)}">${escapeXml(item.id)}</span>`;
  const cls = role === 'query' ? 'query' : role.correct ? 'correct' : 'incorrect';
  const caption = role === 'query' ? `query: ${escapeXml(item.label)}` : `${escapeXml(exampleMark(role.correct, item.label))}<br>${role.similarity.toFixed(3)}`;
  return `<figure class="${cls}">${picture}<figcaption>${caption}</figcaption></figure>`;
}

function examplesHtml(examples: RetrievalExample[], thumbnails: ReadonlyMap<string, string>): string {
  return examples
    .map(
      (e) =>
        `<div class="example ${e.kind}"><div class="example-kind">${escapeXml(exampleTitle(e))}</div><div class="example-row">${exampleFigure(e.query, 'query', thumbnails)}${e.neighbours
          .map((n) => exampleFigure(n, n, thumbnails))
          .join('')}</div></div>`,
    )
    .join('\n');
}

/** The whole page: the metrics table and its notes, the plots, each run's worst classes and examples, parameters and definitions. */
export function reportHtml(report: Report, options: ReportHtmlOptions = {}): string {
  const thumbnails = options.thumbnails ?? new Map<string, string>();
  const definitions = Object.entries(report.definitions)
    .map(([k, v]) => `<dt>${escapeXml(k)}</dt><dd>${escapeXml(v)}</dd>`)
    .join('\n');
  const perClass = report.runs
    .map((run) => `<h3>${escapeXml(run.name)}: the ${Math.min(WORST_CLASSES_SHOWN, run.metrics.perClass.length)} worst of ${run.metrics.perClass.length} classes</h3>\n${htmlTable(worstClassesTable(run))}`)
    .join('\n');
  const examples = report.runs
    .filter((run) => run.examples.length > 0)
    .map((run) => `<h3>${escapeXml(run.name)}</h3>\n${examplesHtml(run.examples, thumbnails)}`)
    .join('\n');
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
.warnings { color: #8a4b00; }
.example { margin: 0.6em 0 1em; }
.example-kind { font-size: 13px; color: #555; margin-bottom: 0.2em; }
.example-row { display: flex; flex-wrap: wrap; gap: 0.4em; align-items: flex-start; }
figure { margin: 0; width: 104px; text-align: center; font-size: 12px; }
figure img, .no-thumb { display: block; width: 96px; height: 96px; object-fit: contain; border: 4px solid #ccc; background: #f7f7f7; }
.no-thumb { font-size: 10px; overflow: hidden; word-break: break-all; }
figure.query img, figure.query .no-thumb { border-color: #3b6fb6; }
figure.correct img, figure.correct .no-thumb { border-color: #2e8b3a; }
figure.incorrect img, figure.incorrect .no-thumb { border-color: #c0392b; }
figure.query { margin-right: 1em; }
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
${report.warnings.length === 0 ? '' : `<ul class="warnings">${report.warnings.map((w) => `<li>Warning: ${escapeXml(w)}</li>`).join('')}</ul>`}
<div class="charts">
${recallChartSvg(report)}
${nmiChartSvg(report)}
</div>
<h2>Per class</h2>
${perClass}
<h2>Retrieval examples</h2>
<p>A seeded sample of queries whose nearest neighbour has another label (failures) and of queries whose nearest neighbour has their label (successes), with their top neighbours: ✓ and a green frame = the query's label, ✗ and red = another label; the number is the cosine similarity.</p>
${examples}
<h2>Parameters</h2>
${htmlTable(parametersTable(report), false)}
<h2>Definitions</h2>
<dl>
${definitions}
</dl>
</body>
</html>
`;
}
