/**
 * @file The reports' tables: the side-by-side metrics table printed on stdout (one row per run) with its
 * notes, the per-class tables, the retrieval examples and the parameters; as Markdown here, and as rows
 * for the HTML page (html.ts).
 */
import { describeProviderChoice } from '../onnx/devices.js';
import type { RetrievalExample } from '../eval/retrieval-examples.js';
import type { ModelInfo, RunReport } from '../eval/run-report.js';
import type { AccuracyCalculatorMetrics } from '../eval/evaluation.js';
import type { Report } from './report.js';
import { classLabel } from './class-label.js';
import type { Preprocessing } from '../image/preprocessing.js';

const pct = (v: number | null | undefined): string => (v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : (100 * v).toFixed(2));

/**
 * The cluster count of a run's NMI column (1x = its label count), and of its NMI+ point (10x, capped
 * at the items clustered, which is then the largest count of the curve), null without NMI+.
 */
function nmiPointsOf(run: RunReport): { nmi: number; nmiPlus: number | null } {
  const largest = Math.max(...run.parameters.resolvedClusterCounts);
  return { nmi: run.metrics.labelCount, nmiPlus: run.metrics.nmiPlus === null ? null : Math.min(10 * run.metrics.labelCount, largest) };
}

/**
 * The runs' metrics as a table (percent strings): the header and one row per run. The NMI curve's
 * points are columns `NMI k=<clusters>`, except the 1x point (the NMI column already) and the 10x
 * point, labelled `NMI+ k=<clusters>`.
 */
export function metricsTable(report: Report): { header: string[]; rows: string[][] } {
  const runs: RunReport[] = report.runs;
  const ks = [...new Set(runs.flatMap((r) => Object.keys(r.metrics.recall).map(Number)))].sort((a, b) => a - b);
  const points = runs.map(nmiPointsOf);
  const curveKs = [...new Set(runs.flatMap((r) => r.metrics.nmiCurve.map((p) => p.clusters)))]
    .filter((k) => !runs.every((r, i) => points[i]?.nmi === k || !r.metrics.nmiCurve.some((p) => p.clusters === k)))
    .sort((a, b) => a - b);
  const curveHeader = (k: number): string => (points.some((p) => p.nmiPlus === k) ? `NMI+ k=${k}` : `NMI k=${k}`);
  const hasAnn = runs.some((r) => r.metrics.annRecall !== undefined);
  const header = [
    'model',
    ...ks.map((k) => `R@${k}`),
    'R-Prec',
    'MAP@R',
    'mAP',
    'MRR',
    'NMI',
    'AMI',
    'F1',
    ...curveKs.map(curveHeader),
    ...(hasAnn ? ks.map((k) => `ANN R@${k}`) : []),
    'lone q',
  ];
  const rows = runs.map((r) => [
    r.name,
    ...ks.map((k) => pct(r.metrics.recall[String(k)])),
    pct(r.metrics.rPrecision),
    pct(r.metrics.mapAtR),
    pct(r.metrics.map),
    pct(r.metrics.mrr),
    pct(r.metrics.nmi),
    pct(r.metrics.ami),
    pct(r.metrics.f1),
    ...curveKs.map((k) => pct(r.metrics.nmiCurve.find((p) => p.clusters === k)?.nmi)),
    ...(hasAnn ? ks.map((k) => pct(r.metrics.annRecall?.[String(k)])) : []),
    String(r.metrics.loneQueries),
  ]);
  return { header, rows };
}

/**
 * The runs' metrics under PyTorch Metric Learning's AccuracyCalculator names (percent strings; see
 * {@link AccuracyCalculatorMetrics}), then MAP@K at each K: the header and one row per run.
 */
export function accuracyCalculatorTable(report: Report): { header: string[]; rows: string[][] } {
  const runs: RunReport[] = report.runs;
  const names = ['precision_at_1', 'r_precision', 'mean_average_precision_at_r', 'mean_average_precision', 'mean_reciprocal_rank', 'NMI', 'AMI'] as const;
  const ks = [...new Set(runs.flatMap((r) => Object.keys(r.metrics.mapAtK ?? {}).map(Number)))].sort((a, b) => a - b);
  return {
    header: ['model', ...names, ...ks.map((k) => `MAP@${k}`)],
    rows: runs.map((r) => [r.name, ...names.map((name) => pct(r.metrics.accuracyCalculator[name])), ...ks.map((k) => pct(r.metrics.mapAtK?.[String(k)]))]),
  };
}

/** The AccuracyCalculator section of report.md: {@link accuracyCalculatorTable} under its caption. */
export function accuracyCalculatorMarkdown(report: Report): string {
  return ['', `${ACCURACY_CALCULATOR_CAPTION}:`, '', ...markdownTable(accuracyCalculatorTable(report))].join('\n');
}

