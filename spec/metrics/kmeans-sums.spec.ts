/**
 * @file Tests of the centroid sums: the worker-thread pool gives bit-identical sums and sizes to the
 * one-thread loop for any thread count (each element gets the same additions in the same order), also
 * for dims that do not split evenly, and k-means gives byte-identical results with and without threads.
 */
import { expect } from 'chai';
import { kmeans } from '../../lib/metrics/kmeans.js';
import { CLUSTER_SUM_THREADS_MIN_FLOATS, ClusterSumThreads, clusterSums } from '../../lib/metrics/kmeans-sums.js';
import { Rng } from '../../lib/util/rng.js';

function data(count: number, dim: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: count * dim }, () => rng.nextGaussian());
}

describe('metrics/kmeans-sums', () => {
  it('sums by column ranges on threads, bit-identical to one thread (dims 70 and 130, 1-4 threads)', async function () {
    this.timeout(20_000);
    for (const dim of [70, 130]) {
      const count = 500;
      const k = 7;
      const vectors = data(count, dim, dim);
      const rng = new Rng(1);
      const assignments = Int32Array.from({ length: count }, () => Math.floor(rng.next() * (k - 1))); // cluster k-1 stays empty
      const expected = clusterSums(vectors, dim, k, assignments);
      expect(expected.sizes[k - 1]).to.equal(0);
      for (const threads of [1, 2, 3, 4]) {
        const pool = await ClusterSumThreads.start(vectors, count, dim, threads);
        try {
          expect(pool.size).to.equal(Math.min(threads, Math.floor(dim / 32)));
          const got = await pool.sums(k, assignments);
          expect(Buffer.from(got.sums.buffer).equals(Buffer.from(expected.sums.buffer)), `dim ${dim}, ${threads} threads`).to.equal(true);
          expect(Array.from(got.sizes)).to.deep.equal(Array.from(expected.sizes));
          // A second job on the same pool starts from zero again.
          const again = await pool.sums(k, assignments);
          expect(Array.from(again.sums)).to.deep.equal(Array.from(expected.sums));
        } finally {
          await pool.close();
        }
      }
      // Spot-check the loop itself against a plain sum.
      let s = 0;
      for (let i = 0; i < count; i++) if (assignments[i] === 2) s += vectors[i * dim + 5] as number;
      expect(expected.sums[2 * dim + 5]).to.equal(s);
    }
  });

  it('k-means gives byte-identical results whether the sums run on threads or not', async function () {
    this.timeout(60_000);
    const dim = 64;
    const count = Math.ceil(CLUSTER_SUM_THREADS_MIN_FLOATS / dim); // large enough for threads
    const vectors = data(count, dim, 9);
    expect(ClusterSumThreads.threadsFor(count, dim, 2)).to.equal(2);
    expect(ClusterSumThreads.threadsFor(count, dim, 1)).to.equal(0);
    expect(ClusterSumThreads.threadsFor(count - 1, dim, 2)).to.equal(0);
    const options = { k: 20, seed: 3, maxIterations: 5 };
    const threaded = await kmeans(vectors, count, dim, { ...options, threads: 2 });
    const single = await kmeans(vectors, count, dim, { ...options, threads: 1 });
    expect(threaded.iterationsRun).to.equal(5);
    expect(Buffer.from(threaded.centroids.buffer).equals(Buffer.from(single.centroids.buffer))).to.equal(true);
    expect(Buffer.from(threaded.assignments.buffer).equals(Buffer.from(single.assignments.buffer))).to.equal(true);
    expect(threaded.inertia).to.equal(single.inertia);
  });
});
