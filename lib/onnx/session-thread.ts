/**
 * @file {@link SessionThread}: an onnxruntime session on a worker thread of its own, so the thread that
 * uses it keeps running during inference (onnxruntime-node's `run()` blocks its thread; see
 * session-runner.ts). The embedder runs its model this way by default: while the GPU or the CPU EP
 * infers one batch, the main thread goes on receiving decoded images from the decode processes.
 *
 * Inputs are copied to the thread (structured clone) unless the caller hands their buffers over
 * (`transferInputs`; the answer hands them back); outputs come back as copies. Runs are answered in order. A thread that dies
 * rejects the runs it held and every later one with an E_MODEL error naming the model. While no run is
 * pending the thread does not keep the process alive, as an in-process session would not.
 *
 * The entry is `session-thread-worker` beside this file, started by {@link workerThreadEntry}.
 */
import { Worker } from 'node:worker_threads';
import { DmlError } from '../errors.js';
import { workerThreadEntry } from '../util/worker-entry.js';
import type { ExecutionProviderName, ProviderAttempt } from './devices.js';
import type { CreateSessionOptions, IoDescription } from './session.js';
import { transferableBuffers, type RunInputs } from './feeds.js';
import type { RunOptions, RunResult, SessionRunner } from './session-runner.js';
import type { InputStage } from './staged-session.js';
import type { SessionThreadData, SessionThreadReply, SessionThreadRequest } from './session-thread-worker.js';

/** A request waiting for its answer: a run's result, or nothing for an input stage. */
interface PendingRun {
  resolve: (result: RunResult | undefined) => void;
  reject: (error: Error) => void;
}

/** An onnxruntime session on its own worker thread (see the file comment). */
export class SessionThread implements SessionRunner {
  readonly provider: ExecutionProviderName;
  readonly attempts: ProviderAttempt[];
  readonly io: IoDescription;
  readonly #worker: Worker;
  readonly #name: string;
  readonly #pending = new Map<number, PendingRun>();
  #nextId = 0;
  /** Why no run can be answered any more (the thread ended or was released). */
  #ended: Error | undefined;
  #exited: Promise<void>;

  private constructor(worker: Worker, name: string, ready: Extract<SessionThreadReply, { type: 'ready' }>, exited: Promise<void>) {
    this.#worker = worker;
    this.#name = name;
    this.provider = ready.provider;
    this.attempts = ready.attempts;
    this.io = ready.io;
    this.#exited = exited;
    worker.on('message', (reply: SessionThreadReply) => this.#onReply(reply));
    worker.unref();
  }

  /**
   * Starts the thread and creates the session there from `model` (a path or the model's bytes), as
   * {@link createSession} does (same errors, same codes and messages); resolves once the model is loaded.
   */
  static create(model: string | Uint8Array, options: CreateSessionOptions): Promise<SessionThread> {
    const name = options.name ?? 'model';
    const { filename, options: workerOptions } = workerThreadEntry(import.meta.url, 'session-thread-worker');
    const data: SessionThreadData = { model, options };
    const worker = new Worker(filename, { ...workerOptions, workerData: data });
    let failure: Error | undefined;
    let thread: SessionThread | undefined;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    return new Promise<SessionThread>((resolve, reject) => {
      worker.once('message', (reply: SessionThreadReply) => {
        if (reply.type === 'ready') {
          thread = new SessionThread(worker, name, reply, exited);
          resolve(thread);
        } else if (reply.type === 'fatal') {
          failure = reply.code === null ? new Error(reply.message) : new DmlError(reply.code, reply.message);
        }
      });
      worker.on('error', (err) => {
        failure ??= new DmlError('E_MODEL', `${name}: the inference thread failed: ${err.message}`, { cause: err });
      });
      worker.on('exit', (code) => {
        if (thread === undefined) {
          reject(failure ?? new DmlError('E_MODEL', `${name}: the inference thread stopped (exit code ${code}) before the model was loaded`));
        } else {
          thread.#end(failure ?? new DmlError('E_MODEL', `${name}: the inference thread stopped (exit code ${code})`));
        }
      });
    });
  }

  run(inputs: RunInputs, outputNames: string[], options: RunOptions = {}): Promise<RunResult> {
    const transfer = options.transferInputs === true ? transferableBuffers(inputs) : [];
    return this.#request((id) => ({ type: 'run', id, inputs, outputNames }), transfer) as Promise<RunResult>;
  }

  async addInputStage(stage: InputStage): Promise<void> {
    await this.#request((id) => ({ type: 'stage', id, stage }), []);
  }

  /** Sends the request `make(id)` and answers its reply (runs and stages are answered in order). */
  #request(make: (id: number) => SessionThreadRequest, transfer: ArrayBuffer[]): Promise<RunResult | undefined> {
    if (this.#ended !== undefined) return Promise.reject(this.#ended);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      if (this.#pending.size === 1) this.#worker.ref();
      this.#worker.postMessage(make(id), transfer);
    });
  }

  async release(): Promise<void> {
    if (this.#ended === undefined) {
      this.#end(new DmlError('E_MODEL', `${this.#name}: the session was released`));
      this.#worker.ref();
      this.#worker.postMessage({ type: 'release' } satisfies SessionThreadRequest);
    }
    await this.#exited;
  }

  #onReply(reply: SessionThreadReply): void {
    if (reply.type !== 'result' && reply.type !== 'staged' && reply.type !== 'error') return;
    const pending = this.#pending.get(reply.id);
    if (pending === undefined) return;
    this.#pending.delete(reply.id);
    if (this.#pending.size === 0) this.#worker.unref();
    if (reply.type === 'result') pending.resolve({ outputs: reply.outputs, inputs: reply.inputs });
    else if (reply.type === 'staged') pending.resolve(undefined);
    else pending.reject(new Error(reply.message));
  }

  /** No run is answered any more: reject the pending ones with `error`, and later ones too. */
  #end(error: Error): void {
    this.#ended ??= error;
    for (const pending of this.#pending.values()) pending.reject(this.#ended);
    this.#pending.clear();
  }
}
