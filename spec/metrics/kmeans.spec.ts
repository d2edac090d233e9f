/**
 * @file Tests of k-means against a straightforward JavaScript reference (float64 argmin assignment,
 * float64 centroid sums in row order, the documented empty-cluster rule): k-means++ seeding, each
 * Lloyd iteration, inertia, determinism, recovery of separated clusters, degenerate data and errors.
 */
import { expect } from 'chai';
import { kmeans, kmeansPlusPlus, type KMeansOptions } from '../../lib/metrics/kmeans.js';
import { DmlError } from '../../lib/errors.js';
import { Rng } from '../../lib/util/rng.js';

function squaredDistance(a: Float32Array, i: number, b: Float32Array, j: number, dim: number): number {
  let s = 0;
  for (let d = 0; d < dim; d++) s += ((a[i * dim + d] as number) - (b[j * dim + d] as number)) ** 2;
  return s;
}

/** D² sampling, recomputing each row's distance to every chosen centroid at each step. */
function referenceKmeansPlusPlus(x: Float32Array, n: number, dim: number, k: number, rng: Rng): Float32Array {
  const chosen = [rng.nextInt(n)];
  while (chosen.length < k) {
    const weights = Array.from({ length: n }, (_, i) => Math.min(...chosen.map((c) => squaredDistance(x, i, x, c, dim))));
    const total = weights.reduce((s, w) => s + w, 0);
    if (total === 0) {
      chosen.push(rng.nextInt(n));
      continue;
    }
    const target = rng.next() * total;
    let cumulative = 0;
    let pick = n - 1;
    for (let i = 0; i < n; i++) {
      cumulative += weights[i] as number;
      if (target < cumulative) {
        pick = i;
        break;
      }
    }
    chosen.push(pick);
  }
  const centroids = new Float32Array(k * dim);
  chosen.forEach((row, c) => centroids.set(x.subarray(row * dim, (row + 1) * dim), c * dim));
  return centroids;
}

function referenceAssign(x: Float32Array, n: number, dim: number, centroids: Float32Array, k: number): Int32Array {
  return Int32Array.from({ length: n }, (_, i) => {
    let best = 0;
    for (let c = 1; c < k; c++) if (squaredDistance(x, i, centroids, c, dim) < squaredDistance(x, i, centroids, best, dim)) best = c;
    return best;
  });
}

/** One Lloyd iteration: assign, average, re-seed empty clusters from the farthest rows of clusters with >= 2 rows. */
function referenceIteration(x: Float32Array, n: number, dim: number, centroids: Float32Array, k: number): Float32Array {
  const assign = referenceAssign(x, n, dim, centroids, k);
  const members: number[][] = Array.from({ length: k }, () => []);
  assign.forEach((c, i) => members[c]?.push(i));
  const byDistance = Array.from({ length: n }, (_, i) => i).sort(
    (a, b) =>
      squaredDistance(x, b, centroids, assign[b] as number, dim) - squaredDistance(x, a, centroids, assign[a] as number, dim) || a - b,
  );
  for (let c = 0; c < k; c++) {
    if ((members[c] as number[]).length > 0) continue;
    const row = byDistance.find((i) => {
      const own = members[assign[i] as number] as number[];
      return own.length >= 2 && own.includes(i);
    });
    if (row === undefined) throw new Error('no row to re-seed from');
    const donor = members[assign[row] as number] as number[];
    donor.splice(donor.indexOf(row), 1);
    members[c] = [row];
  }
  const next = new Float32Array(k * dim);
  members.forEach((rows, c) => {
    for (let d = 0; d < dim; d++) {
      let sum = 0;
      for (const i of rows) sum += x[i * dim + d] as number;
      next[c * dim + d] = sum / rows.length;
    }
  });
  return next;
}

/** Sum of |x|^2 - 2 x.c + |c|^2, a different formula from the library's sum of squared differences. */
function inertiaByExpansion(x: Float32Array, n: number, dim: number, centroids: Float32Array, assign: Int32Array): number {
  let total = 0;
  for (let i = 0; i < n; i++) {
    const c = assign[i] as number;
    let xx = 0;
    let xc = 0;
    let cc = 0;
    for (let d = 0; d < dim; d++) {
      const a = x[i * dim + d] as number;
      const b = centroids[c * dim + d] as number;
      xx += a * a;
      xc += a * b;
      cc += b * b;
    }
    total += xx - 2 * xc + cc;
  }
  return total;
}

