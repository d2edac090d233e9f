/**
 * @file Helpers shared by the experiment-table scripts (fashion-mnist-table.ts, class-collapse.ts):
 * command-line flags and the mean ± sample standard deviation (min-max) cells of their tables.
 */
import type { EpochRecord } from '../../lib/train/epoch-record.js';

/** The value after `flag` on the command line, or `fallback` when the flag is absent. */
export function argument(flag: string, fallback: string): string {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

/**
 * A positive integer flag: its value, or `fallback` (undefined: the config's own value) when absent;
 * anything else stops the script with a message naming the flag.
 */
export function integerArgument(flag: string, fallback?: number): number | undefined {
  const text = argument(flag, '');
  if (text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`Expected a positive integer for ${flag} but received ${JSON.stringify(text)}`);
  return value;
}

/** Mean and sample standard deviation (0 for a single value). */
export function meanAndSd(values: readonly number[]): { mean: number; sd: number } {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const sd = values.length > 1 ? Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / (values.length - 1)) : 0;
  return { mean, sd };
}

/** A table cell: `mean ± sd (min-max)` with two decimals. */
export function summary(values: readonly number[]): string {
  const { mean, sd } = meanAndSd(values);
  return `${mean.toFixed(2)} ± ${sd.toFixed(2)} (${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)})`;
}

/** The last epoch's validation of a run's history; throws when it has none. */
export function lastValidation(history: readonly EpochRecord[]): NonNullable<EpochRecord['validation']> {
  const last = history[history.length - 1];
  if (!last?.validation) throw new Error(`epoch ${last?.epoch} has no validation`);
  return last.validation;
}
