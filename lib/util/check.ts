/**
 * @file Argument checks shared by the library's public functions, in the spirit of sharp's `lib/is.js`:
 * each returns the checked value or throws the E_ARG {@link invalidParameterError} that names the
 * parameter, what was expected and what was received.
 */
import { invalidParameterError } from '../errors.js';

/** An integer in [min, max] (`max` unbounded by default). */
export function checkInteger(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidParameterError(name, max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer in [${min}, ${max}]`, value);
  }
  return value;
}

/** An integer >= 1. */
export function checkPositiveInteger(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw invalidParameterError(name, 'a positive integer', value);
  return value;
}

/** A finite number >= 0. */
export function checkNonNegativeNumber(name: string, value: unknown): number {
  if (typeof value !== 'number' || !(value >= 0) || !Number.isFinite(value)) throw invalidParameterError(name, 'a finite number >= 0', value);
  return value;
}

/** The longest delay Node's timers hold (2^31 - 1 ms, about 24.8 days); a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A delay in seconds that a Node timer can hold: finite, above 0 (or at least 0 with `zero: true`)
 * and at most {@link MAX_TIMER_MS} ms.
 */
export function checkTimerSeconds(name: string, value: unknown, zero = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || !(zero ? value >= 0 : value > 0) || value * 1000 > MAX_TIMER_MS) {
    throw invalidParameterError(name, timerSecondsRange(zero), value);
  }
  return value;
}

/** What {@link checkTimerSeconds} expects, in words. */
export function timerSecondsRange(zero = false): string {
  return `a number of seconds in ${zero ? '[' : '('}0, ${MAX_TIMER_MS / 1000}] (the longest delay a Node timer holds)`;
}

/** A boolean. */
export function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw invalidParameterError(name, 'a boolean', value);
  return value;
}

/** A Float32Array of `count` row-major rows of `dim` values. */
export function checkRows(name: string, data: unknown, count: number, dim: number): Float32Array {
  if (!(data instanceof Float32Array)) throw invalidParameterError(name, 'a Float32Array', data);
  if (data.length !== count * dim) throw invalidParameterError(`${name}.length`, `${count * dim} (${count} rows x ${dim} dims)`, data.length);
  return data;
}
