/**
 * @file The one fallback mechanism of dmlkit: try candidates in order, record why each failed, keep the
 * first that works. Inference and the graph trainer choose execution providers with it
 * (lib/onnx/session.ts), TensorFlow.js training chooses its backend with it (lib/engine/tfjs/backend.ts);
 * the attempts end up in the run's report, so a reader sees what ran and why the others did not.
 */

/** One candidate tried: its name and, when it failed, why (one line). */
export interface FallbackAttempt<Name extends string> {
  name: Name;
  error?: string;
}

/** The first candidate that worked, its value, and every attempt in order (the last one succeeded). */
export interface FallbackResult<Name extends string, Value> {
  chosen: Name;
  value: Value;
  attempts: Array<FallbackAttempt<Name>>;
}

/** Every candidate failed: the attempts in order, and the last failure as `cause`. */
export class FallbackExhausted<Name extends string> extends Error {
  readonly attempts: ReadonlyArray<FallbackAttempt<Name>>;

  constructor(attempts: ReadonlyArray<FallbackAttempt<Name>>, cause: unknown) {
    super(attempts.map((a) => `${a.name}: ${a.error ?? ''}`).join('; '), { cause });
    this.name = 'FallbackExhausted';
    this.attempts = attempts;
  }
}

/** What one try of a candidate says: a value, or (without trying) why it cannot work here. */
export type FallbackTry<Value> = { value: Value } | { unavailable: string };

/**
 * Tries `candidates` in order with `attempt`; returns the first that gives a value. A try that throws
 * is recorded with `describe(error)` and the next candidate is tried; one that answers
 * `{ unavailable }` is recorded with that reason without having been tried. Throws
 * {@link FallbackExhausted} when none works.
 */
export async function firstWorking<Name extends string, Value>(
  candidates: readonly Name[],
  attempt: (name: Name) => Promise<FallbackTry<Value>>,
  describe: (error: unknown) => string,
): Promise<FallbackResult<Name, Value>> {
  const attempts: Array<FallbackAttempt<Name>> = [];
  let lastError: unknown;
  for (const name of candidates) {
    try {
      const outcome = await attempt(name);
      if ('unavailable' in outcome) {
        attempts.push({ name, error: outcome.unavailable });
        continue;
      }
      attempts.push({ name });
      return { chosen: name, value: outcome.value, attempts };
    } catch (err) {
      lastError = err;
      attempts.push({ name, error: describe(err) });
    }
  }
  throw new FallbackExhausted(attempts, lastError);
}
