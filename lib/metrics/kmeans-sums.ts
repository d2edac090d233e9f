/**
 * @file Per-cluster row sums of a k-means assignment (step 1 of a Lloyd iteration), the one part of an
 * iteration that is not GEMM work: {@link clusterSums} on this thread, or a {@link ClusterSumThreads}
 * pool that splits the columns over worker threads.
 *
 * Each thread owns a contiguous range of columns and adds, for every row in order, that row's slice
 * into its cluster's slice: every sum element gets the same additions in the same order as on one
 * thread, so the sums are bit-identical whatever the thread count, and threads never write the same
 * element. The rows are copied once per pool into shared memory (count x dim float32). On one
 * thread the sums of 10,000 x 2,048 rows take 35-48 ms at K = 100 and 90-160 ms at K = 3,000 (2 vCPUs),
 * as much as the whole GEMM assignment at K = 100; on a 16-core machine, where the GEMM runs on every
 * core, they were 40% of the NMI+ curve's time (see {@link CLUSTER_SUM_THREADS_MIN_CORES}).
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { invalidParameterError } from '../errors.js';
import { workerThreadEntry } from '../util/worker-entry.js';
import type { ClusterSumJob, ClusterSumWorkerData } from './kmeans-sums-worker.js';

/** Cluster sizes and float64 sums (k x dim, row-major) of an assignment. */
export interface ClusterSums {
  sums: Float64Array;
  sizes: Int32Array;
}

/**
 * Fewest floats (count x dim) for which k-means sums on threads: below it a pool's start (tens of ms)
 * costs more than the sums of a whole run (10,000 x 200 floats: about 2 ms per iteration).
 */
export const CLUSTER_SUM_THREADS_MIN_FLOATS = 1 << 21;

/**
 * Fewest cores for which k-means sums on threads by default. Measured (NMI+ curve of `dml eval`'s
 * defaults, K = 100..3,000 on 10,000 x 2,048 ResNet-50 embeddings, two alternating runs each): on a
 * 16-core machine 9.2 and 9.4 s with threads against 15.4 and 14.5 s without (identical results); on
 * 2 vCPUs (60,000 x 784, K = 1,000, 20 iterations) 15.0 and 15.2 s against 14.1 and 14.3 s, as the two
 * vCPUs gain nothing on this loop (10,000 x 2,048, K = 100: 35 ms on one thread, 33 ms on two).
 */
export const CLUSTER_SUM_THREADS_MIN_CORES = 4;

/** Columns one thread should at least own, so its row slices stay long enough to stream. */
const MIN_COLUMNS_PER_THREAD = 32;

/** Sizes of the clusters of `assignments` (values in [0, k)). */
function clusterSizes(assignments: Int32Array, k: number): Int32Array {
  const sizes = new Int32Array(k);
  for (let i = 0; i < assignments.length; i++) {
    const c = assignments[i] as number;
    sizes[c] = (sizes[c] as number) + 1;
  }
  return sizes;
}

/**
 * Adds row i's columns [from, to) into the sums of cluster assignments[i], for every row in order.
 * Shared by this thread's path and the worker threads.
 */
export function addRowsToSums(vectors: Float32Array, dim: number, assignments: Int32Array, sums: Float64Array, from: number, to: number): void {
  const count = assignments.length;
  for (let i = 0; i < count; i++) {
    const out = (assignments[i] as number) * dim;
    const row = i * dim;
    // Unrolled by four: measured 1.9x faster than the plain loop (60,000 x 784, K = 1,000: 0.13 s).
    let j = from;
    for (; j + 3 < to; j += 4) {
      sums[out + j] = (sums[out + j] as number) + (vectors[row + j] as number);
      sums[out + j + 1] = (sums[out + j + 1] as number) + (vectors[row + j + 1] as number);
      sums[out + j + 2] = (sums[out + j + 2] as number) + (vectors[row + j + 2] as number);
      sums[out + j + 3] = (sums[out + j + 3] as number) + (vectors[row + j + 3] as number);
    }
    for (; j < to; j++) sums[out + j] = (sums[out + j] as number) + (vectors[row + j] as number);
  }
}

