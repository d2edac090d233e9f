/**
 * @file The run folder of `dml train` while a run writes it: one writer at a time, and no half-started
 * run left behind.
 *
 * - **One writer.** A run takes the folder's write lock (`<out>/lock`, util/folder-lock.ts, as an index
 *   folder's) before it reads or writes anything there, and releases it when it ends, however it ends;
 *   a second `dml train` (or `--resume`) on the folder is refused, naming the process that holds it. The
 *   lock of a run killed with kill -9 is taken over by the next run (its process is gone).
 * - **A fresh start that fails before its first step leaves no run behind** (a setting that overflows at
 *   the untrained model's validation, a cancelled start): the files it wrote go, and the folder too when
 *   it made it, so the same command can run again without `--overwrite`. A resume removes nothing
 *   but a folder it made itself (trainer.ts: a refused or failed resume leaves the folder as it was).
 */
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { DmlError } from '../errors.js';
import { fileOnFolderPath } from '../util/atomic-write.js';
import { acquireFolderLock, releaseFolderLock } from '../util/folder-lock.js';

/** What a run writes into its folder (everything a failed fresh start takes away again). */
const RUN_FILES = ['config.json', 'log.jsonl', 'checkpoints', 'scatter', 'report.json', 'report.html'];

/** A locked run folder (see the file comment). */
export class RunFolder {
  /** Whether a fresh start has begun to write its run into the folder (before that, a failure removes nothing of it). */
  written = false;
  /** Whether the run has begun its first step: from then on a failure (a divergence) keeps what it wrote. */
  started = false;

  private constructor(
    /** The folder (absolute). */
    readonly out: string,
    private readonly lockFile: string,
    /** The topmost folder this run created to make `out` (undefined when `out` existed). */
    private readonly created: string | undefined,
  ) {}

  /**
   * Makes folder `out` when missing and takes its write lock. Errors: E_ARG when `out` (or a folder
   * above it) is a file; E_IO when another process holds the lock or the folder cannot be made.
   */
  static async lock(out: string): Promise<RunFolder> {
    let created: string | undefined;
    try {
      created = await mkdir(out, { recursive: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' || code === 'ENOTDIR') {
        const file = await fileOnFolderPath(out);
        throw new DmlError('E_ARG', `Cannot use ${out} as the run folder (out, --out): ${file === out ? 'it is' : `${file} is`} a file, not a folder`);
      }
      throw new DmlError('E_IO', `Cannot create the run folder ${out}: ${(err as Error).message}`, { cause: err });
    }
    try {
      return new RunFolder(out, await acquireFolderLock(out, `Run folder ${out}`), created);
    } catch (err) {
      if (created !== undefined) await rm(created, { recursive: true, force: true });
      throw err;
    }
  }

  /**
   * After a run failed before its first step (not {@link started}): removes the run files a fresh
   * start {@link written} (with `--overwrite`, what is left of the run it replaced goes too), and the
   * folders this run made (a fresh start or a resume of a folder that did not exist).
   */
  async discardUnstarted(): Promise<void> {
    if (this.started) return;
    if (this.written) for (const name of RUN_FILES) await rm(path.join(this.out, name), { recursive: true, force: true });
    if (this.created !== undefined) {
      await releaseFolderLock(this.lockFile);
      await rm(this.created, { recursive: true, force: true });
    }
  }

  /** Releases the lock (idempotent). */
  async release(): Promise<void> {
    await releaseFolderLock(this.lockFile);
  }
}
