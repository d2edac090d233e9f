/**
 * @file Writing output files without harming what is already there.
 *
 * - A **regular file** (or a path that does not exist yet) is written atomically: to a temporary file
 *   beside the target, fsync, then rename, so a reader (or a crash) sees either the old file or the new
 *   one, never a partial one.
 * - A **symbolic link** is followed (through chains, relative or absolute, dangling or not) and its
 *   final target is written by these same rules; the link itself stays a link.
 * - A **FIFO or character device** (`/dev/null`, `/dev/stdout`, a terminal, a named pipe) is written in
 *   place, streamed into it, never replaced by a regular file; its errors (`/dev/full`: ENOSPC) are
 *   reported like any other failed write.
 * - A folder, a block device or a socket is refused with one line.
 */
import { randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import { lstat, mkdir, open, readlink, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { DmlError } from '../errors.js';

/** Links followed before a path is judged a loop (Linux's own limit). */
const MAX_LINK_HOPS = 40;

/** How a write reaches its path: replace a regular file atomically, or stream into a special file. */
type WriteTarget = { kind: 'replace' | 'in-place'; file: string };

/** What an existing non-regular file is, for messages. */
function describeFileType(info: Stats): string {
  if (info.isDirectory()) return 'a folder';
  if (info.isBlockDevice()) return 'a block device';
  if (info.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * Where and how a write to `filePath` goes (see the file comment). Links of `/proc/<pid>/fd/<n>` that
 * name a pipe or socket (`pipe:[123]`) rather than a path are opened through the link itself.
 * Errors: E_IO for a folder, block device, socket, or a loop of links.
 */
async function resolveWriteTarget(filePath: string): Promise<WriteTarget> {
  let current = path.resolve(filePath);
  for (let hops = 0; hops <= MAX_LINK_HOPS; hops++) {
    let info: Stats;
    try {
      info = await lstat(current);
    } catch (err) {
      // Missing, or under a path part that is not a folder: a new file, whose folder is then made (or refused).
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'replace', file: current };
      throw new DmlError('E_IO', `Cannot write ${filePath}: ${(err as Error).message}`, { cause: err });
    }
    if (info.isSymbolicLink()) {
      const link = await readlink(current);
      if (/^[a-z_]+:\[?[^/]*\]?$/.test(link)) return { kind: 'in-place', file: current };
      current = path.resolve(path.dirname(current), link);
      continue;
    }
    if (info.isFile()) return { kind: 'replace', file: current };
    if (info.isFIFO() || info.isCharacterDevice()) return { kind: 'in-place', file: current };
    throw new DmlError('E_IO', `Cannot write ${filePath}: ${current} is ${describeFileType(info)} (expected a regular file, a FIFO or a character device)`);
  }
  throw new DmlError('E_IO', `Cannot write ${filePath}: more than ${MAX_LINK_HOPS} symbolic links to follow (a loop?)`);
}

/**
 * The first path on the way down to folder `dir` (from the root) that exists and is not a folder: what
 * stops `mkdir -p dir` (EEXIST, ENOTDIR); `dir` itself when there is none.
 */
export async function fileOnFolderPath(dir: string): Promise<string> {
  const parts = path.resolve(dir).split(path.sep);
  for (let i = 2; i <= parts.length; i++) {
    const at = parts.slice(0, i).join(path.sep);
    const info = await stat(at).catch(() => undefined);
    if (info !== undefined && !info.isDirectory()) return at;
  }
  return dir;
}

/** Writes every chunk of `data` through `handle`. */
async function writeAll(handle: Awaited<ReturnType<typeof open>>, data: string | Uint8Array | Iterable<Uint8Array>): Promise<void> {
  if (typeof data === 'string' || data instanceof Uint8Array) {
    await handle.writeFile(data);
  } else {
    for (const chunk of data) await handle.write(chunk);
  }
}

/**
 * Writes `data` (or the chunks of an iterable) to `filePath` by the rules of the file comment: a regular
 * file atomically (its folder created when missing; on failure the temporary file is removed and the
 * target left as it was), a link's target by the same rules, a FIFO or character device in place.
 */
export async function writeFileAtomic(filePath: string, data: string | Uint8Array | Iterable<Uint8Array>): Promise<void> {
  const target = await resolveWriteTarget(filePath);
  if (target.kind === 'in-place') {
    let handle;
    try {
      handle = await open(target.file, 'w');
      await writeAll(handle, data);
      await handle.close();
    } catch (err) {
      if (handle) await handle.close().catch(() => undefined);
      throw new DmlError('E_IO', `Cannot write ${filePath}: ${(err as Error).message}`, { cause: err });
    }
    return;
  }
  const dir = path.dirname(target.file);
  const tmp = path.join(dir, `.${path.basename(target.file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'EEXIST' || code === 'ENOTDIR' ? `${await fileOnFolderPath(dir)} is a file, not a folder` : (err as Error).message;
    throw new DmlError('E_IO', `Cannot create output folder ${dir}: ${reason}`, { cause: err });
  }
  let handle;
  try {
    handle = await open(tmp, 'wx');
    await writeAll(handle, data);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(tmp, target.file);
  } catch (err) {
    if (handle) await handle.close().catch(() => undefined);
    await rm(tmp, { force: true }).catch(() => undefined);
    throw new DmlError('E_IO', `Cannot write ${filePath}: ${(err as Error).message}`, { cause: err });
  }
}