/** What the AccuracyCalculator table holds, in both reports. */
export const ACCURACY_CALCULATOR_CAPTION =
  "PyTorch Metric Learning's AccuracyCalculator metrics under its names (values in %; k = None: the whole ranking; kNN metrics over non-lone queries) and MAP@K (divided by the hits in the top K)";

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
  // One line for every model when they share it (the same device choice, the same preprocessing), else one per model.
  const withModel = report.runs.filter((r): r is RunReport & { model: ModelInfo } => r.model !== undefined);
  const shared = <T>(of: (m: ModelInfo) => T): boolean => withModel.length > 1 && new Set(withModel.map((r) => JSON.stringify(of(r.model)))).size === 1;
  const choice = (m: ModelInfo) => ({ provider: m.executionProvider, attempts: m.providerAttempts });
  const firstModel = withModel[0]?.model;
  if (firstModel !== undefined && shared(choice)) notes.push(`Execution provider: ${describeProviderChoice('every model', choice(firstModel))}.`);
  else for (const r of withModel) notes.push(`Execution provider: ${describeProviderChoice(r.name, choice(r.model))}.`);
  if (firstModel !== undefined && shared((m) => [m.preprocessing, m.preprocessingSources])) notes.push(describePreprocessing('every model', firstModel));
  else for (const r of withModel) notes.push(describePreprocessing(r.name, r.model));
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
    rows: run.metrics.perClass.slice(0, WORST_CLASSES_SHOWN).map((c) => [classLabel(run, c.label), String(c.queryCount), pct(c.recallAt1), pct(c.rPrecision), pct(c.mapAtR)]),
  };
}

/** Signed percentage points, e.g. `+12.50`, `-3.00`, `0.00`; n/a when either side is missing. */
const deltaPoints = (value: number | null | undefined, base: number | null | undefined): string => {
  if (value === null || value === undefined || base === null || base === undefined) return 'n/a';
  const d = 100 * (value - base);
  return `${d > 0 ? '+' : ''}${d.toFixed(2)}`;
};

/**
 * The per-class comparison of several runs: one row per class, MAP@R per run, then each later run's
 * difference to the first in percentage points (`Δ <run>`), sorted by the largest disagreement (the
 * largest |Δ| of the row, classes without MAP@R last, then by label). `shown` rows at most (default
 * {@link WORST_CLASSES_SHOWN}); `total` is the number of classes compared.
 */
export function perClassComparisonTable(report: Report, shown = WORST_CLASSES_SHOWN): { header: string[]; rows: string[][]; total: number } {
  const runs = report.runs;
  const byLabel = runs.map((r) => new Map(r.metrics.perClass.map((c) => [c.label, c])));
  const labels = [...new Set(runs.flatMap((r) => r.metrics.perClass.map((c) => c.label)))];
  const values = (label: string): Array<number | null> => byLabel.map((m) => m.get(label)?.mapAtR ?? null);
  const disagreement = (label: string): number => {
    const [base, ...rest] = values(label);
    const ds = rest.filter((v): v is number => v !== null && base !== null && base !== undefined).map((v) => Math.abs(v - (base as number)));
    return ds.length === 0 ? -1 : Math.max(...ds);
  };
  const sorted = labels
    .map((label) => ({ label, key: disagreement(label) }))
    .sort((a, b) => b.key - a.key || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0))
    .map((e) => e.label);
  const queries = (label: string): string => String(byLabel.find((m) => m.has(label))?.get(label)?.queryCount ?? 0);
  return {
    header: ['class', 'queries', ...runs.map((r) => `MAP@R ${r.name}`), ...runs.slice(1).map((r) => `Δ ${r.name}`)],
    rows: sorted.slice(0, shown).map((label) => {
      const v = values(label);
      return [classLabel(runs[0] as RunReport, label), queries(label), ...v.map(pct), ...v.slice(1).map((x) => deltaPoints(x, v[0]))];
    }),
    total: labels.length,
  };
}

/** The title of the per-class section: the worst classes of one run, or the classes several runs disagree on most. */
export function perClassTitle(report: Report): string {
  if (report.runs.length === 1) {
    const run = report.runs[0] as RunReport;
    return `Worst classes of ${run.name} (${Math.min(WORST_CLASSES_SHOWN, run.metrics.perClass.length)} of ${run.metrics.perClass.length}; values in %)`;
  }
  const { rows, total } = perClassComparisonTable(report);
  const first = (report.runs[0] as RunReport).name;
  return `Per class, the ${rows.length} of ${total} classes where the models disagree most (MAP@R in %; Δ = percentage points against ${first})`;
}

/** The per-class table of the reports: {@link worstClassesTable} for one run, {@link perClassComparisonTable} for several. */
export function perClassTable(report: Report): { header: string[]; rows: string[][] } {
  return report.runs.length === 1 ? worstClassesTable(report.runs[0] as RunReport) : perClassComparisonTable(report);
}

