/**
 * @file Atomic file writes: write to a temporary file beside the target, fsync, then rename, so a
 * reader (or a crash) sees either the old file or the new one, never a partial one.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { DmlError } from '../errors.js';

/**
 * Writes `data` (or the chunks of an iterable) to `filePath` atomically. Creates the parent folder.
 * On failure the temporary file is removed and the target is left as it was.
 */
export async function writeFileAtomic(
  filePath: string,
  data: string | Uint8Array | Iterable<Uint8Array>,
): Promise<void> {
  const dir = path.dirname(filePath);
  const tmp = path.join(dir, `.${path.basename(filePath)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    throw new DmlError('E_IO', `Cannot create output folder ${dir}: ${(err as Error).message}`, { cause: err });
  }
  let handle;
  try {
    handle = await open(tmp, 'wx');
    if (typeof data === 'string' || data instanceof Uint8Array) {
      await handle.writeFile(data);
    } else {
      for (const chunk of data) await handle.write(chunk);
    }
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(tmp, filePath);
  } catch (err) {
    if (handle) await handle.close().catch(() => undefined);
    await rm(tmp, { force: true }).catch(() => undefined);
    throw new DmlError('E_IO', `Cannot write ${filePath}: ${(err as Error).message}`, { cause: err });
  }
}
