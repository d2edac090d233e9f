/**
 * @file The evaluation report: one JSON document holding values, definitions, every parameter,
 * versions and timings. Markdown and HTML renderings are made from it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { EvaluationMetrics, EvaluationParameters, EvaluationTimings } from '../eval/evaluation.js';
import { METRIC_DEFINITIONS } from '../eval/evaluation.js';
import type { RetrievalExample } from '../eval/retrieval-examples.js';

/**
 * Format tag of report.json, described by the JSON Schema `dmlkit/report.schema.json`
 * (schema/report.schema.json). Version 4: every example names its `selection` (`random`: the seeded
 * sample, the same queries for every run; `worst`: the run's lowest AP@R) and its query's
 * `averagePrecision`. Version 3: a report of several runs holds them side by side in `runs`
 * alone (version 2 also copied the first run's fields to the top, so they silently read as the first
 * model's); every run carries `examples`. Version 2: the NMI curve's points name their cluster count
 * `clusters`, the parameters `clusterCounts` and `resolvedClusterCounts`, and the metrics `nmiPlus`.
 */
export const REPORT_FORMAT = 'dmlkit.report/4';

/** The model side of a run (absent when embeddings came from .npy files). */
export interface ModelInfo {
  path: string;
  /** The model's identity: the file's SHA-256, or, with external data, that of the file's and the data files' hashes. */
  sha256: string;
  /** External data files the model keeps its weights in (present only when it has any). */
  externalData?: Array<{ location: string; sha256: string }>;
  executionProvider: string;
  providerAttempts: Array<{ provider: string; error?: string }>;
  inputName: string;
  outputName: string;
  /** How the token output was pooled (`cls`, `mean`, `max`); present only when it was. */
  pooling?: string;
  embeddingDim: number;
  fixedBatch: number | null;
  preprocessing: unknown;
  preprocessingSources: Record<string, string>;
  /** The Hugging Face `preprocessor_config.json` read, when one was (its values have the source `preprocessor config`). */
  preprocessorConfig?: string;
  metadataProps: Record<string, string>;
}

/** The data side of a run. */
export interface DatasetInfo {
  /** `layout:path` as given, or the .npy files. */
  spec: string;
  layout: string;
  protocol: string;
  manifestHash?: string;
  /** Labels held out as training classes (class-disjoint split), if any. */
  trainClasses?: string[];
  queryCount: number;
  galleryCount: number;
  /** True when every query is also a gallery item (CUB/Cars/SOP protocol). */
  sameSet: boolean;
  /** Images skipped with --skip-bad-images, with the reason. */
  skippedImages: Array<{ id: string; message: string }>;
  embeddingCache?: { key: string; hit: boolean };
}

/** One model (or one embeddings pair) evaluated on one dataset. */
export interface RunReport {
  name: string;
  model?: ModelInfo;
  dataset: DatasetInfo;
  metrics: EvaluationMetrics;
  parameters: EvaluationParameters;
  timings: EvaluationTimings;
  /** Seeded random queries (the same for every run) and the run's worst queries, with their top neighbours (see eval/retrieval-examples.ts). */
  examples: RetrievalExample[];
  /** Warnings about this run (the lines `dml eval` prints as `warning: ...`); empty when none. */
  warnings: string[];
}

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

const require = createRequire(import.meta.url);

/**
 * The installed version of package `name`, read from its package.json without loading the package: its
 * `package.json` export when it has one, else the nearest package.json of that name above its resolved
 * entry (sharp, for one, does not export its package.json).
 */
function packageVersion(name: string): string {
  try {
    return (require(`${name}/package.json`) as { version: string }).version;
  } catch {
    // Not exported: walk up from the entry file.
  }
  try {
    let dir = path.dirname(require.resolve(name));
    for (;;) {
      const file = path.join(dir, 'package.json');
      if (existsSync(file)) {
        const json = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
        if (json.name === name && typeof json.version === 'string') return json.version;
      }
      const parent = path.dirname(dir);
      if (parent === dir) return 'unknown';
      dir = parent;
    }
  } catch {
    return 'unknown';
  }
}

/** Versions of dmlkit, Node and the native packages that produced the numbers. */
export function collectVersions(): Record<string, string> {
  const own = require('dmlkit/package.json') as { version: string };
  return {
    dmlkit: own.version,
    node: process.version,
    'onnxruntime-node': packageVersion('onnxruntime-node'),
    sharp: packageVersion('sharp'),
    'hnswlib-node': packageVersion('hnswlib-node'),
  };
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
