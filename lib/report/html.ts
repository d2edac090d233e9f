/**
 * @file The HTML parts of a report page (sections.ts assembles report.html from them): the Recall@K
 * and NMI-curve plots as inline SVG, tables, the retrieval examples (the same random queries for every
 * run, then each run's worst; thumbnails as `data:` URIs, see thumbnails.ts) and the page's start with
 * the shared CSS. No scripts, no external resources.
 */
import type { RetrievalExample } from '../eval/retrieval-examples.js';
import { exampleMark, exampleTitle, randomExamplesByQuery } from './markdown.js';
import type { Report } from './report.js';
import { classLabel } from './class-label.js';
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

/**
 * The cells holding the best value of each column (row index by column index): the largest number of
 * every column after the first, except the columns `skip` names, when at least two rows have numbers
 * and they are not all equal. Cells that are not numbers (`n/a`) never count.
 */
export function bestCells({ header, rows }: { header: string[]; rows: string[][] }, skip: readonly string[] = []): Map<number, Set<number>> {
  const best = new Map<number, Set<number>>();
  header.forEach((name, column) => {
    if (column === 0 || skip.includes(name)) return;
    const values = rows.map((row) => Number.parseFloat(row[column] ?? ''));
    const finite = values.filter((v) => Number.isFinite(v));
    if (finite.length < 2) return;
    const top = Math.max(...finite);
    if (finite.every((v) => v === top)) return;
    best.set(column, new Set(values.flatMap((v, r) => (v === top ? [r] : []))));
  });
  return best;
}

/**
 * An HTML table; with `numeric`, cells after the first column are numbers, right-aligned. With
 * `highlight` (see {@link bestCells}), each column's best value is marked (class `best`, bold on a green tint).
 */
export function htmlTable({ header, rows }: { header: string[]; rows: string[][] }, numeric = true, highlight?: Map<number, Set<number>>): string {
  const cell = (tag: 'th' | 'td', text: string, i: number, best = false): string => {
    const classes = [...(numeric && i > 0 ? ['num'] : []), ...(best ? ['best'] : [])];
    return `<${tag}${classes.length > 0 ? ` class="${classes.join(' ')}"` : ''}>${escapeXml(text)}</${tag}>`;
  };
  return [
    '<div class="table-wrap"><table>',
    `<thead><tr>${header.map((h, i) => cell('th', h, i)).join('')}</tr></thead>`,
    `<tbody>${rows.map((row, r) => `<tr>${row.map((c, i) => cell('td', c, i, highlight?.get(i)?.has(r) === true)).join('')}</tr>`).join('\n')}</tbody>`,
    '</table></div>',
  ].join('\n');
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
export function examplesHtml(report: Report, thumbnails: ReadonlyMap<string, string>): string {
  const parts: string[] = [];
  // Labels as the report names them (with their class names, where the dataset has them).
  const first = report.runs[0] as Report['runs'][number];
  const named = <T extends { label: string }>(item: T): T => ({ ...item, label: classLabel(first, item.label) });
  const random = randomExamplesByQuery(report).map(({ query, runs }) => ({ query: named(query), runs: runs.map(({ name, example }) => ({ name, example: { ...example, neighbours: example.neighbours.map(named) } })) }));
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
    const worst = run.examples.filter((e) => e.selection === 'worst').map((e) => ({ ...e, query: named(e.query), neighbours: e.neighbours.map(named) }));
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
td.best { font-weight: bold; background: #e3f4e6; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
.charts svg { max-width: 100%; height: auto; }`;

/**
 * A report page's start up to its open `<style>` element: doctype, head with `title`, the shared CSS
 * (the caller adds its own rules and closes the head). With `refreshSeconds` the browser reloads the
 * page that often (a training run's page while it trains).
 */
export function reportPageStart(title: string, refreshSeconds?: number): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">${refreshSeconds !== undefined ? `\n<meta http-equiv="refresh" content="${refreshSeconds}">` : ''}
<title>${escapeXml(title)}</title>
<style>
${REPORT_PAGE_CSS}`;
}
