/**
 * @file The reports' tables: the side-by-side metrics table printed on stdout (one row per run) with its
 * notes, the per-class tables, the retrieval examples and the parameters; as Markdown here, and as rows
 * for the HTML page (html.ts).
 */
import { describeProviderChoice } from '../onnx/devices.js';
import type { RetrievalExample } from '../eval/retrieval-examples.js';
import type { ModelInfo, Report, RunReport } from './report.js';
import type { Preprocessing } from '../image/preprocessing.js';

const pct = (v: number | null | undefined): string => (v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : (100 * v).toFixed(2));

/** The runs' metrics as a table (percent strings): the header and one row per run. */
export function metricsTable(report: Report): { header: string[]; rows: string[][] } {
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
  return { header, rows };
}

/**
 * One line naming a run's preprocessing and where each value came from, e.g. `Preprocessing of vit:
 * resize to 224x224 bicubic (preprocessor config), crop 224x224 (preprocessor config), ...`.
 */
export function describePreprocessing(name: string, model: ModelInfo): string {
  const p = model.preprocessing as Preprocessing;
  const s = model.preprocessingSources;
  const from = (...keys: string[]): string => {
    const sources = [...new Set(keys.map((k) => s[k]).filter((v): v is string => v !== undefined))];
    return sources.length > 0 ? ` (${sources.join(', ')})` : '';
  };
  const filter = p.resample ?? 'linear (sharp)';
  const mode = p.resizeMode ?? 'shorter';
  const resize =
    mode === 'exact'
      ? `resize to ${p.resizeWidth}x${p.resizeHeight}`
      : mode === 'longer'
        ? `resize longer side to ${p.resizeLonger}`
        : mode === 'none'
          ? 'no resize'
          : `resize shorter side to ${p.resizeShorter}`;
  const parts = [
    `${resize}, ${filter}${from('resizeMode', 'resizeShorter', 'resizeLonger', 'resizeWidth', 'resizeHeight', 'resample')}`,
    `centre crop ${p.width}x${p.height}${p.cropRounding === 'floor' ? ' (offset floored)' : ''}${from('height', 'width', 'cropRounding')}`,
    `${p.channels === 3 ? 'RGB' : 'grey'} ${p.layout}${from('channels', 'layout')}`,
    `x ${p.rescale === undefined ? '1/255' : p.rescale === 1 / 255 ? '1/255' : String(p.rescale)}, mean [${p.mean.join(', ')}], std [${p.std.join(', ')}]${from('rescale', 'mean', 'std')}`,
  ];
  const config = model.preprocessorConfig !== undefined ? `; config ${model.preprocessorConfig}` : '';
  return `Preprocessing of ${name}: ${parts.join('; ')}${config}.`;
}

/**
 * The notes under the table: data and protocol, index and k-means settings (of the first run: the runs
 * of one command share them), providers, skipped images.
 */
export function reportNotes(report: Report): string[] {
  const first = report.runs[0] as RunReport;
  const d = first.dataset;
  const p = first.parameters;
  const index = p.index.kind === 'exact' ? 'exact search' : `HNSW (M=${p.index.m}, efConstruction=${p.index.efConstruction}, ef=${p.index.ef})`;
  const notes = [
    `Values in %. Data: ${d.spec} (${d.protocol}); ${d.queryCount} queries, ${d.galleryCount} gallery items${d.sameSet ? ', query set = gallery set (self excluded by id)' : ''}.`,
    `Index: ${index}. k-means: ${p.kmeans.init}${p.kmeans.init === 'k-means++' ? ` (rounds of ${p.kmeans.roundFraction})` : ''}, Lloyd until the relative inertia change is <= ${p.kmeans.tolerance} (at most ${p.kmeans.maxIterations} iterations), ${p.kmeans.restarts} restart(s), seed ${p.kmeans.seed}; NMI/F1 at K = ${first.metrics.labelCount} labels.`,
  ];
  for (const r of report.runs) {
    if (r.model !== undefined) notes.push(`Execution provider: ${describeProviderChoice(r.name, { provider: r.model.executionProvider, attempts: r.model.providerAttempts })}.`);
  }
  for (const r of report.runs) if (r.model !== undefined) notes.push(describePreprocessing(r.name, r.model));
  const skipped = report.runs.reduce((n, r) => n + r.dataset.skippedImages.length, 0);
  if (skipped > 0) notes.push(`Skipped images (--skip-bad-images): ${skipped}; see report.json.`);
  return notes;
}

/** Classes listed per run in the reports' per-class tables (report.json has them all). */
export const WORST_CLASSES_SHOWN = 10;

