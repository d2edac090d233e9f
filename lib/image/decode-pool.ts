/**
 * @file Parallel image decoding in child processes: {@link ImageDecodePool.loadBatch} gives exactly the
 * batch {@link loadImageBatch} gives for the eval transform (same `data` bytes, shape, `loaded`,
 * `failures`, and the same error), with the decoding spread over N forked processes.
 *
 * Why processes: sharp (libvips) decoding in worker *threads* of one process plateaus at 420-550 img/s
 * on a 16-core machine, while 16 child processes reach 1,677 img/s (docs/stack.md §9).
 *
 * How: the parent keeps a FIFO of batches and hands single images to the children, at most
 * {@link IMAGES_PER_WORKER} per child, to the least busy child, in index order, batch after batch. So
 * the children stay balanced whatever the image sizes, the first batch queued is the first done (a
 * caller can keep several batches queued as a prefetch), and a batch that stops (a bad image without
 * `skipBadImages`, an aborted signal) stops taking new images at once, as in {@link loadImageBatch}.
 * Both paths feed one {@link BatchCollector}, which owns the ordering, skipping and error rules.
 *
 * Hand-back: a child writes the eval transform's HWC uint8 crop into a slot of a file the pool made for
 * it ({@link makeSlotFile}: in /dev/shm where there is one and it has room, else the system's temporary
 * folder; its name removed as soon as the child has opened it, so nothing is left behind), replies with
 * a small message, and the parent reads the crop from the slot into one reused buffer and normalises
 * it with {@link toTensor}. Each
 * child has {@link IMAGES_PER_WORKER} slots, one per request it holds. Before (2026-11-29), the crop
 * travelled in the reply itself: each reply allocated a 147 KiB buffer in the parent (224x224 RGB),
 * and the garbage collection those allocations caused took about a third of the parent's CPU time
 * (perf, 2 cores, 2 children: docs/benchmarks.md).
 *
 * Errors: a child's DmlError is re-created in the parent as a DmlError with the same code and message
 * (other errors as plain Errors with the same message). A child that dies (a crash, kill -9) rejects
 * every batch it held images of with an E_IMAGE DmlError naming its pid and those images; the pool
 * goes on with the children left, and once none is left every call rejects. An aborted signal rejects
 * with E_CANCELLED, as {@link loadImageBatch} does.
 *
 * Lifetime: always {@link ImageDecodePool.close} the pool (try/finally). Children also exit when their
 * IPC channel closes and are killed when the parent process exits; while no batch is pending they
 * do not keep the parent's event loop alive.
 *
 * The child entry is `decode-worker.ts` beside this file when this module runs as TypeScript (tsx:
 * the specs, `tsx bin/dml.ts`; the children inherit `process.execArgv`, which carries the tsx
 * loader, less the flags meant for the parent alone), and `decode-worker.js` in the built `dist/`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ImageSource } from '../data/manifest.js';
import { DmlError, invalidParameterError } from '../errors.js';
import { BatchCollector, batchCancelledError, type BatchArray, type ImageBatch } from './batch-collector.js';
import type { DecodeReply, DecodeRequest, DecodeWorkerConfig } from './decode-worker.js';
import { describeImageSource } from './decode.js';
import type { Preprocessing } from './preprocessing.js';
import { validatePreprocessing } from './validate.js';
import { checkPositiveInteger } from '../util/check.js';

/**
 * Images a child holds at once: it decodes `DECODES_AT_ONCE` of them (decode-worker.ts) and queues the rest,
 * so that it never waits for the parent between images (the parent's main thread answers a reply only
 * after whatever it is doing: reading a crop, normalising, handing a batch to the model). Holding 2
 * and decoding both (until 2026-11-29) left the 2-core machine 4-5% idle; holding 4 and decoding 2
 * left it 2% idle and ran 5.5% faster (median of 8 alternating pairs, 2 children, 2,000 480x320 JPEGs;
 * holding 6: the same rate; decoding 4 at once: more CPU per image; docs/benchmarks.md).
 */
export const IMAGES_PER_WORKER = 4;

/** The usual number of children: one per core (`os.availableParallelism()`). */
export function defaultDecodeWorkers(): number {
  return os.availableParallelism();
}

