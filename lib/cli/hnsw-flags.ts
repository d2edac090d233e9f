/**
 * @file The HNSW flags of `dml eval --index hnsw` and `dml index build`: declared once, parsed once.
 * Each command declares its own `--seed` (it seeds more than HNSW in `dml eval`).
 */
import type { Command } from 'commander';
import { parsePositiveInt, parseSeed } from './parse-options.js';

/** Raw values of the HNSW flags, with the command's `--seed`. */
export interface HnswFlags {
  hnswM: string;
  hnswEfConstruction: string;
  hnswEf: string;
  seed: string;
}

/** Declares `--hnsw-m`, `--hnsw-ef-construction` and `--hnsw-ef` on `command`. */
export function addHnswOptions(command: Command): Command {
  return command
    .option('--hnsw-m <n>', 'HNSW M', '16')
    .option('--hnsw-ef-construction <n>', 'HNSW efConstruction', '200')
    .option('--hnsw-ef <n>', 'HNSW ef at query time (raised to k by a search for k neighbours)', '64');
}

/** The HNSW parameters of the flags. Errors: E_ARG naming the flag. */
export function hnswParameters(flags: HnswFlags): { m: number; efConstruction: number; ef: number; seed: number } {
  return {
    m: parsePositiveInt(flags.hnswM, '--hnsw-m'),
    efConstruction: parsePositiveInt(flags.hnswEfConstruction, '--hnsw-ef-construction'),
    ef: parsePositiveInt(flags.hnswEf, '--hnsw-ef'),
    seed: parseSeed(flags.seed, '--seed'),
  };
}
