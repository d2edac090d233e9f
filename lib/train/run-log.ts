/**
 * @file A training run folder read back for its pages (the dashboard, training-html.ts, and
 * `dml compare` of runs, compare-runs-html.ts): the step and validation lines of `log.jsonl`, the
 * resolved `config.json`, the finished run's `report.json` when there is one, and the triplet scatter
 * files of `scatter/`. Reads only; loads no TensorFlow.js, so `dml compare` stays light.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { DmlError } from '../errors.js';
import { readRegularFile } from '../util/regular-file.js';
import type { TripletScatter } from './scatter.js';
import type { EpochRecord } from './epoch-record.js';

/** One optimiser step as log.jsonl records it (`type: "step"`). */
export interface StepEntry {
  /** The sampler epoch (1-based) the step belongs to. */
  epoch: number;
  /** Steps taken since the start of the run, this one included. */
  globalStep: number;
  /** The step's loss; null when its batch had no valid tuple (no update). */
  loss: number | null;
  /** Anchors (or tuples) of the batch with a valid tuple, and all of them. */
  validCount: number;
  totalCount: number;
  learningRate: number;
}

/** A validation point's triplet scatter (`scatter/epoch-NNN.json` or `scatter/step-NNNNNN.json`). */
export interface ScatterEntry {
  unit: 'epoch' | 'step';
  /** The epoch, or the global step, it was drawn at. */
  index: number;
  scatter: TripletScatter;
}

/** What a finished run's report.json adds: the backend and device that trained. */
export interface FinishedRunInfo {
  backend: string;
  device?: { provider: string };
  createdAt?: string;
}

/** A training run folder, read back. */
export interface RunFolder {
  /** The folder as given. */
  dir: string;
  /** The resolved configuration (config.json); empty when the folder has none yet. */
  config: Record<string, unknown>;
  steps: StepEntry[];
  /** The validation points in order (`type` `epoch` or `validation`), epoch 0 (the untrained model) first. */
  periods: EpochRecord[];
  scatters: ScatterEntry[];
  /** Present once the run has finished (report.json written). */
  finished?: FinishedRunInfo;
}

const SCATTER_FILE = /^(epoch|step)-(\d+)\.json$/;

/** The JSON of `file`, or undefined when it does not exist; a file that is not JSON is an E_IO error naming it. */
async function readJsonIfPresent(file: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = (await readRegularFile(file, what)).toString('utf8');
  } catch (err) {
    if (err instanceof DmlError && err.code === 'E_NOT_FOUND') return undefined;
    throw err;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new DmlError('E_IO', `${file} is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * Parses the lines of a log.jsonl: step lines and validation lines, in order. A line cut short (a
 * killed run) or empty is skipped. Step lines of runs older than step budgets have no `globalStep`:
 * they are numbered in order.
 */
export function parseRunLog(text: string): { steps: StepEntry[]; periods: EpochRecord[] } {
  const steps: StepEntry[] = [];
  const periods: EpochRecord[] = [];
  for (const line of text.split('\n')) {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (entry === null || typeof entry !== 'object') continue;
    if (entry['type'] === 'step') {
      steps.push({
        epoch: entry['epoch'] as number,
        globalStep: typeof entry['globalStep'] === 'number' ? entry['globalStep'] : steps.length + 1,
        loss: typeof entry['loss'] === 'number' ? entry['loss'] : null,
        validCount: (entry['validCount'] as number | undefined) ?? 0,
        totalCount: (entry['totalCount'] as number | undefined) ?? 0,
        learningRate: entry['learningRate'] as number,
      });
    } else if (entry['type'] === 'epoch' || entry['type'] === 'validation') {
      const { type: _type, ...record } = entry;
      periods.push(record as unknown as EpochRecord);
    }
  }
  return { steps, periods };
}

/**
 * Reads the run folder `dir` (see the file comment). A folder without log.jsonl is not a training run:
 * an E_NOT_FOUND error naming it.
 */
export async function readRunFolder(dir: string): Promise<RunFolder> {
  let text: string;
  const logFile = path.join(dir, 'log.jsonl');
  try {
    text = (await readRegularFile(logFile, 'training log')).toString('utf8');
  } catch (err) {
    if (err instanceof DmlError && err.code === 'E_NOT_FOUND') throw new DmlError('E_NOT_FOUND', `${dir} is not a training run folder: it has no log.jsonl (expected the --out folder of dml train)`);
    throw err;
  }
  const { steps, periods } = parseRunLog(text);
  const config = ((await readJsonIfPresent(path.join(dir, 'config.json'), 'run config')) ?? {}) as Record<string, unknown>;
  const report = (await readJsonIfPresent(path.join(dir, 'report.json'), 'training report')) as (FinishedRunInfo & { format?: string }) | undefined;
  const scatterFiles = (await readdir(path.join(dir, 'scatter')).catch(() => [] as string[])).flatMap((f) => {
    const m = SCATTER_FILE.exec(f);
    return m ? [{ file: f, unit: m[1] as 'epoch' | 'step', index: Number(m[2]) }] : [];
  });
  scatterFiles.sort((a, b) => a.index - b.index);
  const scatters: ScatterEntry[] = [];
  for (const s of scatterFiles) {
    const scatter = (await readJsonIfPresent(path.join(dir, 'scatter', s.file), 'scatter file')) as TripletScatter | undefined;
    if (scatter !== undefined) scatters.push({ unit: s.unit, index: s.index, scatter });
  }
  const finished =
    report?.format === 'dmlkit.train-report/1'
      ? { backend: report.backend, ...(report.device ? { device: { provider: report.device.provider } } : {}), ...(report.createdAt ? { createdAt: report.createdAt } : {}) }
      : undefined;
  return { dir, config, steps, periods, scatters, ...(finished ? { finished } : {}) };
}

/**
 * The global step of validation point `record` of `run`: its `globalStep`, or (records of runs older
 * than step budgets) the steps logged up to the end of its epoch.
 */
export function stepOfPeriod(run: Pick<RunFolder, 'steps'>, record: EpochRecord): number {
  if (typeof record.globalStep === 'number') return record.globalStep;
  let n = 0;
  for (const s of run.steps) if (s.epoch <= record.epoch) n = Math.max(n, s.globalStep);
  return n;
}
