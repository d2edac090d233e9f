/**
 * @file A pool of inference worker threads ({@link InferenceWorkerData}, `inference-worker.ts`) that
 * turns encoded images into embeddings off the main thread, so the HTTP server's event loop never
 * waits for onnxruntime.
 *
 * Each request goes to the ready worker with the fewest requests in flight. The pool bounds the
 * requests in flight (`maxPending`); beyond it {@link InferenceWorkerPool.embed} refuses at once with
 * an {@link HttpError} 503 instead of queueing without limit. A worker that dies fails its requests
 * (E_MODEL) and is replaced.
 *
 * The worker entry is `inference-worker` beside this file, started by {@link workerThreadEntry}.
 */
import { Worker } from 'node:worker_threads';
import { DmlError } from '../errors.js';
import type { Preprocessing } from '../image/preprocessing.js';
import type { TokenPooling } from '../embed/model-signature.js';
import { DEFAULT_DEVICE, type DeviceChoice, type ProviderChoice } from '../onnx/devices.js';
import { workerThreadEntry } from '../util/worker-entry.js';
import { HttpError } from './http-errors.js';
import type { InferenceWorkerData, WorkerReply, WorkerRequest } from './inference-worker.js';
import { checkPositiveInteger } from '../util/check.js';

/** Options of {@link InferenceWorkerPool.start}. */
export interface WorkerPoolOptions {
  modelPath: string;
  /** SHA-256 the model must have (the one recorded in the index). */
  modelSha256: string;
  preprocessing: Preprocessing;
  outputName: string;
  /** How a token output is pooled; absent for an [N, D] output. */
  pooling?: TokenPooling;
  /** Worker threads, each with its own inference session. Default 1. */
  workers?: number;
  /** onnxruntime intra-op threads per worker (default: onnxruntime's choice). */
  threads?: number | undefined;
  /** Execution provider choice. Default `auto`. */
  device?: DeviceChoice;
  /** Images per inference call when requests queue up. Default 16. */
  batchSize?: number;
  /** Largest width x height of an upload; decode.ts's default when absent. */
  limitInputPixels?: number | undefined;
  /** Requests in flight over all workers before new ones are refused. Default 256. */
  maxPending?: number;
  /** Told about a worker that died, and whether its replacement started. */
  onWorkerError?: (error: DmlError) => void;
}

interface Pending {
  resolve: (vector: Float32Array) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  pending: Map<number, Pending>;
}

/** Inference worker threads behind one `embed` call (see the file comment). */
export class InferenceWorkerPool {
  readonly #data: InferenceWorkerData;
  readonly #maxPending: number;
  readonly #onWorkerError: ((error: DmlError) => void) | undefined;
  readonly #slots: Slot[] = [];
  /** Every embed promise not yet settled, for {@link close}. */
  readonly #inFlight = new Set<Promise<unknown>>();
  #nextId = 0;
  #closing = false;
  #provider: ProviderChoice | undefined;

  private constructor(data: InferenceWorkerData, maxPending: number, onWorkerError: ((error: DmlError) => void) | undefined) {
    this.#data = data;
    this.#maxPending = maxPending;
    this.#onWorkerError = onWorkerError;
  }

