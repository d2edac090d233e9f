/**
 * @file The evaluation report: one JSON document holding values, definitions, every parameter,
 * versions and timings. Markdown and HTML renderings are made from it.
 */
import { METRIC_DEFINITIONS } from '../eval/evaluation.js';
import type { RunReport } from '../eval/run-report.js';
import { collectVersions } from '../util/versions.js';

/**
 * Format tag of report.json, described by the JSON Schema `dmlkit/report.schema.json`
 * (schema/report.schema.json). Version 5: the metrics add `ami`, `mrr`, `map` (whole ranking),
 * `mapAtK` and the `accuracyCalculator` block (PyTorch Metric Learning's names), with their
 * definitions. Version 4: every example names its `selection` (`random`: the seeded
 * sample, the same queries for every run; `worst`: the run's lowest AP@R) and its query's
 * `averagePrecision`. Version 3: a report of several runs holds them side by side in `runs`
 * alone (version 2 also copied the first run's fields to the top, so they silently read as the first
 * model's); every run carries `examples`. Version 2: the NMI curve's points name their cluster count
 * `clusters`, the parameters `clusterCounts` and `resolvedClusterCounts`, and the metrics `nmiPlus`.
 */
export const REPORT_FORMAT = 'dmlkit.report/5';

/** What every report.json holds: its format, provenance, definitions and the runs side by side. */
export interface ReportHeader {
  format: typeof REPORT_FORMAT;
  createdAt: string;
  command: string[];
  versions: Record<string, string>;
  definitions: typeof METRIC_DEFINITIONS;
  /** Every model (or embeddings pair) evaluated, in command-line order. */
  runs: RunReport[];
  /** Every run's warnings, each once (what `dml eval` printed as `warning: ...`); empty when none. */
  warnings: string[];
}

/** report.json of one run: the run's fields are also at the top, so `report.metrics.recall` reads directly. */
export type SingleRunReport = ReportHeader & RunReport;

/**
 * report.json: with one run a {@link SingleRunReport}; with several, the runs only in `runs`, side by
 * side (no run's fields at the top). Tell them apart with {@link isSingleRunReport}.
 */
export type Report = SingleRunReport | ReportHeader;

/** True when `report` holds one run, whose fields are then at its top. */
export function isSingleRunReport(report: Report): report is SingleRunReport {
  return report.runs.length === 1 && 'metrics' in report;
}

/** Assembles report.json from runs (at least one); one run's fields are repeated at the top. */
export function buildReport(runs: [RunReport], command: string[]): SingleRunReport;
export function buildReport(runs: RunReport[], command: string[]): Report;
export function buildReport(runs: RunReport[], command: string[]): Report {
  const first = runs[0];
  if (!first) throw new RangeError('buildReport needs at least one run');
  const header: ReportHeader = {
    format: REPORT_FORMAT,
    createdAt: new Date().toISOString(),
    command,
    versions: collectVersions(),
    definitions: METRIC_DEFINITIONS,
    // Every run's warnings, each once (a single-model reader finds them at the top level too).
    warnings: [...new Set(runs.flatMap((r) => r.warnings))],
    runs,
  };
  return runs.length === 1 ? { ...header, ...first } : header;
}
