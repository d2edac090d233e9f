/**
 * @file The write lock of a search index folder: a `lock` file holding the pid and host of the one
 * process that has the index open for writing, created exclusively; a lock whose process on this host
 * is gone is taken over.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DmlError } from '../errors.js';
import { ioError, LOCK_FILE } from './layout.js';

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the write lock of index folder `dir`, replacing a lock whose process on this host is gone. */
export async function acquireLock(dir: string): Promise<string> {
  const file = path.join(dir, LOCK_FILE);
  const mine = JSON.stringify({ pid: process.pid, host: os.hostname(), since: new Date().toISOString() });
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(file, mine, { flag: 'wx' });
      return file;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw ioError(`Cannot lock index ${dir}`, err);
    }
    let holder: { pid?: unknown; host?: unknown } = {};
    try {
      holder = JSON.parse(await readFile(file, 'utf8')) as typeof holder;
    } catch {
      // An empty or half-written lock file: its writer died before finishing it.
    }
    const pid = typeof holder.pid === 'number' ? holder.pid : undefined;
    if (pid !== undefined && (holder.host !== os.hostname() || isProcessAlive(pid))) {
      throw new DmlError(
        'E_IO',
        `Index ${dir} is in use by process ${pid} on ${String(holder.host)} (lock file ${file}); stop that process, or delete the lock file if it is gone`,
      );
    }
    await rm(file, { force: true });
  }
}


/** Releases a lock taken with {@link acquireLock}. */
export async function releaseLock(file: string): Promise<void> {
  await rm(file, { force: true });
}