  /** Starts the workers and waits until each has loaded the model. Errors: the first worker's load error. */
  static async start(options: WorkerPoolOptions): Promise<InferenceWorkerPool> {
    const count = options.workers ?? 1;
    const maxPending = options.maxPending ?? 256;
    const batchSize = options.batchSize ?? 16;
    for (const [name, value] of [['workers', count], ['maxPending', maxPending], ['batchSize', batchSize]] as const) {
      checkPositiveInteger(name, value);
    }
    const pool = new InferenceWorkerPool(
      {
        modelPath: options.modelPath,
        modelSha256: options.modelSha256,
        preprocessing: options.preprocessing,
        outputName: options.outputName,
        ...(options.pooling !== undefined ? { pooling: options.pooling } : {}),
        device: options.device ?? DEFAULT_DEVICE,
        threads: options.threads,
        batchSize,
        limitInputPixels: options.limitInputPixels,
      },
      maxPending,
      options.onWorkerError,
    );
    const started = await Promise.allSettled(Array.from({ length: count }, () => pool.#startWorker()));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await pool.close();
      throw failed.reason;
    }
    return pool;
  }

  /** Starts one worker and resolves once it is ready; it then takes requests. */
  #startWorker(): Promise<void> {
    const { filename, options } = workerThreadEntry(import.meta.url, 'inference-worker');
    const worker = new Worker(filename, { ...options, workerData: this.#data });
    const slot: Slot = { worker, ready: false, pending: new Map() };
    this.#slots.push(slot);
    return new Promise<void>((resolve, reject) => {
      let failure: DmlError | undefined;
      worker.on('message', (reply: WorkerReply) => {
        if (reply.type === 'ready') {
          slot.ready = true;
          this.#provider ??= { provider: reply.provider, attempts: reply.attempts };
          resolve();
        } else if (reply.type === 'fatal') {
          failure = new DmlError(reply.code, reply.message);
        } else {
          const pending = slot.pending.get(reply.id);
          slot.pending.delete(reply.id);
          if (reply.type === 'vector') pending?.resolve(reply.vector);
          else pending?.reject(new DmlError(reply.code, reply.message));
        }
      });
      worker.on('error', (err) => {
        failure ??= new DmlError('E_MODEL', `Inference worker failed: ${err.message}`, { cause: err });
      });
      worker.on('exit', (code) => {
        this.#slots.splice(this.#slots.indexOf(slot), 1);
        const error = failure ?? new DmlError('E_MODEL', `Inference worker stopped (exit code ${code})`);
        for (const pending of slot.pending.values()) pending.reject(error);
        if (!slot.ready) {
          reject(error);
        } else if (!this.#closing) {
          // A worker that had loaded the model died: replace it.
          this.#onWorkerError?.(error);
          this.#startWorker().catch((err: DmlError) => this.#onWorkerError?.(err));
        }
      });
    });
  }

  /** The execution provider the first ready worker got, with the providers tried before it. */
  get provider(): ProviderChoice | undefined {
    return this.#provider;
  }

  /** Worker threads that are ready. */
  get size(): number {
    return this.#slots.filter((s) => s.ready).length;
  }

  /** Requests in flight over all workers. */
  get pending(): number {
    return this.#slots.reduce((sum, s) => sum + s.pending.size, 0);
  }

  /**
   * The L2-normalised embedding of one encoded image. Errors: the worker's DmlError (E_IMAGE for a bad
   * image), HttpError 503 (E_CANCELLED) when the pool is full, closing or has no ready worker.
   */
  embed(bytes: Uint8Array, name: string): Promise<Float32Array> {
    if (this.#closing) return Promise.reject(new HttpError(503, 'E_CANCELLED', 'The server is shutting down'));
    const ready = this.#slots.filter((s) => s.ready);
    if (ready.length === 0) return Promise.reject(new HttpError(503, 'E_CANCELLED', 'No inference worker is running; retry later'));
    if (this.pending >= this.#maxPending) {
      return Promise.reject(new HttpError(503, 'E_CANCELLED', `Server busy: ${this.pending} images are being embedded (at most ${this.#maxPending}); retry later`));
    }
    const slot = ready.reduce((best, s) => (s.pending.size < best.pending.size ? s : best));
    const id = this.#nextId++;
    const result = new Promise<Float32Array>((resolve, reject) => {
      slot.pending.set(id, { resolve, reject });
      const request: WorkerRequest = { id, bytes, name };
      slot.worker.postMessage(request);
    });
    const settled: Promise<unknown> = result.then(
      (): boolean => this.#inFlight.delete(settled),
      (): boolean => this.#inFlight.delete(settled),
    );
    this.#inFlight.add(settled);
    return result;
  }

  /** Lets requests in flight finish, then stops the workers. Idempotent. */
  async close(): Promise<void> {
    this.#closing = true;
    await Promise.all(this.#inFlight);
    await Promise.all([...this.#slots].map((s) => s.worker.terminate()));
  }
}
