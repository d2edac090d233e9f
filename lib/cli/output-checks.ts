/**
 * @file Checks made before a command does any work, so that a path it cannot write fails at once,
 * not after minutes of evaluation: `--out` folders and output files.
 */
import { access, constants, stat } from 'node:fs/promises';
import path from 'node:path';
import { DmlError } from '../errors.js';

/**
 * Checks that folder `dir` exists or can be created, before any work starts: its nearest existing
 * ancestor must be a writable folder. `what` names the flag and value in the error.
 */
export async function checkWritableFolder(dir: string, what: string): Promise<void> {
  let current = path.resolve(dir);
  for (;;) {
    const info = await stat(current).catch(() => undefined);
    if (info) {
      if (!info.isDirectory()) throw new DmlError('E_IO', `Cannot write ${what}: ${current} is not a folder`);
      break;
    }
    const parent = path.dirname(current);
    if (parent === current) break;
    current = parent;
  }
  try {
    await access(current, constants.W_OK);
  } catch {
    throw new DmlError('E_IO', `Cannot write ${what}: ${current} is not writable`);
  }
}

/**
 * Checks that `file` can be written as a file before any work starts: it is not a folder, and its
 * folder exists or can be created (see {@link checkWritableFolder}). `what` names the flag and value.
 */
export async function checkWritableFile(file: string, what: string): Promise<void> {
  const info = await stat(file).catch(() => undefined);
  if (info?.isDirectory()) {
    throw new DmlError('E_IO', `Cannot write ${what}: ${path.resolve(file)} is a folder; expected a file path such as ${path.join(file, 'report.json')}`);
  }
  await checkWritableFolder(path.dirname(file), what);
}
