/**
 * @file The journal of a search index: the writes since the current snapshot generation G, in
 * `journal-G.jsonl`, one JSON line per acknowledged write (a batch of adds or removals).
 *
 * A line is appended and fsynced before the write is acknowledged, so an acknowledged write survives
 * kill -9; a line cut short by a crash was never acknowledged: it is ignored when replaying and cut off
 * before the next append. One line holds a whole batch, so a batch is applied entirely or not at all.
 */
import { stat, open } from 'node:fs/promises';
import { readRegular } from '../util/regular-file.js';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { DmlError } from '../errors.js';
import { ioError, syncPath, type JournalOp } from './layout.js';

/** The journal of one generation of an index folder. */
export class Journal {
  readonly #dir: string;
  #generation: number;
  #lines = 0;
  /** Bytes of the journal that hold complete lines; anything after is a torn tail. */
  #bytes = 0;

  /** The journal of generation `generation` in index folder `dir` (absolute). */
  constructor(dir: string, generation: number) {
    this.#dir = dir;
    this.#generation = generation;
  }

  /** The journal file of the current generation. */
  get path(): string {
    return path.join(this.#dir, `journal-${this.#generation}.jsonl`);
  }

  /** Complete lines in the journal. */
  get lines(): number {
    return this.#lines;
  }

  /**
   * Hands the changes of every complete line to `apply`, in order, with where they come from for
   * messages; a torn last line is ignored. Errors: E_DATASET for a corrupt complete line; E_IO.
   */
  async replay(apply: (ops: JournalOp[], where: string) => void): Promise<void> {
    let bytes: Buffer;
    try {
      bytes = await readRegular(this.path, 'journal');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw ioError(`Cannot read ${this.path}`, err);
    }
    let start = 0;
    let line = 0;
    for (let end = bytes.indexOf(10); end >= 0; start = end + 1, end = bytes.indexOf(10, start)) {
      line++;
      const where = `${this.path} line ${line}`;
      let entry: { ops?: unknown };
      try {
        entry = JSON.parse(bytes.subarray(start, end).toString('utf8')) as { ops?: unknown };
      } catch (err) {
        throw new DmlError('E_DATASET', `${where} is corrupt: ${(err as Error).message}`, { cause: err });
      }
      if (!Array.isArray(entry?.ops)) throw new DmlError('E_DATASET', `${where} is corrupt: no list of changes`);
      apply(entry.ops as JournalOp[], where);
      this.#lines++;
    }
    this.#bytes = start;
  }

  /**
   * Appends one line holding `ops` and fsyncs it (and the folder, when the file is new). The file is
   * opened per append (an open costs little next to the fsync), and a torn tail after the last
   * complete line (a crash, or a failed earlier append) is cut off first. Errors: E_IO.
   */
  async append(ops: JournalOp[]): Promise<void> {
    const line = Buffer.from(`${JSON.stringify({ ops, at: new Date().toISOString() })}\n`);
    let handle: FileHandle | undefined;
    try {
      const fresh = this.#bytes === 0 && !(await stat(this.path).catch(() => undefined));
      handle = await open(this.path, 'a');
      if ((await handle.stat()).size !== this.#bytes) await handle.truncate(this.#bytes);
      await handle.write(line);
      await handle.datasync();
      if (fresh) await syncPath(this.#dir);
    } catch (err) {
      throw ioError(`Cannot write ${this.path}`, err);
    } finally {
      await handle?.close().catch(() => undefined);
    }
    this.#bytes += line.length;
    this.#lines++;
  }

  /** Moves on to the (empty) journal of `generation`, once a snapshot of it has been committed. */
  startGeneration(generation: number): void {
    this.#generation = generation;
    this.#lines = 0;
    this.#bytes = 0;
  }
}
