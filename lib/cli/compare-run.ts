/**
 * @file The work of `dml compare` (compare-command.ts declares it): tells training runs from
 * evaluation reports, refuses a mix (and reports of different data, split or protocol:
 * lib/report/compare-reports.ts), prints the table and writes the pages.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { DmlError } from '../errors.js';
import { openDataset } from '../data/open-dataset.js';
import type { ImageSource } from '../data/manifest.js';
import { combineReports, readSavedReport } from '../report/compare-reports.js';
import { markdownTable, reportMarkdown } from '../report/markdown.js';
import { reportHtml, reportMarkdownFile } from '../report/sections.js';
import { exampleThumbnails } from '../report/thumbnails.js';
import type { Report } from '../report/report.js';
import { compareRunsHtml, runNames, runsSummaryTable } from '../train/compare-runs-html.js';
import { readRunFolder } from '../train/run-log.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { readRegularFile } from '../util/regular-file.js';
import { checkWritableFile, checkWritableFolder } from './output-checks.js';
import type { CompareFlags } from './compare-command.js';
import { printWarning } from './warning.js';

/** What an input is: a training run folder, or an evaluation report.json (the file). */
type Input = { kind: 'run'; dir: string; given: string } | { kind: 'report'; file: string; given: string };

const exists = async (file: string): Promise<boolean> => (await stat(file).catch(() => undefined)) !== undefined;

/** The `format` field of the JSON file `file`, if it has one. */
async function formatOf(file: string): Promise<string | undefined> {
  try {
    const format = (JSON.parse((await readRegularFile(file, 'report')).toString('utf8')) as { format?: unknown }).format;
    return typeof format === 'string' ? format : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Classifies `given`: a folder with log.jsonl is a training run; a folder with an evaluation
 * report.json, or such a file, a report; a training run's own report.json stands for its folder.
 */
async function classify(given: string): Promise<Input> {
  const info = await stat(given).catch(() => undefined);
  if (info === undefined) throw new DmlError('E_NOT_FOUND', `dml compare: ${given} does not exist`);
  if (info.isDirectory()) {
    if (await exists(path.join(given, 'log.jsonl'))) return { kind: 'run', dir: given, given };
    const file = path.join(given, 'report.json');
    if (await exists(file)) return { kind: 'report', file, given };
    throw new DmlError('E_ARG', `dml compare: ${given} is neither a dml train run folder (no log.jsonl) nor a dml eval --out folder (no report.json)`);
  }
  if ((await formatOf(given))?.startsWith('dmlkit.train-report/')) return { kind: 'run', dir: path.dirname(given), given };
  return { kind: 'report', file: given, given };
}

/** Refuses `--out` where writing would replace an input's own files. */
function checkOutApart(out: string, inputs: readonly Input[]): void {
  const target = path.resolve(out);
  for (const input of inputs) {
    const folder = path.resolve(input.kind === 'run' ? input.dir : path.dirname(input.file));
    if (folder === target) throw new DmlError('E_ARG', `--out ${out} is the folder of the input ${input.given}, whose report would be replaced; give another folder`);
  }
}

/** `dml compare` (see compare-command.ts). */
export async function runCompare(given: string[], flags: CompareFlags, command: string[]): Promise<void> {
  if (given.length < 2) throw new DmlError('E_ARG', `dml compare: expected at least two inputs to compare, got ${given.length} (${given.join(', ')})`);
  const inputs = await Promise.all(given.map(classify));
  const kinds = new Set(inputs.map((i) => i.kind));
  if (kinds.size > 1) {
    const runs = inputs.filter((i) => i.kind === 'run').map((i) => i.given);
    const reports = inputs.filter((i) => i.kind === 'report').map((i) => i.given);
    throw new DmlError('E_ARG', `dml compare: compare training runs with training runs, or evaluation reports with reports; got runs (${runs.join(', ')}) and reports (${reports.join(', ')})`);
  }
  if (flags.out !== undefined) {
    checkOutApart(flags.out, inputs);
    await checkWritableFolder(flags.out, `--out ${flags.out}`);
    const files = inputs[0]?.kind === 'run' ? ['report.html'] : ['report.json', 'report.md', 'report.html'];
    for (const name of files) await checkWritableFile(path.join(flags.out, name), `--out ${flags.out}`);
  }
  if (inputs[0]?.kind === 'run') await compareRuns(inputs.map((i) => (i as Extract<Input, { kind: 'run' }>).dir), flags);
  else await compareReports(inputs.map((i) => (i as Extract<Input, { kind: 'report' }>).file), flags, ['dml', ...command]);
}

/** Training runs: the summary table on stdout, the overlay page into --out. */
async function compareRuns(dirs: string[], flags: CompareFlags): Promise<void> {
  const runs = await Promise.all(dirs.map(readRunFolder));
  const table = markdownTable(runsSummaryTable(runs, runNames(runs)));
  if (flags.out !== undefined) await writeFileAtomic(path.join(flags.out, 'report.html'), compareRunsHtml(runs));
  process.stdout.write(`${table.join('\n')}\n`);
}

/**
 * Where the combined report's items are, for the examples' thumbnails: the dataset of the first run
 * opened again (its spec as recorded); none, with a warning, when it cannot be opened here.
 */
async function itemSources(report: Report): Promise<Map<string, ImageSource>> {
  const spec = report.runs[0]?.dataset.spec as string;
  if (report.runs[0]?.dataset.layout === 'npy') return new Map();
  try {
    const manifest = await openDataset(spec);
    return new Map(manifest.items.map((it) => [it.id, it.source]));
  } catch (err) {
    printWarning(`the examples show item ids, not thumbnails: the dataset ${JSON.stringify(spec)} cannot be opened here (${(err as Error).message})`);
    return new Map();
  }
}

/** Evaluation reports: one combined report; its metrics table on stdout, its three files into --out. */
async function compareReports(files: string[], flags: CompareFlags, command: string[]): Promise<void> {
  const saved = await Promise.all(files.map(readSavedReport));
  const { report, warnings } = combineReports(saved, command);
  for (const w of warnings) printWarning(w);
  if (flags.out !== undefined) {
    await writeFileAtomic(path.join(flags.out, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
    await writeFileAtomic(path.join(flags.out, 'report.md'), reportMarkdownFile(report));
    const thumbnails = await exampleThumbnails(report, await itemSources(report));
    await writeFileAtomic(path.join(flags.out, 'report.html'), reportHtml(report, { thumbnails }));
  }
  process.stdout.write(`${reportMarkdown(report)}\n`);
}
