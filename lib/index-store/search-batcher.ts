/**
 * @file Coalescing of concurrent searches, for the LanceDB store (lance-store.ts): at most
 * `maxInFlight` batches run at once; a search submitted while every slot is busy waits, and when a
 * slot frees, the oldest waiting search runs together with the later waiting searches of the same key,
 * in the order they came, up to `maxBatch` of them. A search submitted while a slot is free runs at
 * once, alone, so a lone client waits for nothing. A search without a key always runs alone.
 *
 * Why: a LanceDB query costs a few milliseconds of fixed work (planning, its tokio tasks, the Arrow
 * result crossing into JavaScript) besides the search itself, and searches that run side by side on
 * few cores mostly contend for them. One query for several vectors shares that fixed work (the
 * measurements are in docs/index-stores.md).
 */
import { checkPositiveInteger } from '../util/check.js';

/** Limits of a {@link SearchBatcher}. */
export interface SearchBatcherOptions {
  /** Batches running at once. */
  maxInFlight: number;
  /** Searches per batch at most. */
  maxBatch: number;
}

/** Runs one batch: the queries of one key (or one query without a key), resolving to one result per query, in order. */
export type BatchRunner<Q, R> = (key: string | undefined, queries: Q[]) => Promise<R[]>;

/** A search waiting for a slot. */
interface Waiting<Q, R> {
  key: string | undefined;
  query: Q;
  resolve: (result: R) => void;
  reject: (reason: unknown) => void;
}

/** Coalesces concurrent searches into batches (see the file comment). */
export class SearchBatcher<Q, R> {
  readonly #run: BatchRunner<Q, R>;
  readonly #maxInFlight: number;
  readonly #maxBatch: number;
  #waiting: Array<Waiting<Q, R>> = [];
  #inFlight = 0;

  /** A batcher that runs batches with `run`. Errors: E_ARG for a limit that is not a positive integer. */
  constructor(run: BatchRunner<Q, R>, options: SearchBatcherOptions) {
    this.#run = run;
    this.#maxInFlight = checkPositiveInteger('maxInFlight', options.maxInFlight);
    this.#maxBatch = checkPositiveInteger('maxBatch', options.maxBatch);
  }

  /**
   * Submits one search: it joins the searches of the same `key` waiting for a slot (`undefined`: it
   * runs alone). Resolves to its own result; rejects with the error of its batch.
   */
  submit(key: string | undefined, query: Q): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ key, query, resolve, reject });
      this.#start();
    });
  }

  /** Starts batches while a slot is free and searches wait. */
  #start(): void {
    while (this.#inFlight < this.#maxInFlight && this.#waiting.length > 0) {
      const first = this.#waiting[0] as Waiting<Q, R>;
      const batch: Array<Waiting<Q, R>> = [];
      const rest: Array<Waiting<Q, R>> = [];
      for (const entry of this.#waiting) {
        const joins = entry === first || (first.key !== undefined && entry.key === first.key && batch.length < this.#maxBatch);
        (joins ? batch : rest).push(entry);
      }
      this.#waiting = rest;
      this.#inFlight++;
      void this.#runBatch(first.key, batch);
    }
  }

  /** Runs one batch, settles its searches and frees its slot. */
  async #runBatch(key: string | undefined, batch: Array<Waiting<Q, R>>): Promise<void> {
    try {
      const results = await this.#run(key, batch.map((entry) => entry.query));
      batch.forEach((entry, i) => entry.resolve(results[i] as R));
    } catch (err) {
      for (const entry of batch) entry.reject(err);
    } finally {
      this.#inFlight--;
      this.#start();
    }
  }
}