/** Options of {@link ImageDecodePool.start}. */
export interface DecodePoolOptions {
  /** Child processes to start (a positive integer; one per core is the usual choice). */
  workers: number;
  /** The eval preprocessing every batch gets (as `loadImageBatch`'s `preprocessing`). */
  preprocessing: Preprocessing;
  /** Largest width x height an input may declare; decode.ts's default (40e6) when absent. */
  limitInputPixels?: number | undefined;
}

/** Options of {@link ImageDecodePool.loadBatch}. */
export interface DecodePoolBatchOptions<A extends BatchArray = Float32Array> {
  /** Leave bad images out and report them instead of throwing. Default false. */
  skipBadImages?: boolean | undefined;
  /** Cancels the batch: no new image starts, and the call rejects with E_CANCELLED. */
  signal?: AbortSignal | undefined;
  /**
   * Write the batch into this array (at least images x image size values), e.g. one reused batch after
   * batch: a Float32Array for normalised input, a Uint8Array for the crops' bytes (see {@link BatchArray}).
   */
  output?: A | undefined;
}

/** One pending batch. */
interface Job {
  sources: readonly ImageSource[];
  collector: BatchCollector<BatchArray>;
  signal: AbortSignal | undefined;
  /** Next index to hand out. */
  next: number;
  /** Images handed out and not answered yet. */
  inFlight: number;
  settled: boolean;
  resolve: (batch: ImageBatch<BatchArray>) => void;
  reject: (error: unknown) => void;
  onAbort: () => void;
}

/** One child process. */
interface Worker {
  child: ChildProcess;
  pid: number;
  ready: boolean;
  /** The child's slot file, open here; its name until removed (once the child has opened it). */
  slotFd: number;
  slotFile: string | undefined;
  /** Slots of the slot file no request holds. */
  freeSlots: number[];
  /** Request id -> the batch, index and slot it belongs to. */
  inFlight: Map<number, { job: Job; index: number; slot: number }>;
}

/** The child entry beside this module, with this module's extension (.ts under tsx, .js when built). */
function workerEntry(): string {
  const self = fileURLToPath(import.meta.url);
  return path.join(path.dirname(self), `decode-worker${path.extname(self)}`);
}

/**
 * Node flags of the parent that a child must not get: inline code (`-e`, `-p`; the child would run it
 * instead of its entry), `--input-type` (node refuses it with a file entry) and the inspector's (a
 * second inspector on the same port fails). Those in {@link FLAGS_WITH_VALUE} may take their value as
 * the next argument.
 */
const PARENT_ONLY_FLAGS = /^(-e|--eval|-p|--print|--input-type|--inspect|--inspect-brk|--inspect-wait|--inspect-port|--debug-port)(=|$)/;
const FLAGS_WITH_VALUE = new Set(['-e', '--eval', '-p', '--print', '--input-type', '--inspect-port', '--debug-port']);

/**
 * The child's node flags: the parent's (under TypeScript they carry the tsx loader; memory and
 * warning settings carry over too) without the {@link PARENT_ONLY_FLAGS}.
 */
function childExecArgv(): string[] {
  const kept: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!PARENT_ONLY_FLAGS.test(arg)) kept.push(arg);
    else if (FLAGS_WITH_VALUE.has(arg)) i++;
  }
  return kept;
}

/** Removes a slot file's name; it may be gone already (the system's cleaner), which is fine. */
function removeSlotFile(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Nothing to do: the file's space is freed once the last descriptor closes anyway.
  }
}

/** Where slot files may go, in order: shared memory where the system has it (Linux), then the temporary folder. */
export function slotFolders(): string[] {
  return [...(existsSync('/dev/shm') ? ['/dev/shm'] : []), os.tmpdir()];
}

/**
 * Makes a slot file of `bytes` bytes in the first of `folders` where it can be written whole (its pages
 * written once with zeros, so that a full /dev/shm, which is 64 MB in a Docker container by default,
 * fails here rather than in the middle of a run); returns its name and an open descriptor. Errors:
 * E_IMAGE naming every folder tried and why it failed.
 */