/** `perCluster` rows around each of `clusters` Gaussian centres (scale `spread`), with noise `noise`, interleaved. */
function blobs(rng: Rng, clusters: number, perCluster: number, dim: number, spread: number, noise: number): { x: Float32Array; labels: number[] } {
  const centres = Array.from({ length: clusters }, () => Array.from({ length: dim }, () => spread * rng.nextGaussian()));
  const labels = rng.shuffle(Array.from({ length: clusters * perCluster }, (_, i) => i % clusters));
  const x = new Float32Array(labels.length * dim);
  labels.forEach((label, i) => {
    for (let d = 0; d < dim; d++) x[i * dim + d] = (centres[label]?.[d] as number) + noise * rng.nextGaussian();
  });
  return { x, labels };
}

function bytes(a: Int32Array | Float32Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

describe('metrics/kmeans', () => {
  const dim = 6;
  const n = 400;
  const k = 8;
  const { x } = blobs(new Rng(17), k, n / k, dim, 1.5, 1);

  it('seeds with D² sampling exactly like the reference, drawing distinct rows', () => {
    for (const seed of [1, 2, 3]) {
      const got = kmeansPlusPlus(x, n, dim, k, new Rng(seed));
      expect(bytes(got).equals(bytes(referenceKmeansPlusPlus(x, n, dim, k, new Rng(seed))))).to.equal(true);
      const rows = new Set(Array.from({ length: k }, (_, c) => Array.from(got.subarray(c * dim, (c + 1) * dim)).join(',')));
      expect(rows.size).to.equal(k);
    }
    expect(bytes(kmeansPlusPlus(x, n, dim, k, new Rng(1))).equals(bytes(kmeansPlusPlus(x, n, dim, k, new Rng(2))))).to.equal(false);
  });

  it('matches the reference after each of 0..8 Lloyd iterations from the same initial centroids', async () => {
    const initial = kmeansPlusPlus(x, n, dim, k, new Rng(4));
    let reference = initial;
    let converged = false;
    for (let t = 0; t <= 8; t++) {
      if (t > 0 && !converged) {
        const next = referenceIteration(x, n, dim, reference, k);
        converged = bytes(next).equals(bytes(reference));
        reference = next;
      }
      const result = await kmeans(x, n, dim, { k, seed: 0, iterations: t, initialCentroids: initial });
      expect(bytes(result.centroids).equals(bytes(reference)), `centroids after ${t} iterations`).to.equal(true);
      expect(Array.from(result.assignments), `assignments after ${t}`).to.deep.equal(Array.from(referenceAssign(x, n, dim, reference, k)));
      const expectedInertia = inertiaByExpansion(x, n, dim, reference, result.assignments);
      expect(Math.abs(result.inertia - expectedInertia)).to.be.below(1e-9 * expectedInertia);
      expect(result.restartInertias).to.deep.equal([result.inertia]);
    }
    // The iterations did move the centroids (the comparison above was not trivially of the initial ones).
    expect(bytes(reference).equals(bytes(initial))).to.equal(false);
  });

  it('stops at a fixed point with tolerance 0 and earlier with a tolerance, counting iterations', async () => {
    const full = await kmeans(x, n, dim, { k, seed: 5, iterations: 100 });
    expect(full.iterationsRun).to.be.within(2, 99);
    const again = await kmeans(x, n, dim, { k, seed: 5, iterations: 100, initialCentroids: full.centroids });
    expect(again.iterationsRun).to.equal(1);
    expect(bytes(again.centroids).equals(bytes(full.centroids))).to.equal(true);
    const loose = await kmeans(x, n, dim, { k, seed: 5, iterations: 100, tolerance: 1e6 });
    expect(loose.iterationsRun).to.equal(1);
  });

  it('is deterministic by seed and seeds each restart from one forked stream', async () => {
    const options: KMeansOptions = { k, seed: 42, iterations: 10, restarts: 3 };
    const a = await kmeans(x, n, dim, options);
    const b = await kmeans(x, n, dim, options);
    expect(bytes(a.assignments).equals(bytes(b.assignments))).to.equal(true);
    expect(bytes(a.centroids).equals(bytes(b.centroids))).to.equal(true);
    expect(a.restartInertias).to.deep.equal(b.restartInertias).and.to.have.length(3);
    expect(a.inertia).to.equal(Math.min(...a.restartInertias));

    const rng = new Rng(42);
    for (let r = 0; r < 3; r++) {
      const initial = kmeansPlusPlus(x, n, dim, k, rng.fork());
      const single = await kmeans(x, n, dim, { k, seed: 0, iterations: 10, initialCentroids: initial });
      expect(single.inertia, `restart ${r}`).to.equal(a.restartInertias[r]);
    }
  });

  it('recovers well-separated clusters exactly', async () => {
    const { x: separated, labels } = blobs(new Rng(8), 6, 50, 8, 10, 0.1);
    const result = await kmeans(separated, 300, 8, { k: 6, seed: 1, restarts: 3 });
    const clusterOfLabel = new Map<number, number>();
    labels.forEach((label, i) => {
      const cluster = result.assignments[i] as number;
      expect(clusterOfLabel.get(label) ?? cluster, `row ${i}`).to.equal(cluster);
      clusterOfLabel.set(label, cluster);
    });
    expect(new Set(clusterOfLabel.values()).size).to.equal(6);
    expect(Math.abs(result.inertia - inertiaByExpansion(separated, 300, 8, result.centroids, result.assignments))).to.be.below(1e-9 * result.inertia);
  });

  it('re-seeds an empty cluster from the row farthest from its centroid, taking it out of its donor', async () => {
    // Group A around (0,0) with an outlier (3,0) at row 2; group B around (10,0); centroid 2 far from everything.
    const points = Float32Array.from([0, 0, 1, 0, 3, 0, -1, 0, 0, 1, 10, 0, 11, 0, 10, 1, 9, 0]);
    const initial = Float32Array.from([0, 0, 10, 0, 100, 100]);
    const result = await kmeans(points, 9, 2, { k: 3, seed: 0, iterations: 1, initialCentroids: initial });
    expect(Array.from(result.centroids)).to.deep.equal([0, 0.25, 10, 0.25, 3, 0]);
    expect(bytes(result.centroids).equals(bytes(referenceIteration(points, 9, 2, initial, 3)))).to.equal(true);
    expect(Array.from(result.assignments)).to.deep.equal([0, 0, 2, 0, 0, 1, 1, 1, 1]);
    // 0.0625 + 1.0625 + 0 + 1.0625 + 0.5625 (group A) + 0.0625 + 1.0625 + 0.5625 + 1.0625 (group B)
    expect(result.inertia).to.equal(5.5);
  });

  it('terminates on identical rows with k > distinct rows', async () => {
    const same = new Float32Array(10 * 3).fill(0.5);
    const result = await kmeans(same, 10, 3, { k: 3, seed: 3, iterations: 5 });
    expect(result.inertia).to.equal(0);
    expect(result.iterationsRun).to.equal(1);
    expect(Array.from(result.assignments)).to.deep.equal(new Array(10).fill(0));
  });

  it('names bad arguments', async () => {
    const cases: [() => Promise<unknown>, RegExp][] = [
      [() => kmeans(x, n, dim, { k: n + 1, seed: 1 }), /^Expected an integer in \[1, 400\] for k but received 401$/],
      [() => kmeans(x, n, dim, { k: 0, seed: 1 }), /for k but received 0/],
      [() => kmeans(x, n, dim, { k, seed: 1.5 }), /for seed but received 1.5/],
      [() => kmeans(x, n, dim, { k, seed: 1, iterations: -1 }), /^Expected an integer >= 0 for iterations but received -1$/],
      [() => kmeans(x, n, dim, { k, seed: 1, restarts: 0 }), /for restarts but received 0/],
      [() => kmeans(x, n, dim, { k, seed: 1, tolerance: -1 }), /^Expected a finite number >= 0 for tolerance but received -1$/],
      [() => kmeans(x, n, 5, { k, seed: 1 }), /^Expected 2000 \(400 rows x 5 dims\) for vectors.length but received 2400$/],
      [() => kmeans(x, n, dim, { k, seed: 1, initialCentroids: new Float32Array(3) }), /for initialCentroids but received Float32Array of length 3/],
      [() => kmeans(x, n, dim, { k, seed: 1, restarts: 2, initialCentroids: new Float32Array(k * dim) }), /^Expected 1 when initialCentroids is given for restarts but received 2$/],
      [() => kmeans(Float32Array.from([0, NaN]), 1, 2, { k: 1, seed: 1 }), /^Expected a finite number for vectors\[1\] \(row 0\) but received NaN$/],
    ];
    for (const [run, pattern] of cases) {
      try {
        await run();
        expect.fail(`expected ${pattern}`);
      } catch (err) {
        expect(err).to.be.instanceOf(DmlError);
        expect((err as DmlError).code).to.equal('E_ARG');
        expect((err as DmlError).message).to.match(pattern);
      }
    }
  });
});
