/**
 * @file Parsers for CLI flag values. Each names the flag, what it expects and what it got.
 */
import { availableParallelism } from 'node:os';
import { invalidParameterError } from '../errors.js';
import { MAX_TIMER_MS, timerSecondsRange } from '../util/check.js';

/** A positive integer. */
export function parsePositiveInt(value: string, flag: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) throw invalidParameterError(flag, 'a positive integer', value);
  return n;
}

/** A non-negative integer (counts where 0 means "none", such as `--workers 0`). */
export function parseNonNegativeInt(value: string, flag: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) throw invalidParameterError(flag, 'a non-negative integer', value);
  return n;
}

/** A non-negative integer below 2^32 (seeds). */
export function parseSeed(value: string, flag: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n > 0xffffffff) throw invalidParameterError(flag, 'an integer in [0, 4294967295]', value);
  return n;
}

/** Comma-separated positive integers, deduplicated and sorted ascending (`1,2,4,8`). */
export function parsePositiveIntList(value: string, flag: string): number[] {
  const parts = value.split(',').map((s) => s.trim());
  if (parts.some((p) => !/^\d+$/.test(p) || Number(p) < 1)) {
    throw invalidParameterError(flag, 'a comma-separated list of positive integers such as 1,2,4,8', value);
  }
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
}

/** Comma-separated finite numbers (`0.485,0.456,0.406`). */
export function parseNumberList(value: string, flag: string): number[] {
  const parts = value.split(',').map((s) => s.trim());
  const nums = parts.map(Number);
  if (parts.some((p) => p === '') || nums.some((n) => !Number.isFinite(n))) {
    throw invalidParameterError(flag, 'a comma-separated list of numbers', value);
  }
  return nums;
}

/** A finite number >= 0 (`1e-4`, `0`). */
export function parseNonNegativeNumber(value: string, flag: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw invalidParameterError(flag, 'a finite number >= 0', value);
  return n;
}

/** A delay in seconds that a Node timer can hold (above 0, or from 0 with `zero`; util/check.ts, checkTimerSeconds). */
export function parseTimerSeconds(value: string, flag: string, zero = false): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || !(zero ? n >= 0 : n > 0) || n * 1000 > MAX_TIMER_MS) throw invalidParameterError(flag, timerSecondsRange(zero), value);
  return n;
}

/** A size `224` or `HxW` (`224x224`); returns [height, width]. */
export function parseSize(value: string, flag: string): [number, number] {
  const m = /^(\d+)(?:x(\d+))?$/.exec(value.trim());
  if (!m) throw invalidParameterError(flag, 'a size such as 224 or 224x224 (height x width)', value);
  const h = Number(m[1]);
  const w = m[2] !== undefined ? Number(m[2]) : h;
  if (h < 1 || w < 1) throw invalidParameterError(flag, 'a positive size', value);
  return [h, w];
}

/** One of a fixed set of choices. */
export function parseChoice<T extends string>(value: string, choices: readonly T[], flag: string): T {
  if (!(choices as readonly string[]).includes(value)) throw invalidParameterError(flag, `one of ${choices.join(', ')}`, value);
  return value as T;
}

/** Bounds of the parallelism flags (`--workers`, `--threads`), in multiples of the machine's cores. */
export const PARALLELISM_PER_CORE = {
  /** Above this many per core, a value is capped with a warning (it only adds contention). */
  useful: 2,
  /** Above this many per core, a value is refused (`--workers 100000` forks until memory runs out). */
  accepted: 16,
} as const;

/**
 * A process or thread count (`--workers`, `--threads`): an integer from `min` up; above
 * {@link PARALLELISM_PER_CORE}.accepted x cores refused (E_ARG naming the flag and the bound), above
 * `useful` x cores capped there with a warning through `warn`.
 */
export function parseParallelism(value: string, flag: string, min: 0 | 1, warn: (message: string) => void): number {
  const n = min === 0 ? parseNonNegativeInt(value, flag) : parsePositiveInt(value, flag);
  const cores = availableParallelism();
  const accepted = PARALLELISM_PER_CORE.accepted * cores;
  if (n > accepted) throw invalidParameterError(flag, `an integer in [${min}, ${accepted}] (at most ${PARALLELISM_PER_CORE.accepted} per core; this machine has ${cores})`, value);
  const useful = PARALLELISM_PER_CORE.useful * cores;
  if (n <= useful) return n;
  warn(`${flag} ${n} is more than ${PARALLELISM_PER_CORE.useful} per core on this machine's ${cores} cores: using ${useful}`);
  return useful;
}