export function makeSlotFile(folders: readonly string[], bytes: number): { file: string; fd: number } {
  const failures: string[] = [];
  for (const folder of folders) {
    const file = path.join(folder, `dmlkit-decode-${process.pid}-${randomUUID()}`);
    let fd: number | undefined;
    try {
      fd = openSync(file, 'wx+', 0o600);
      const zeros = Buffer.alloc(bytes);
      for (let written = 0; written < bytes; ) written += writeSync(fd, zeros, written, bytes - written, written);
      return { file, fd };
    } catch (error) {
      if (fd !== undefined) {
        closeSync(fd);
        removeSlotFile(file);
      }
      failures.push(`${folder} (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  throw new DmlError('E_IMAGE', `Cannot make a ${bytes}-byte slot file for an image decode worker in ${failures.join(', nor in ')}`);
}

/** How a child ended, for messages. */
function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal !== null ? `killed by ${signal}` : `exited with code ${code}`;
}

/** Names of `names`, the first few, for a one-line message. */
function listNames(names: string[]): string {
  const shown = names.slice(0, 4).join(', ');
  return names.length > 4 ? `${shown} and ${names.length - 4} more` : shown;
}

/** Child processes that decode image batches (see the file comment). */
export class ImageDecodePool {
  readonly #config: Omit<DecodeWorkerConfig, 'slotFile'>;
  /** Where the parent reads a crop from a slot file (one at a time: reads are synchronous). */
  readonly #staging: Buffer;
  readonly #workers: Worker[] = [];
  readonly #queue: Job[] = [];
  #nextId = 0;
  #closing: Promise<void> | undefined;
  /** Why no child is left, once none is. */
  #lost: DmlError | undefined;
  /** Whether the children currently keep the event loop alive (only while a batch is pending). */
  #referenced = true;
  readonly #killAll = (): void => {
    for (const worker of this.#workers) {
      worker.child.kill('SIGKILL');
      if (worker.slotFile !== undefined) removeSlotFile(worker.slotFile);
    }
  };

  private constructor(config: Omit<DecodeWorkerConfig, 'slotFile'>) {
    this.#config = config;
    this.#staging = Buffer.allocUnsafe(config.slotBytes);
  }

  /**
   * Forks `options.workers` children and resolves once every one is ready to decode. Errors: E_ARG
   * for a bad option; E_IMAGE if a child cannot start (its own error is on stderr).
   */
  static async start(options: DecodePoolOptions): Promise<ImageDecodePool> {
    if (typeof options !== 'object' || options === null) throw invalidParameterError('options', 'an object', options);
    const { workers, preprocessing, limitInputPixels } = options;
    checkPositiveInteger('workers', workers);
    validatePreprocessing(preprocessing);
    if (limitInputPixels !== undefined && (!Number.isInteger(limitInputPixels) || limitInputPixels <= 0)) {
      throw invalidParameterError('limitInputPixels', 'a positive integer', limitInputPixels);
    }
    const slotBytes = preprocessing.height * preprocessing.width * preprocessing.channels;
    const pool = new ImageDecodePool({ preprocessing, limitInputPixels: limitInputPixels ?? null, slotBytes });
    process.on('exit', pool.#killAll);
    const started = await Promise.allSettled(Array.from({ length: workers }, () => pool.#startWorker()));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed !== undefined) {
      await pool.close();
      throw failed.reason;
    }
    pool.#updateReferences();
    return pool;
  }

  /** The preprocessing every batch gets. */
  get preprocessing(): Preprocessing {
    return this.#config.preprocessing;
  }

  /** Process ids of the children alive. */
  get pids(): number[] {
    return this.#workers.map((w) => w.pid);
  }

  /** Makes a child's slot file and forks the child; resolves when it is ready, rejects if it ends first. */
  #startWorker(): Promise<void> {
    let slotFile: string;
    let slotFd: number;
    try {
      ({ file: slotFile, fd: slotFd } = makeSlotFile(slotFolders(), IMAGES_PER_WORKER * this.#config.slotBytes));
    } catch (error) {
      return Promise.reject(error);
    }
    const config: DecodeWorkerConfig = { ...this.#config, slotFile };
    const child = fork(workerEntry(), [JSON.stringify(config)], {
      execArgv: childExecArgv(),
      serialization: 'advanced',
      // stdout carries the CLI's results: a child must never write there. Crash messages go to stderr.
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    const freeSlots = Array.from({ length: IMAGES_PER_WORKER }, (_, slot) => slot);
    const worker: Worker = { child, pid: child.pid ?? -1, ready: false, slotFd, slotFile, freeSlots, inFlight: new Map() };
    this.#workers.push(worker);
    const forgetSlotFile = (): void => {
      if (worker.slotFile !== undefined) removeSlotFile(worker.slotFile);
      worker.slotFile = undefined;
    };
    return new Promise<void>((resolve, reject) => {
      let ended = false;
      const onEnd = (how: string): void => {
        if (ended) return;
        ended = true;
        forgetSlotFile();
        closeSync(worker.slotFd);
        if (worker.ready) {
          this.#lose(worker, how);
        } else {
          this.#workers.splice(this.#workers.indexOf(worker), 1);
          reject(new DmlError('E_IMAGE', `Image decode worker (pid ${worker.pid}) ${how} before it was ready (its error, if any, is on stderr)`));
        }
      };
      child.on('message', (reply: DecodeReply) => {
        if (reply.type === 'ready') {
          // The child has the file open: its name is no longer needed.
          forgetSlotFile();
          worker.ready = true;
          resolve();
        } else {
          this.#onReply(worker, reply);
        }
      });
      child.on('exit', (code, signal) => onEnd(describeExit(code, signal)));
      // 'error' without 'exit': the fork itself failed (or a send failed; 'exit' then follows).
      child.on('error', (err) => {
        if (child.pid === undefined) onEnd(`could not start: ${err.message}`);
      });
    });
  }

  /** A decoded image or a failure came back. */
  #onReply(worker: Worker, reply: Exclude<DecodeReply, { type: 'ready' }>): void {
    const entry = worker.inFlight.get(reply.id);
    if (entry === undefined) return;
    worker.inFlight.delete(reply.id);
    const { job, index, slot } = entry;
    job.inFlight--;
    if (!job.settled) {
      if (reply.type === 'image') {
        try {
          job.collector.store(index, { data: this.#readSlot(worker, slot), width: reply.width, height: reply.height, channels: reply.channels as 1 | 3 });
        } catch (error) {
          job.collector.fail(index, error);
        }
      } else {
        job.collector.fail(index, reply.code === null ? new Error(reply.message) : new DmlError(reply.code, reply.message));
      }
    }
    worker.freeSlots.push(slot);
    this.#pump();
  }

  /** The crop in `worker`'s `slot`, read into the staging buffer (valid until the next read). */
  #readSlot(worker: Worker, slot: number): Buffer {
    const staging = this.#staging;
    const at = slot * staging.length;
    for (let read = 0; read < staging.length; ) {
      const n = readSync(worker.slotFd, staging, read, staging.length - read, at + read);
      if (n === 0) throw new DmlError('E_IMAGE', `Image decode worker (pid ${worker.pid}) left slot ${slot} of its slot file short (${read} of ${staging.length} bytes)`);
      read += n;
    }
    return staging;
  }

  /** A ready child ended: fail the batches it held images of; with no child left, every batch. */
  #lose(worker: Worker, how: string): void {
    this.#workers.splice(this.#workers.indexOf(worker), 1);
    if (this.#closing !== undefined) return;
    const byJob = new Map<Job, string[]>();
    for (const { job, index } of worker.inFlight.values()) {
      byJob.set(job, [...(byJob.get(job) ?? []), describeImageSource(job.sources[index] as ImageSource)]);
    }
    worker.inFlight.clear();
    for (const [job, names] of byJob) {
      this.#settle(job, { error: new DmlError('E_IMAGE', `Image decode worker (pid ${worker.pid}) ${how} while decoding ${listNames(names)}`) });
    }
    if (this.#workers.length === 0) {
      this.#lost = new DmlError('E_IMAGE', `No image decode worker is left: the last one (pid ${worker.pid}) ${how}`);
      for (const job of [...this.#queue]) this.#settle(job, { error: this.#lost });
    }
    this.#pump();
  }

  /**
   * Loads `sources` into one tensor, as `loadImageBatch(sources, preprocessing, { skipBadImages,
   * limitInputPixels })` does with the pool's preprocessing and pixel limit. Batches queue: the first
   * one loaded is the first one asked for.
   */
  loadBatch<A extends BatchArray = Float32Array>(sources: readonly ImageSource[], options: DecodePoolBatchOptions<A> = {}): Promise<ImageBatch<A>> {
    if (!Array.isArray(sources)) return Promise.reject(invalidParameterError('sources', 'an array of image sources', sources));
    const { skipBadImages = false, signal, output } = options;
    if (this.#closing !== undefined) return Promise.reject(new DmlError('E_CANCELLED', 'The image decode pool is closed'));
    if (this.#lost !== undefined) return Promise.reject(this.#lost);
    if (signal?.aborted) return Promise.reject(batchCancelledError(0, sources.length));
    let collector: BatchCollector<BatchArray>;
    try {
      collector = new BatchCollector<BatchArray>(sources, this.#config.preprocessing, skipBadImages, output);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<ImageBatch<A>>((resolve, reject) => {
      const job: Job = {
        sources,
        collector,
        signal,
        next: 0,
        inFlight: 0,
        settled: false,
        // The collector writes into the caller's `output`, so its batch holds that array's type.
        resolve: (batch) => resolve(batch as ImageBatch<A>),
        reject,
        onAbort: () => this.#pump(),
      };
      signal?.addEventListener('abort', job.onAbort, { once: true });
      this.#queue.push(job);
      this.#pump();
    });
  }

  /** Whether `job` may hand out another image. */
  static #canStart(job: Job): boolean {
    return !job.settled && !job.collector.stopped && !job.signal?.aborted && job.next < job.sources.length;
  }

  /** Settles the batches that are complete, then hands images to children with room, oldest batch first. */
  #pump(): void {
    for (const job of [...this.#queue]) {
      if (job.inFlight > 0 || ImageDecodePool.#canStart(job)) continue;
      try {
        this.#settle(job, { batch: job.collector.finish(job.signal) });
      } catch (error) {
        this.#settle(job, { error });
      }
    }
    for (;;) {
      const job = this.#queue.find((j) => ImageDecodePool.#canStart(j));
      const idle = this.#workers.filter((w) => w.ready && w.child.connected && w.inFlight.size < IMAGES_PER_WORKER);
      if (job === undefined || idle.length === 0) break;
      const worker = idle.reduce((best, w) => (w.inFlight.size < best.inFlight.size ? w : best));
      const index = job.next++;
      job.inFlight++;
      const slot = worker.freeSlots.pop() as number;
      const request: DecodeRequest = { id: this.#nextId++, source: job.sources[index] as ImageSource, slot };
      worker.inFlight.set(request.id, { job, index, slot });
      worker.child.send(request);
    }
    this.#updateReferences();
  }

  /** Resolves or rejects `job` once, and takes it out of the queue. */
  #settle(job: Job, outcome: { batch: ImageBatch<BatchArray> } | { error: unknown }): void {
    if (job.settled) return;
    job.settled = true;
    job.signal?.removeEventListener('abort', job.onAbort);
    this.#queue.splice(this.#queue.indexOf(job), 1);
    if ('batch' in outcome) job.resolve(outcome.batch);
    else job.reject(outcome.error);
  }

  /** Lets the children keep the event loop alive only while a batch is pending. */
  #updateReferences(): void {
    const busy = this.#queue.length > 0;
    if (busy === this.#referenced) return;
    this.#referenced = busy;
    for (const { child } of this.#workers) {
      if (busy) {
        child.ref();
        child.channel?.ref();
      } else {
        child.unref();
        child.channel?.unref();
      }
    }
  }

  /**
   * Stops every child and resolves once all have exited. Pending batches reject with E_CANCELLED.
   * Idempotent.
   */
  close(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    const closed = new DmlError('E_CANCELLED', 'The image decode pool was closed before the batch was loaded');
    this.#closing = (async () => {
      for (const job of [...this.#queue]) this.#settle(job, { error: closed });
      const exits = this.#workers.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) resolve();
            else child.once('exit', () => resolve());
          }),
      );
      for (const { child } of this.#workers) {
        // Referenced again, or an idle process would exit before the children's 'exit' events.
        child.ref();
        child.kill('SIGTERM');
      }
      await Promise.all(exits);
      process.off('exit', this.#killAll);
    })();
    return this.#closing;
  }
}