/** The worst classes of `run` as a table (percent strings), at most {@link WORST_CLASSES_SHOWN} rows. */
export function worstClassesTable(run: RunReport): { header: string[]; rows: string[][] } {
  return {
    header: ['class', 'queries', 'R@1', 'R-Prec', 'MAP@R'],
    rows: run.metrics.perClass.slice(0, WORST_CLASSES_SHOWN).map((c) => [c.label, String(c.queryCount), pct(c.recallAt1), pct(c.rPrecision), pct(c.mapAtR)]),
  };
}

/** The parameters (of the first run), the dataset and the versions as name/value rows; nested keys joined with dots. */
export function parametersTable(report: Report): { header: string[]; rows: string[][] } {
  const first = report.runs[0] as RunReport;
  const { skippedImages, ...dataset } = first.dataset;
  return { header: ['parameter', 'value'], rows: flatRows({ parameters: first.parameters, dataset: { ...dataset, skippedImages: skippedImages.length }, versions: report.versions }) };
}

function flatRows(value: unknown, prefix = ''): string[][] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [[prefix, Array.isArray(value) ? value.join(', ') : String(value)]];
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => flatRows(v, prefix === '' ? k : `${prefix}.${k}`));
}

/** ✓ or ✗, then the label: how an example's items are marked in both reports. */
export function exampleMark(correct: boolean, label: string): string {
  return `${correct ? '✓' : '✗'} ${label}`;
}

/** The caption of an example's row: what kind it is. */
export function exampleTitle(example: RetrievalExample): string {
  return example.kind === 'failure' ? 'failure (nearest neighbour has another label)' : 'success (nearest neighbour has the same label)';
}

/** Escapes what would break a Markdown table cell. */
const cellText = (text: string): string => text.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/[\r\n]+/g, ' ');

/** The retrieval examples of every run as Markdown tables: query, then its neighbours (✓ same label, ✗ another). */
export function examplesMarkdown(report: Report): string {
  const lines: string[] = [];
  for (const run of report.runs) {
    if (run.examples.length === 0) continue;
    const width = Math.max(...run.examples.map((e) => e.neighbours.length));
    lines.push('', `Retrieval examples of ${run.name} (a seeded sample of failing and succeeding queries; ✓ = the query's label, similarity in brackets):`, '');
    lines.push(
      ...markdownTable({
        header: ['kind', 'query', ...Array.from({ length: width }, (_, i) => `#${i + 1}`)],
        rows: run.examples.map((e) => [
          e.kind,
          cellText(`${e.query.label} (${e.query.id})`),
          ...Array.from({ length: width }, (_, i) => {
            const n = e.neighbours[i];
            return n === undefined ? '' : cellText(`${exampleMark(n.correct, n.label)} (${n.similarity.toFixed(3)}) ${n.id}`);
          }),
        ]),
      }, false),
    );
  }
  return lines.join('\n');
}

/** The parameters section of report.md. */
export function parametersMarkdown(report: Report): string {
  return ['', 'Parameters:', '', ...markdownTable(parametersTable(report), false)].join('\n');
}

/** A Markdown table; `numeric` right-aligns the columns after the first. */
function markdownTable({ header, rows }: { header: string[]; rows: string[][] }, numeric = true): string[] {
  return [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 || !numeric ? ' --- ' : ' ---: ')).join('|')}|`, ...rows.map((row) => `| ${row.join(' | ')} |`)];
}

/** Markdown table of the runs' metrics (percent), followed by notes on protocol and parameters. */
export function reportMarkdown(report: Report): string {
  return [...markdownTable(metricsTable(report)), '', ...reportNotes(report)].join('\n');
}

/** The per-class section of report.md: each run's worst classes. */
export function perClassMarkdown(report: Report): string {
  const lines: string[] = [];
  for (const run of report.runs) {
    lines.push('', `Worst classes of ${run.name} (${Math.min(WORST_CLASSES_SHOWN, run.metrics.perClass.length)} of ${run.metrics.perClass.length}; values in %):`, '', ...markdownTable(worstClassesTable(run)));
  }
  return lines.join('\n');
}

/** report.md: the metrics table and notes, the warnings, each run's worst classes, the retrieval examples and the parameters. */
export function reportMarkdownFile(report: Report): string {
  const warnings = report.warnings.length === 0 ? '' : `\nWarnings:\n\n${report.warnings.map((w) => `- ${w}`).join('\n')}\n`;
  return `${reportMarkdown(report)}\n${warnings}${perClassMarkdown(report)}\n${examplesMarkdown(report)}\n${parametersMarkdown(report)}\n`;
}
