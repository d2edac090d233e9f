/**
 * @file The write lock of a folder that one process at a time may change (a search index, a training
 * run folder): a `lock` file holding the pid and host of that process, created exclusively. A lock
 * whose process on this host is gone (killed, crashed) is taken over; so is an empty or cut-short one,
 * whose writer died while writing it. A file of that name that is anything else (another program's
 * file, a model's weights) is never taken for a stale lock and deleted: the lock is refused, naming it.
 */
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DmlError } from '../errors.js';
import { openRegular } from './regular-file.js';

/** The lock file's name inside the locked folder. */
export const LOCK_FILE = 'lock';

/** Bytes of a lock file read at most: a lock is one short JSON line. */
const MAX_LOCK_BYTES = 1024;

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** What a lock file holds, after the rules of the file comment: a holder, a stale lock (dead writer), or a file that is no lock. */
async function readLock(file: string): Promise<{ pid: number; host: unknown } | 'stale' | 'foreign'> {
  let text: string;
  try {
    const { handle, info } = await openRegular(file, 'lock file');
    try {
      if (info.size > MAX_LOCK_BYTES) return 'foreign';
      text = (await handle.readFile()).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'stale'; // gone meanwhile: its holder released it
    if (err instanceof DmlError) return 'foreign'; // not a regular file
    throw err;
  }
  let holder: { pid?: unknown; host?: unknown } | undefined;
  try {
    holder = JSON.parse(text) as typeof holder;
  } catch {
    // Empty, or cut short after `{"pid":` while being written: a stale lock. Anything else is no lock.
    return text === '' || '{"pid":'.startsWith(text) || text.startsWith('{"pid":') ? 'stale' : 'foreign';
  }
  return typeof holder?.pid === 'number' ? { pid: holder.pid, host: holder.host } : 'foreign';
}

/**
 * Takes the write lock of folder `dir` (which must exist), replacing a stale lock (see the file
 * comment); `subject` names the folder in messages (`Index runs/index`). Returns the lock file's path.
 * Errors: E_IO when another live process holds it, when a `lock` file that is no lock is in its place,
 * or when it cannot be written.
 */
export async function acquireFolderLock(dir: string, subject: string): Promise<string> {
  const file = path.join(dir, LOCK_FILE);
  const mine = JSON.stringify({ pid: process.pid, host: os.hostname(), since: new Date().toISOString() });
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(file, mine, { flag: 'wx' });
      return file;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) {
        throw new DmlError('E_IO', `Cannot lock ${subject}: ${(err as Error).message}`, { cause: err });
      }
    }
    const holder = await readLock(file).catch((err: unknown) => {
      throw new DmlError('E_IO', `Cannot lock ${subject}: ${(err as Error).message}`, { cause: err });
    });
    if (holder === 'foreign') {
      throw new DmlError('E_IO', `Cannot lock ${subject}: ${file} is not a lock file written by dmlkit; move it away (it is not removed)`);
    }
    if (holder !== 'stale' && (holder.host !== os.hostname() || isProcessAlive(holder.pid))) {
      throw new DmlError(
        'E_IO',
        `${subject} is in use by process ${holder.pid} on ${String(holder.host)} (lock file ${file}); stop that process, or delete the lock file if it is gone`,
      );
    }
    await rm(file, { force: true });
  }
}

/** Releases a lock taken with {@link acquireFolderLock}. */
export async function releaseFolderLock(file: string): Promise<void> {
  await rm(file, { force: true });
}
