/**
 * @file The one error type of dmlkit.
 *
 * Every failure that a user can cause (a bad argument, a missing file, a corrupt image, a model of
 * the wrong shape) is a {@link DmlError} with a stable machine-readable `code` and one message line
 * that names the thing, what was expected and what was found. The CLI prints that line alone and
 * exits 2 for usage errors, 1 for everything else.
 */

/** Stable error codes. Add new ones at the end; never rename. */
export type DmlErrorCode =
  /** A parameter (CLI flag, config field, function argument) has a wrong value. Exit code 2. */
  | 'E_ARG'
  /** A path that must exist does not. */
  | 'E_NOT_FOUND'
  /** A dataset file or layout is malformed (bad manifest line, mismatched label file, ...). */
  | 'E_DATASET'
  /** An image cannot be decoded (corrupt, truncated, unsupported, too many pixels). */
  | 'E_IMAGE'
  /** An ONNX model has an unsupported input/output signature or cannot be loaded. */
  | 'E_MODEL'
  /** Embeddings contain NaN/Inf or have the wrong shape. */
  | 'E_EMBEDDING'
  /** A set to evaluate is empty, or a request does not fit the data (K larger than the gallery). */
  | 'E_EMPTY'
  /** Reading or writing a file failed (permissions, disk full, unwritable output). */
  | 'E_IO'
  /** The operation was cancelled (SIGINT, AbortSignal). */
  | 'E_CANCELLED'
  /** Training diverged: a loss or weight became NaN or infinite. */
  | 'E_NUMERIC'
  /** A request the server refuses whoever asks (HTTP 403): a Host outside the policy, a write to a read-only server, a cross-origin write. */
  | 'E_FORBIDDEN';

/** Marks DmlErrors across copies of this module (a registered symbol: the same in every copy). */
const DML_ERROR_BRAND = Symbol.for('dmlkit.DmlError');

/** An error a user can act on. `message` is one line; `cause` keeps the underlying error. */
export class DmlError extends Error {
  readonly code: DmlErrorCode;
  /** The brand {@link DmlError}'s `instanceof` checks. */
  readonly [DML_ERROR_BRAND] = true;

  constructor(code: DmlErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DmlError';
    this.code = code;
  }

  /**
   * `x instanceof DmlError` holds for a DmlError of any copy of this module: a program can end up with
   * two (dmlkit loaded once through `require` and once through `import`, as the specs do when a
   * command's work is loaded with `import()`; or two installed versions), and each copy has its own
   * class. Subclasses keep the ordinary prototype check.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (this !== DmlError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === 'object' && value !== null && (value as { [DML_ERROR_BRAND]?: unknown })[DML_ERROR_BRAND] === true;
  }
}

/** Short, printable description of a received value, for error messages. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `array of length ${value.length}`;
  if (ArrayBuffer.isView(value)) return `${value.constructor.name} of length ${(value as unknown as { length: number }).length}`;
  return typeof value;
}

/**
 * The error for a bad parameter, in sharp's style:
 * `Expected <expected> for <name> but received <value>`.
 */
export function invalidParameterError(name: string, expected: string, actual: unknown): DmlError {
  return new DmlError('E_ARG', `Expected ${expected} for ${name} but received ${describeValue(actual)}`);
}
