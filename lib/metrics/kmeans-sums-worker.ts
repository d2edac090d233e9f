/**
 * @file Worker-thread entry of {@link ClusterSumThreads} (kmeans-sums.ts): adds the rows' columns
 * [from, to) into their clusters' sums for each job, and answers `done`. Answers `ready` at start.
 * Does nothing when imported on the main thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { addRowsToSums } from './kmeans-sums.js';

/** What a thread is started with: the rows (shared) and its column range. */
export interface ClusterSumWorkerData {
  vectors: Float32Array;
  dim: number;
  from: number;
  to: number;
}

/** One iteration's job: the assignment and the (zeroed) sums to add into, both shared. */
export interface ClusterSumJob {
  assignments: Int32Array;
  sums: Float64Array;
}

if (parentPort) {
  const port = parentPort;
  const { vectors, dim, from, to } = workerData as ClusterSumWorkerData;
  port.on('message', ({ assignments, sums }: ClusterSumJob) => {
    addRowsToSums(vectors, dim, assignments, sums, from, to);
    port.postMessage('done');
  });
  port.postMessage('ready');
}