/** The parameters (of the first run), the dataset and the versions as name/value rows; nested keys joined with dots. */
export function parametersTable(report: Report): { header: string[]; rows: string[][] } {
  const first = report.runs[0] as RunReport;
  const { skippedImages, classNames, ...dataset } = first.dataset;
  return { header: ['parameter', 'value'], rows: flatRows({ parameters: first.parameters, dataset: { ...dataset, skippedImages: skippedImages.length, ...(classNames !== undefined ? { classNames: Object.keys(classNames).length } : {}) }, versions: report.versions }) };
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

/**
 * The random selection lined up across runs: each query (the seeded sample, the same for every run)
 * with every run's example for it, in the first run's order.
 */
export function randomExamplesByQuery(report: Report): Array<{ query: RetrievalExample['query']; runs: Array<{ name: string; example: RetrievalExample }> }> {
  const order: Array<RetrievalExample['query']> = [];
  const seen = new Set<string>();
  for (const run of report.runs) {
    for (const e of run.examples) {
      if (e.selection === 'random' && !seen.has(e.query.id)) {
        seen.add(e.query.id);
        order.push(e.query);
      }
    }
  }
  return order.map((query) => ({
    query,
    runs: report.runs.flatMap((run) => {
      const example = run.examples.find((e) => e.selection === 'random' && e.query.id === query.id);
      return example === undefined ? [] : [{ name: run.name, example }];
    }),
  }));
}

/** The neighbours of an example as Markdown cells, padded to `width`. */
function neighbourCells(example: RetrievalExample, width: number): string[] {
  return Array.from({ length: width }, (_, i) => {
    const n = example.neighbours[i];
    return n === undefined ? '' : cellText(`${exampleMark(n.correct, n.label)} (${n.similarity.toFixed(3)}) ${n.id}`);
  });
}

const apText = (example: RetrievalExample): string => pct(example.averagePrecision);

/**
 * The retrieval examples as Markdown tables: the random queries, the same for every run, one row per
 * query and run; then each run's worst queries (lowest AP@R). ✓ = the query's label.
 */
export function examplesMarkdown(report: Report): string {
  const lines: string[] = [];
  const all = report.runs.flatMap((r) => r.examples);
  if (all.length === 0) return '';
  const width = Math.max(...all.map((e) => e.neighbours.length));
  const numbered = Array.from({ length: width }, (_, i) => `#${i + 1}`);
  const random = randomExamplesByQuery(report);
  if (random.length > 0) {
    lines.push('', `Retrieval examples: ${random.length} seeded random queries, the same for every model (kind = whether the nearest neighbour has the query's label; AP@R in %; ✓ = the query's label, similarity in brackets):`, '');
    lines.push(
      ...markdownTable({
        header: ['query', 'model', 'kind', 'AP@R', ...numbered],
        rows: random.flatMap(({ query, runs }) => runs.map(({ name, example }) => [cellText(`${query.label} (${query.id})`), cellText(name), example.kind, apText(example), ...neighbourCells(example, width)])),
      }, false),
    );
  }
  for (const run of report.runs) {
    const worst = run.examples.filter((e) => e.selection === 'worst');
    if (worst.length === 0) continue;
    lines.push('', `Worst queries of ${run.name} (the ${worst.length} of lowest AP@R):`, '');
    lines.push(...markdownTable({ header: ['query', 'kind', 'AP@R', ...numbered], rows: worst.map((e) => [cellText(`${e.query.label} (${e.query.id})`), e.kind, apText(e), ...neighbourCells(e, width)]) }, false));
  }
  return lines.join('\n');
}

/** The parameters section of report.md. */
export function parametersMarkdown(report: Report): string {
  return ['', 'Parameters:', '', ...markdownTable(parametersTable(report), false)].join('\n');
}

/** A Markdown table; `numeric` right-aligns the columns after the first. */
export function markdownTable({ header, rows }: { header: string[]; rows: string[][] }, numeric = true): string[] {
  return [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 || !numeric ? ' --- ' : ' ---: ')).join('|')}|`, ...rows.map((row) => `| ${row.join(' | ')} |`)];
}

/** Markdown table of the runs' metrics (percent), followed by notes on protocol and parameters. */
export function reportMarkdown(report: Report): string {
  return [...markdownTable(metricsTable(report)), '', ...reportNotes(report)].join('\n');
}

/** The per-class section of report.md: one run's worst classes, or the classes several runs disagree on most. */
export function perClassMarkdown(report: Report): string {
  return ['', `${perClassTitle(report)}:`, '', ...markdownTable(perClassTable(report))].join('\n');
}

/**
 * `markdown` with no markup that came from data: Markdown viewers pass raw HTML through and follow
 * links, so a folder or file name such as `<img src=x onerror=...>` or `[x](javascript:...)` would
 * become live markup. `&`, `<` and `>` become entities, `[` and `]` are backslash-escaped; a viewer
 * shows the same characters. (dmlkit's own Markdown in report.md uses none of them as markup.)
 */
export function escapeMarkdownMarkup(markdown: string): string {
  return markdown.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/[[\]]/g, '\\$&');
}
