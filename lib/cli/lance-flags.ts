/**
 * @file The flags of `dml index build --out lance:<folder>` (lib/index-store/lance-store.ts): the ANN
 * parameters and where the table goes; declared once, parsed once.
 */
import type { Command } from 'commander';
import { DEFAULT_LANCE_ANN, type LanceAnnParams } from '../index-store/lance-store.js';
import { parseNonNegativeInt, parsePositiveInt } from './parse-options.js';

/** Raw values of the LanceDB ANN flags. */
export interface LanceFlags {
  lanceMinRows: string;
  lancePartitions: string;
  lanceM: string;
  lanceEfConstruction: string;
  lanceEf: string;
  lanceNprobes: string;
  lanceRefineFactor: string;
  lanceTable?: string;
}

/** Declares the `--lance-*` flags on `command`. */
export function addLanceOptions(command: Command): Command {
  const d = DEFAULT_LANCE_ANN;
  return command
    .option('--lance-min-rows <n>', 'lance: build the IVF_HNSW_SQ index once the table holds this many rows (below: exact search)', String(d.minRows))
    .option('--lance-partitions <n>', 'lance: IVF partitions (0: one per 500,000 rows)', String(d.partitions))
    .option('--lance-m <n>', 'lance: HNSW M of each partition', String(d.m))
    .option('--lance-ef-construction <n>', 'lance: HNSW efConstruction', String(d.efConstruction))
    .option('--lance-ef <n>', 'lance: HNSW ef at query time (raised to k)', String(d.ef))
    .option('--lance-nprobes <n>', 'lance: IVF partitions searched per query', String(d.nprobes))
    .option('--lance-refine-factor <n>', 'lance: candidates per wanted neighbour re-ranked by their full vectors (1: none)', String(d.refineFactor))
    .option('--lance-table <uri>', 'lance: keep the table in this LanceDB database (s3://bucket/prefix, gs://, az://, or a folder) instead of in the index folder; credentials from the environment (AWS_ACCESS_KEY_ID, ...)');
}

/** The ANN parameters of the flags. Errors: E_ARG naming the flag. */
export function lanceParameters(flags: LanceFlags): LanceAnnParams {
  return {
    minRows: parsePositiveInt(flags.lanceMinRows, '--lance-min-rows'),
    partitions: parseNonNegativeInt(flags.lancePartitions, '--lance-partitions'),
    m: parsePositiveInt(flags.lanceM, '--lance-m'),
    efConstruction: parsePositiveInt(flags.lanceEfConstruction, '--lance-ef-construction'),
    ef: parsePositiveInt(flags.lanceEf, '--lance-ef'),
    nprobes: parsePositiveInt(flags.lanceNprobes, '--lance-nprobes'),
    refineFactor: parsePositiveInt(flags.lanceRefineFactor, '--lance-refine-factor'),
  };
}
