/**
 * @file The sections of an evaluation report, in one registry: each renders a report as Markdown
 * (report.md) and as HTML (report.html); the definitions appear in the page only. Adding a section is
 * its entry in {@link REPORT_SECTIONS}, beside its data in report.json (lib/eval/run-report.ts,
 * lib/report/report.ts, schema/report.schema.json). The tables themselves are made in markdown.ts and
 * html.ts.
 */
import { bestCells, examplesHtml, htmlTable, nmiChartSvg, recallChartSvg, reportPageStart } from './html.js';
import {
  ACCURACY_CALCULATOR_CAPTION,
  accuracyCalculatorMarkdown,
  accuracyCalculatorTable,
  escapeMarkdownMarkup,
  examplesMarkdown,
  metricsTable,
  parametersMarkdown,
  parametersTable,
  perClassMarkdown,
  perClassTable,
  perClassTitle,
  reportMarkdown,
  reportNotes,
} from './markdown.js';
import type { Report } from './report.js';
import { diagnosticsHtml, diagnosticsMarkdown, modelsMarkdown, modelsTable } from './diagnostic-views.js';
import { escapeXml } from './svg-line-chart.js';

/** Options of {@link reportHtml}. */
export interface ReportHtmlOptions {
  /** Thumbnails of the examples' items as `data:` URIs, by id (see {@link exampleThumbnails}); items without one show their id. */
  thumbnails?: ReadonlyMap<string, string>;
}

/** One section of report.md and report.html. */
export interface ReportSection {
  /** The section's heading on the page. */
  readonly title: string;
  /** Its part of report.md, ending with a newline (absent: not in report.md). */
  markdown?(report: Report): string;
  /** Its part of report.html, under its heading (absent: not on the page). */
  html?(report: Report, options: Required<ReportHtmlOptions>): string;
}

/** The sections, in the order of both files. */
export const REPORT_SECTIONS: readonly ReportSection[] = [
  {
    title: 'Metrics',
    markdown: (report) => `${reportMarkdown(report)}\n${report.warnings.length === 0 ? '' : `\nWarnings:\n\n${report.warnings.map((w) => `- ${w}`).join('\n')}\n`}`,
    html: (report) =>
      [
        htmlTable(metricsTable(report), true, bestCells(metricsTable(report), ['lone q'])),
        reportNotes(report)
          .map((n) => `<p>${escapeXml(n)}</p>`)
          .join('\n'),
        report.warnings.length === 0 ? '' : `<ul class="warnings">${report.warnings.map((w) => `<li>Warning: ${escapeXml(w)}</li>`).join('')}</ul>`,
        `<div class="charts">\n${recallChartSvg(report)}\n${nmiChartSvg(report)}\n</div>`,
      ].join('\n'),
  },
  {
    title: 'AccuracyCalculator',
    markdown: (report) => `${accuracyCalculatorMarkdown(report)}\n`,
    html: (report) => `<p>${escapeXml(ACCURACY_CALCULATOR_CAPTION)}.</p>\n${htmlTable(accuracyCalculatorTable(report), true, bestCells(accuracyCalculatorTable(report)))}`,
  },
  {
    title: 'Per class',
    markdown: (report) => `${perClassMarkdown(report)}\n`,
    html: (report) => `<h3>${escapeXml(perClassTitle(report))}</h3>\n${htmlTable(perClassTable(report))}`,
  },
  {
    title: 'Models',
    markdown: (report) => `${modelsMarkdown(report)}\n`,
    html: (report) => `<p>Per model: the embedding dimension, the size of its file(s) (MB = 10<sup>6</sup> bytes), the images embedded and how fast (<code>cached</code>: read from the embedding cache), the execution provider.</p>\n${htmlTable(modelsTable(report))}`,
  },
  {
    title: 'Diagnostics',
    markdown: (report) => `${diagnosticsMarkdown(report)}\n`,
    html: (report) => diagnosticsHtml(report),
  },
  {
    title: 'Retrieval examples',
    markdown: (report) => `${examplesMarkdown(report)}\n`,
    html: (report, { thumbnails }) =>
      `<p>Seeded random queries (the same for every model) and each model's worst queries (lowest AP@R), with their top neighbours: ✓ and a green frame = the query's label, ✗ and red = another label; the number is the cosine similarity.</p>\n${examplesHtml(report, thumbnails)}`,
  },
  {
    title: 'Parameters',
    markdown: (report) => `${parametersMarkdown(report)}\n`,
    html: (report) => htmlTable(parametersTable(report), false),
  },
  {
    title: 'Definitions',
    html: (report) =>
      `<dl>\n${Object.entries(report.definitions)
        .map(([k, v]) => `<dt>${escapeXml(k)}</dt><dd>${escapeXml(v)}</dd>`)
        .join('\n')}\n</dl>`,
  },
];

/** report.md: the sections' Markdown in order (metrics and notes, warnings, per class, examples, parameters); data escaped by {@link escapeMarkdownMarkup}. */
export function reportMarkdownFile(report: Report): string {
  return escapeMarkdownMarkup(REPORT_SECTIONS.map((section) => section.markdown?.(report) ?? '').join(''));
}

/** report.html: one self-contained page with every section that has an HTML part, each under its heading. */
export function reportHtml(report: Report, options: ReportHtmlOptions = {}): string {
  const settings: Required<ReportHtmlOptions> = { thumbnails: options.thumbnails ?? new Map<string, string>() };
  const sections = REPORT_SECTIONS.filter((section) => section.html !== undefined).map((section) => `<h2>${escapeXml(section.title)}</h2>\n${section.html?.(report, settings) ?? ''}\n`);
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
${sections.join('')}</body>
</html>
`;
}
