/**
 * @file Saved evaluation reports put side by side (`dml compare evalA/report.json evalB/report.json`):
 * the runs of several report.json files become one report of several runs, as one `dml eval` with
 * every model on its command line would have written it (the same metrics table, per-class
 * differences and the same random queries under every model), without embedding anything again.
 *
 * Only results of one evaluation protocol are comparable: reports whose data, class split or
 * protocol differ are refused with one line naming every difference. Data: the dataset layout, the
 * query and gallery counts and every label's query count (the manifest's hash also changes when the
 * same images are copied or moved, so a differing hash alone is a warning); split: the held-out
 * training classes; protocol: the query/gallery protocol, the K values, the cluster counts and set,
 * k-means, the index and the self-exclusion rule (the random examples are drawn with the k-means seed,
 * so equal protocols show the same queries).
 */
import path from 'node:path';
import { DmlError } from '../errors.js';
import { readRegularFile } from '../util/regular-file.js';
import type { RunReport } from '../eval/run-report.js';
import { buildReport, REPORT_FORMAT, type Report } from './report.js';

/** A report.json read from disk, and where from. */
export interface SavedReport {
  /** The file as given. */
  source: string;
  report: Report;
}

/** What {@link combineReports} returns: the combined report and the notes to show (nothing is printed). */
export interface CombinedReports {
  report: Report;
  warnings: string[];
}

/** Reads the evaluation report `file`: JSON of the current report format, or an E_ARG error naming the file and what it holds. */
export async function readSavedReport(file: string): Promise<SavedReport> {
  const text = (await readRegularFile(file, 'report')).toString('utf8');
  let report: Report;
  try {
    report = JSON.parse(text) as Report;
  } catch (err) {
    throw new DmlError('E_ARG', `${file} is not valid JSON: ${(err as Error).message}`);
  }
  const format = (report as { format?: unknown } | null)?.format;
  if (format !== REPORT_FORMAT) {
    throw new DmlError(
      'E_ARG',
      `${file} is ${typeof format === 'string' ? `a ${format} report` : 'not a dmlkit evaluation report (no format field)'}; expected a ${REPORT_FORMAT} report.json of dml eval${typeof format === 'string' && format.startsWith('dmlkit.report/') ? ' (evaluate again with this version to write one)' : ''}`,
    );
  }
  if (!Array.isArray(report.runs) || report.runs.length === 0) throw new DmlError('E_ARG', `${file} holds no runs`);
  return { source: file, report };
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Each label's query count of a run, sorted by label. */
const classCounts = (run: RunReport): Array<[string, number]> =>
  run.metrics.perClass.map((c): [string, number] => [c.label, c.queryCount]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

/** `fields` with their names prefixed (`kmeans.seed`), so a message names the one that differs. */
const prefixed = (prefix: string, fields: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(fields).map(([k, v]) => [`${prefix}.${k}`, v]));

/** What makes two runs comparable, by aspect (data, split, protocol): named values whose differences are listed. */
function identity(run: RunReport): Record<'data' | 'split' | 'protocol', Record<string, unknown>> {
  const p = run.parameters;
  return {
    data: { layout: run.dataset.layout, queries: run.dataset.queryCount, gallery: run.dataset.galleryCount, 'query count per label': classCounts(run) },
    split: { trainClasses: [...(run.dataset.trainClasses ?? [])].sort() },
    protocol: {
      protocol: run.dataset.protocol,
      sameSet: run.dataset.sameSet,
      ks: p.ks,
      clusterCounts: p.resolvedClusterCounts,
      clusterSet: p.clusterSet,
      ...prefixed('kmeans', { ...p.kmeans }),
      ...prefixed('index', p.index.kind === 'hnsw' ? { kind: 'hnsw', m: p.index.m, efConstruction: p.index.efConstruction, seed: p.index.seed } : { kind: 'exact' }),
      selfExclusion: p.selfExclusion,
    },
  };
}

/** A value in a message: JSON, cut at 60 characters. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? 'none';
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * The differences of `run` from `reference`, one phrase per aspect that differs (e.g. `protocol
 * (ks [1,10] against [1,2,4,8])`); empty when they are comparable.
 */
export function runDifferences(run: RunReport, reference: RunReport): string[] {
  const a = identity(run);
  const b = identity(reference);
  return (['data', 'split', 'protocol'] as const).flatMap((aspect) => {
    const fields = Object.keys(a[aspect]).filter((k) => !same(a[aspect][k], b[aspect][k]));
    return fields.length === 0 ? [] : [`${aspect} (${fields.map((k) => `${k} ${shown(a[aspect][k])} against ${shown(b[aspect][k])}`).join('; ')})`];
  });
}

/** Run names made unique: a name two reports share gets its report's folder in front (`evalA/default.onnx`). */
function uniqueNames(saved: readonly SavedReport[]): string[] {
  const entries = saved.flatMap((s) => s.report.runs.map((run) => ({ run, source: s.source })));
  const count = (name: string): number => entries.filter((e) => e.run.name === name).length;
  const names = entries.map((e) => (count(e.run.name) > 1 ? `${path.basename(path.dirname(path.resolve(e.source)))}/${e.run.name}` : e.run.name));
  return names.map((n, i) => (names.filter((m) => m === n).length > 1 ? `${n} (${i + 1})` : n));
}

/**
 * One report of the runs of every saved report, in the order given (see the file comment); `command`
 * is recorded as the new report's command. Errors: E_ARG when a report's data, split or protocol
 * differs from the first's.
 */
export function combineReports(saved: readonly SavedReport[], command: string[]): CombinedReports {
  const first = saved[0];
  if (first === undefined) throw new DmlError('E_ARG', 'dml compare: expected at least one report.json');
  const reference = first.report.runs[0] as RunReport;
  const warnings: string[] = [];
  for (const s of saved.slice(1)) {
    for (const run of s.report.runs) {
      const differences = runDifferences(run, reference);
      if (differences.length > 0) {
        throw new DmlError('E_ARG', `Cannot compare ${s.source} with ${first.source}: their ${differences.join(', ')} differ; compare reports of one dataset, split and protocol`);
      }
      const hash = run.dataset.manifestHash;
      if (hash !== reference.dataset.manifestHash || run.dataset.spec !== reference.dataset.spec) {
        warnings.push(
          `${s.source}: its dataset ${JSON.stringify(run.dataset.spec)} (manifest ${hash?.slice(0, 12) ?? 'none'}) is not byte for byte the one of ${first.source} (${JSON.stringify(reference.dataset.spec)}, manifest ${reference.dataset.manifestHash?.slice(0, 12) ?? 'none'}), but has the same layout, split and query count per label (a copy or a move of the same images?)`,
        );
      }
    }
  }
  const names = uniqueNames(saved);
  const runs = saved.flatMap((s) => s.report.runs).map((run, i) => ({ ...run, name: names[i] as string }));
  return { report: buildReport(runs, command), warnings: [...new Set(warnings)] };
}
