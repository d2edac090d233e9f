/**
 * @file Assertions for dmlkit's one error type: a {@link DmlError} with the expected code and a
 * one-line message.
 */
import { expect } from 'chai';
import { DmlError, type DmlErrorCode } from '../../lib/errors.js';

function check(error: unknown, code: DmlErrorCode, message: string | RegExp): DmlError {
  expect(error, 'expected a DmlError').to.be.instanceOf(DmlError);
  const dmlError = error as DmlError;
  expect(dmlError.code).to.equal(code, dmlError.message);
  if (typeof message === 'string') expect(dmlError.message).to.equal(message);
  else expect(dmlError.message).to.match(message);
  expect(dmlError.message, 'a DmlError message is one line').not.to.include('\n');
  return dmlError;
}

/**
 * Awaits `action` (a promise, or a function returning a value or a promise) and checks that it fails with
 * a DmlError of `code` whose message equals `message` (string) or matches it (RegExp). Returns the error.
 */
export async function expectDmlError(
  action: Promise<unknown> | (() => unknown),
  code: DmlErrorCode,
  message: string | RegExp,
): Promise<DmlError> {
  let error: unknown;
  try {
    await (typeof action === 'function' ? action() : action);
  } catch (err) {
    error = err;
  }
  return check(error, code, message);
}

/** The same for a synchronous `action`. */
export function expectDmlErrorSync(action: () => unknown, code: DmlErrorCode, message: string | RegExp): DmlError {
  let error: unknown;
  try {
    action();
  } catch (err) {
    error = err;
  }
  return check(error, code, message);
}
