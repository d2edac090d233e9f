/**
 * @file Parsers for CLI flag values. Each names the flag, what it expects and what it got.
 */
import { invalidParameterError } from '../errors.js';

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