/** The sums and sizes of `k` clusters of the rows of `vectors` under `assignments`, on this thread. */
export function clusterSums(vectors: Float32Array, dim: number, k: number, assignments: Int32Array): ClusterSums {
  const sums = new Float64Array(k * dim);
  addRowsToSums(vectors, dim, assignments, sums, 0, dim);
  return { sums, sizes: clusterSizes(assignments, k) };
}

/** Worker threads that compute {@link clusterSums} for one set of rows, each over its own columns. */
export class ClusterSumThreads {
  readonly #workers: Worker[];
  readonly #dim: number;
  readonly #count: number;

  private constructor(workers: Worker[], count: number, dim: number) {
    this.#workers = workers;
    this.#count = count;
    this.#dim = dim;
  }

  /**
   * Threads for `threads` column ranges (fewer when `dim` is narrow), with the rows copied into
   * shared memory. Resolves once every thread is ready.
   */
  static async start(vectors: Float32Array, count: number, dim: number, threads: number): Promise<ClusterSumThreads> {
    const shared = new Float32Array(new SharedArrayBuffer(count * dim * 4));
    shared.set(vectors.subarray(0, count * dim));
    const n = Math.max(1, Math.min(threads, Math.floor(dim / MIN_COLUMNS_PER_THREAD)));
    const ranges = Array.from({ length: n }, (_, t): [number, number] => [Math.floor((t * dim) / n), Math.floor(((t + 1) * dim) / n)]);
    const { filename, options } = workerThreadEntry(import.meta.url, 'kmeans-sums-worker');
    const workers = ranges.map(([from, to]) => new Worker(filename, { ...options, workerData: { vectors: shared, dim, from, to } satisfies ClusterSumWorkerData }));
    const pool = new ClusterSumThreads(workers, count, dim);
    try {
      await Promise.all(workers.map((w) => pool.#reply(w)));
    } catch (err) {
      await pool.close();
      throw err;
    }
    return pool;
  }

  /** Number of threads. */
  get size(): number {
    return this.#workers.length;
  }

  /** {@link clusterSums} of this pool's rows, bit-identical to it. */
  async sums(k: number, assignments: Int32Array): Promise<ClusterSums> {
    if (assignments.length !== this.#count) throw invalidParameterError('assignments.length', `${this.#count} (one per row)`, assignments.length);
    const sharedAssignments = new Int32Array(new SharedArrayBuffer(this.#count * 4));
    sharedAssignments.set(assignments);
    const sums = new Float64Array(new SharedArrayBuffer(k * this.#dim * 8));
    const job: ClusterSumJob = { assignments: sharedAssignments, sums };
    const done = this.#workers.map((w) => this.#reply(w));
    for (const w of this.#workers) w.postMessage(job);
    await Promise.all(done);
    return { sums, sizes: clusterSizes(assignments, k) };
  }

  /** Ends the threads. Idempotent. */
  async close(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.terminate()));
  }

  /** The next message of `worker` ('ready' or 'done'); rejects if it fails or exits first. */
  #reply(worker: Worker): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const cleanup = (): void => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      const onMessage = (): void => {
        cleanup();
        resolve();
      };
      const onError = (err: Error): void => {
        cleanup();
        reject(new Error(`k-means sum thread failed: ${err.message}`, { cause: err }));
      };
      const onExit = (code: number): void => {
        cleanup();
        reject(new Error(`k-means sum thread stopped (exit code ${code})`));
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
    });
  }

  /**
   * Threads a k-means over `count` x `dim` rows uses for its sums: none below
   * {@link CLUSTER_SUM_THREADS_MIN_FLOATS}; else `threads` when given (none for 1), else one per core
   * from {@link CLUSTER_SUM_THREADS_MIN_CORES} cores on.
   */
  static threadsFor(count: number, dim: number, threads: number | undefined): number {
    if (count * dim < CLUSTER_SUM_THREADS_MIN_FLOATS) return 0;
    if (threads !== undefined) return threads > 1 ? threads : 0;
    const cores = os.availableParallelism();
    return cores >= CLUSTER_SUM_THREADS_MIN_CORES ? cores : 0;
  }
}
