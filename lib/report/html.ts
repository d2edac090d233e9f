/**
 * @file A self-contained HTML page for a report: the metrics table and its notes as HTML, the Recall@K
 * and NMI-curve plots as inline SVG, the per-class table (one run's worst classes, or several runs
 * side by side), the retrieval examples (the same random queries for every run, then each run's worst) (thumbnails as
 * `data:` URIs, see thumbnails.ts), the parameters as a table and the metric definitions. No scripts,
 * no external resources.
 */
import type { RetrievalExample } from '../eval/retrieval-examples.js';
import { exampleMark, exampleTitle, metricsTable, parametersTable, perClassTable, perClassTitle, randomExamplesByQuery, reportNotes } from './markdown.js';
import type { Report } from './report.js';
import { escapeXml, fittedRange, lineChartSvg } from './svg-line-chart.js';

/** Recall@K against K, one line per run; the y axis is fitted to the values (see {@link autoRange}), and its label says so. */
export function recallChartSvg(report: Report): string {
  const series = report.runs.map((r) => ({
    name: r.name,
    points: Object.entries(r.metrics.recall).map(([k, v]) => ({ x: Number(k), y: v })),
  }));
  const [low, high] = autoRange(series.flatMap((s) => s.points.map((p) => p.y)));
  return lineChartSvg(series, { title: 'Recall@K', xLabel: 'K', yLabel: `Recall@K (axis ${low.toFixed(2)} to ${high.toFixed(2)}, fitted to the values)`, logX: true, yRange: [low, high] });
}

/** A y range in [0, 1] that shows where `values` are (see {@link fittedRange}), so 0.95 to 0.99 is a slope, not a flat line at the top. */
export function autoRange(values: readonly number[]): [number, number] {
  return fittedRange(values, [0, 1]);
}

/** NMI against the number of k-means clusters, one line per run. */
export function nmiChartSvg(report: Report): string {
  return lineChartSvg(
    report.runs.map((r) => ({ name: r.name, points: r.metrics.nmiCurve.map((p) => ({ x: p.clusters, y: p.nmi })) })),
    { title: 'NMI curve (NMI over cluster counts)', xLabel: 'k-means clusters', yLabel: 'NMI', logX: true },
  );
}

/** An HTML table; with `numeric`, cells after the first column are numbers, right-aligned. */
export function htmlTable({ header, rows }: { header: string[]; rows: string[][] }, numeric = true): string {
  const cell = (tag: 'th' | 'td', text: string, i: number): string => `<${tag}${numeric && i > 0 ? ' class="num"' : ''}>${escapeXml(text)}</${tag}>`;
  return [
    '<div class="table-wrap"><table>',
    `<thead><tr>${header.map((h, i) => cell('th', h, i)).join('')}</tr></thead>`,
    `<tbody>${rows.map((row) => `<tr>${row.map((c, i) => cell('td', c, i)).join('')}</tr>`).join('\n')}</tbody>`,
    '</table></div>',
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

/** One example's row: its query (unless `withQuery` is false), then its neighbours. */
function exampleRow(e: RetrievalExample, thumbnails: ReadonlyMap<string, string>, withQuery: boolean): string {
  return `<div class="example-row">${withQuery ? exampleFigure(e.query, 'query', thumbnails) : ''}${e.neighbours.map((n) => exampleFigure(n, n, thumbnails)).join('')}</div>`;
}

const apCaption = (e: RetrievalExample): string => `AP@R ${(100 * e.averagePrecision).toFixed(2)}`;

/**
 * The examples section: each random query once, with one row of neighbours per run under it (the same
 * queries for every run); then each run's worst queries (lowest AP@R).
 */
function examplesHtml(report: Report, thumbnails: ReadonlyMap<string, string>): string {
  const parts: string[] = [];
  const random = randomExamplesByQuery(report);
  if (random.length > 0) {
    parts.push(`<h3>${random.length} seeded random queries${report.runs.length > 1 ? ', the same for every model' : ''}</h3>`);
    for (const { query, runs } of random) {
      const rows = runs
        .map(({ name, example }) => `<div class="example ${example.kind}" data-model="${escapeXml(name)}"><div class="example-kind">${escapeXml(name)}: ${escapeXml(exampleTitle(example))}, ${apCaption(example)}</div>${exampleRow(example, thumbnails, false)}</div>`)
        .join('\n');
      parts.push(`<div class="example-query" data-query="${escapeXml(query.id)}">${exampleFigure(query, 'query', thumbnails)}<div class="example-runs">\n${rows}\n</div></div>`);
    }
  }
  for (const run of report.runs) {
    const worst = run.examples.filter((e) => e.selection === 'worst');
    if (worst.length === 0) continue;
    parts.push(`<h3>Worst queries of ${escapeXml(run.name)} (lowest AP@R)</h3>`);
    for (const e of worst) {
      parts.push(`<div class="example worst ${e.kind}" data-model="${escapeXml(run.name)}"><div class="example-kind">${escapeXml(exampleTitle(e))}, ${apCaption(e)}</div>${exampleRow(e, thumbnails, true)}</div>`);
    }
  }
  return parts.join('\n');
}

/** The CSS both report pages (evaluation and training) share: page, tables, numbers, charts. */
const REPORT_PAGE_CSS = `body { font-family: DejaVu Sans, sans-serif; margin: 2em auto; padding: 0 12px; max-width: 1100px; color: #222; }
.table-wrap { overflow-x: auto; max-width: 100%; }
code, dd, p, li { overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 14px; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
.charts svg { max-width: 100%; height: auto; }`;

/** A report page's start up to its open `<style>` element: doctype, head with `title`, the shared CSS (the caller adds its own rules and closes the head). */
export function reportPageStart(title: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeXml(title)}</title>
<style>
${REPORT_PAGE_CSS}`;
}

/** The whole page: the metrics table and its notes, the plots, each run's worst classes and examples, parameters and definitions. */
export function reportHtml(report: Report, options: ReportHtmlOptions = {}): string {
  const thumbnails = options.thumbnails ?? new Map<string, string>();
  const definitions = Object.entries(report.definitions)
    .map(([k, v]) => `<dt>${escapeXml(k)}</dt><dd>${escapeXml(v)}</dd>`)
    .join('\n');
  return `${reportPageStart('dmlkit evaluation report')}
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
.example-query { display: flex; gap: 0.4em; align-items: flex-start; margin: 0.6em 0 1.2em; padding-bottom: 0.6em; border-bottom: 1px solid #eee; }
.example-runs { flex: 1; min-width: 0; }
.example-runs .example { margin: 0 0 0.5em; }
@media (max-width: 600px) {
  figure { width: 68px; font-size: 10px; }
  figure img, .no-thumb { width: 60px; height: 60px; border-width: 3px; }
  .example-query { flex-direction: column; }
}
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
<h3>${escapeXml(perClassTitle(report))}</h3>
${htmlTable(perClassTable(report))}
<h2>Retrieval examples</h2>
<p>Seeded random queries (the same for every model) and each model's worst queries (lowest AP@R), with their top neighbours: ✓ and a green frame = the query's label, ✗ and red = another label; the number is the cosine similarity.</p>
${examplesHtml(report, thumbnails)}
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
