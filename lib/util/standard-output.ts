/**
 * @file Writing a command's product (`dml eval --json -`'s report) to standard output so that a lost
 * write is an error, not a silent exit 0: the write is awaited and its error (EPIPE when the reader has
 * gone, ENOSPC on /dev/full) reported; and a standard output that was closed when the process started
 * is refused. Node.js puts `/dev/null` in place of a closed descriptor 0-2 at start-up, opened
 * read-write, where a shell's `> /dev/null` opens it write-only; on Linux that difference tells a closed
 * standard output (`>&-`, or a parent's ignored stdio) from one the user sent to /dev/null.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { DmlError } from '../errors.js';

/** O_ACCMODE and O_RDWR of Linux's open flags. */
const ACCESS_MODE_MASK = 0o3;
const READ_WRITE = 0o2;

/** Whether file descriptor 1 is the read-write /dev/null Node.js opened for a closed standard output (Linux; false elsewhere). */
export function standardOutputWasClosed(): boolean {
  try {
    if (readlinkSync('/proc/self/fd/1') !== '/dev/null') return false;
    const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync('/proc/self/fdinfo/1', 'utf8'))?.[1];
    return flags !== undefined && (Number.parseInt(flags, 8) & ACCESS_MODE_MASK) === READ_WRITE;
  } catch {
    return false;
  }
}

/** Refuses (E_IO naming `what`) a standard output that was closed when the process started; a check to run before any work. */
export function checkStandardOutput(what: string): void {
  if (standardOutputWasClosed()) throw new DmlError('E_IO', `Cannot write ${what} to standard output: it was closed when dml started (give a file instead of -)`);
}

/** Writes `text` to standard output and resolves once it is written. Errors: E_IO naming `what` when it cannot be. */
export async function writeStandardOutput(text: string, what: string): Promise<void> {
  checkStandardOutput(what);
  const failed = (err: Error): DmlError => new DmlError('E_IO', `Cannot write ${what} to standard output: ${(err as NodeJS.ErrnoException).code ?? err.message}`, { cause: err });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(failed(err));
    process.stdout.once('error', onError);
    process.stdout.write(text, (err) => {
      process.stdout.off('error', onError);
      if (err) reject(failed(err));
      else resolve();
    });
  });
}
