/**
 * @file Tests of k-means against a straightforward JavaScript reference (float64 argmin assignment,
 * float64 centroid sums in row order, the documented empty-cluster rule): k-means++ seeding, each
 * Lloyd iteration, inertia, determinism, recovery of separated clusters, degenerate data and errors.
 */
import { expect } from 'chai';
import { kmeans, kmeansSweep, type KMeansOptions, type KMeansResult } from '../../lib/metrics/kmeans.js';
import { rowSquaredNorms, seedRows, type SeedingOptions } from '../../lib/metrics/kmeans-seeding.js';
import { DmlError } from '../../lib/errors.js';
import { Rng } from '../../lib/util/rng.js';

function squaredDistance(a: Float32Array, i: number, b: Float32Array, j: number, dim: number): number {
  let s = 0;
  for (let d = 0; d < dim; d++) s += ((a[i * dim + d] as number) - (b[j * dim + d] as number)) ** 2;
  return s;
}

/**
 * The seeding procedure of kmeans-seeding.ts written out directly, with float64 distances recomputed
 * from scratch: rounds of ceil(fraction x chosen) rows (at least 1), each row keyed -ln(u)/d² with one
 * uniform per row and round, smallest keys first, then rows at distance 0 by smallest u.
 */
function referenceSeeding(x: Float32Array, n: number, dim: number, k: number, rng: Rng, fraction: number): number[] {
  const chosen: number[] = [];
  const round = (weight: (i: number) => number, take: number): void => {
    const u = Array.from({ length: n }, () => 1 - rng.next());
    const free = Array.from({ length: n }, (_, i) => i).filter((i) => !chosen.includes(i));
    const keyed = free.filter((i) => weight(i) > 0).map((i) => ({ i, key: -Math.log(u[i] as number) / weight(i) }));
    keyed.sort((a, b) => a.key - b.key || a.i - b.i);
    const zero = free.filter((i) => weight(i) === 0).sort((a, b) => (u[a] as number) - (u[b] as number) || a - b);
    chosen.push(...[...keyed.map((e) => e.i), ...zero].slice(0, take));
  };
  round(() => 1, 1);
  while (chosen.length < k) {
    const d2 = (i: number): number => Math.min(...chosen.map((c) => squaredDistance(x, i, x, c, dim)));
    round(d2, Math.min(Math.max(1, Math.ceil(fraction * chosen.length)), k - chosen.length));
  }
  return chosen;
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

function rowsToCentroids(x: Float32Array, dim: number, rows: number[]): Float32Array {
  const centroids = new Float32Array(rows.length * dim);
  rows.forEach((row, c) => centroids.set(x.subarray(row * dim, (row + 1) * dim), c * dim));
  return centroids;
}

function bytes(a: Int32Array | Float32Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

describe('metrics/kmeans', () => {
  const dim = 6;
  const n = 400;
  const k = 8;
  const { x } = blobs(new Rng(17), k, n / k, dim, 1.5, 1);
  const norms = rowSquaredNorms(x, n, dim);
  const seed = (count: number, rng: Rng, options: Partial<SeedingOptions> = {}): Promise<Int32Array> =>
    seedRows(x, n, dim, count, rng, { init: 'k-means++', squaredNorms: norms, ...options });

  it('seeds with D² sampling in rounds exactly like the reference, drawing distinct rows', async () => {
    for (const fraction of [0, 0.25, 1]) {
      for (const s of [1, 2]) {
        const got = Array.from(await seed(40, new Rng(s), { roundFraction: fraction }));
        expect(got, `fraction ${fraction}, seed ${s}`).to.deep.equal(referenceSeeding(x, n, dim, 40, new Rng(s), fraction));
        expect(new Set(got).size).to.equal(40);
      }
    }
    expect(Array.from(await seed(k, new Rng(1)))).to.not.deep.equal(Array.from(await seed(k, new Rng(2))));
  });

  it('draws each next seed with probability proportional to its squared distance (k-means++)', async () => {
    // Rows at 0, 1 and 3 on a line: after row 0, row 1 (d² = 1) has probability 0.1 and row 2 (d² = 9) 0.9;
    // after row 1: 1/5 and 4/5; after row 2: 9/13 and 4/13.
    const line = Float32Array.from([0, 1, 3]);
    const lineNorms = rowSquaredNorms(line, 3, 1);
    const counts = new Map<string, number>();
    const trials = 3000;
    for (let t = 0; t < trials; t++) {
      const rows = await seedRows(line, 3, 1, 2, new Rng(t), { init: 'k-means++', roundFraction: 0, squaredNorms: lineNorms });
      counts.set(rows.join(','), (counts.get(rows.join(',')) ?? 0) + 1);
    }
    const expected: Record<string, number> = { '0,1': 0.1, '0,2': 0.9, '1,0': 0.2, '1,2': 0.8, '2,0': 9 / 13, '2,1': 4 / 13 };
    for (const [pair, p] of Object.entries(expected)) {
      const first = pair.split(',')[0] as string;
      const firstCount = [...counts].filter(([key]) => key.startsWith(`${first},`)).reduce((sum, [, c]) => sum + c, 0);
      expect(firstCount / trials, `first row ${first}`).to.be.closeTo(1 / 3, 0.04);
      expect((counts.get(pair) ?? 0) / firstCount, `P(${pair})`).to.be.closeTo(p, 0.06);
    }
  });

  it('is prefix-consistent: the seeding for a smaller k is a prefix of the seeding for a larger one', async () => {
    for (const options of [{ roundFraction: 0 }, { roundFraction: 0.25 }, { roundFraction: 1 }, { init: 'random' as const }]) {
      const large = Array.from(await seed(100, new Rng(9), options));
      for (const small of [1, 7, 33]) expect(Array.from(await seed(small, new Rng(9), options)), JSON.stringify(options)).to.deep.equal(large.slice(0, small));
    }
  });

  it('seeds random rows uniformly without replacement with init random', async () => {
    const hits = new Float64Array(n);
    for (let t = 0; t < 200; t++) for (const row of await seed(20, new Rng(t), { init: 'random' })) hits[row] = (hits[row] as number) + 1;
    // 4,000 draws over 400 rows: 10 per row expected; every row drawn, none wildly over-drawn.
    expect(Math.min(...hits)).to.be.above(0);
    expect(Math.max(...hits)).to.be.below(30);
  });

  it('matches the reference after each of 0..8 Lloyd iterations from the same initial centroids', async () => {
    const initial = rowsToCentroids(x, dim, Array.from(await seed(k, new Rng(4))));
    let reference = initial;
    let converged = false;
    for (let t = 0; t <= 8; t++) {
      if (t > 0 && !converged) {
        const next = referenceIteration(x, n, dim, reference, k);
        converged = bytes(next).equals(bytes(reference));
        reference = next;
      }
      const result = await kmeans(x, n, dim, { k, seed: 0, maxIterations: t, tolerance: 0, initialCentroids: initial });
      expect(bytes(result.centroids).equals(bytes(reference)), `centroids after ${t} iterations`).to.equal(true);
      expect(Array.from(result.assignments), `assignments after ${t}`).to.deep.equal(Array.from(referenceAssign(x, n, dim, reference, k)));
      const expectedInertia = inertiaByExpansion(x, n, dim, reference, result.assignments);
      expect(Math.abs(result.inertia - expectedInertia)).to.be.below(1e-9 * expectedInertia);
      expect(result.restartInertias).to.deep.equal([result.inertia]);
    }
    // The iterations did move the centroids (the comparison above was not trivially of the initial ones).
    expect(bytes(reference).equals(bytes(initial))).to.equal(false);
  });

  it('runs to a fixed point with tolerance 0, stops on a small relative inertia change, and says whether it converged', async () => {
    const full = await kmeans(x, n, dim, { k, seed: 5, maxIterations: 100, tolerance: 0 });
    expect(full.iterationsRun).to.be.within(2, 99);
    expect(full.converged).to.equal(true);
    const again = await kmeans(x, n, dim, { k, seed: 5, maxIterations: 100, initialCentroids: full.centroids });
    expect(again.iterationsRun).to.equal(1);
    expect(bytes(again.centroids).equals(bytes(full.centroids))).to.equal(true);
    const loose = await kmeans(x, n, dim, { k, seed: 5, maxIterations: 100, tolerance: 1e6 });
    expect([loose.iterationsRun, loose.converged]).to.deep.equal([1, true]);
    const capped = await kmeans(x, n, dim, { k, seed: 5, maxIterations: 1, tolerance: 0 });
    expect([capped.iterationsRun, capped.converged]).to.deep.equal([1, false]);
    // The default tolerance (1e-4 of the inertia) stops no later than the fixed point, at nearly its inertia.
    const byDefault = await kmeans(x, n, dim, { k, seed: 5 });
    expect(byDefault.iterationsRun).to.be.at.most(full.iterationsRun);
    expect(byDefault.inertia).to.be.at.most(full.inertia * 1.001);
  });

  it('gives every cluster count of a sweep the result of a separate run', async () => {
    const ks = [3, 8, 20];
    for (const options of [{ seed: 3, restarts: 2 }, { seed: 4, init: 'random' as const }]) {
      const sweep = await kmeansSweep(x, n, dim, ks, options);
      expect(sweep.map((r) => r.k)).to.deep.equal(ks);
      for (const [i, count] of ks.entries()) {
        const single = await kmeans(x, n, dim, { k: count, ...options });
        const swept = sweep[i] as KMeansResult;
        expect(bytes(swept.centroids).equals(bytes(single.centroids)), `k ${count}`).to.equal(true);
        expect(swept.restartInertias).to.deep.equal(single.restartInertias);
      }
    }
  });

  it('is deterministic by seed and seeds each restart from one forked stream', async () => {
    const options: KMeansOptions = { k, seed: 42, maxIterations: 10, restarts: 3 };
    const a = await kmeans(x, n, dim, options);
    const b = await kmeans(x, n, dim, options);
    expect(bytes(a.assignments).equals(bytes(b.assignments))).to.equal(true);
    expect(bytes(a.centroids).equals(bytes(b.centroids))).to.equal(true);
    expect(a.restartInertias).to.deep.equal(b.restartInertias).and.to.have.length(3);
    expect(a.inertia).to.equal(Math.min(...a.restartInertias));

    const rng = new Rng(42);
    for (let r = 0; r < 3; r++) {
      const initial = rowsToCentroids(x, dim, Array.from(await seed(k, rng.fork())));
      const single = await kmeans(x, n, dim, { k, seed: 0, maxIterations: 10, initialCentroids: initial });
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
    const result = await kmeans(points, 9, 2, { k: 3, seed: 0, maxIterations: 1, initialCentroids: initial });
    expect(Array.from(result.centroids)).to.deep.equal([0, 0.25, 10, 0.25, 3, 0]);
    expect(bytes(result.centroids).equals(bytes(referenceIteration(points, 9, 2, initial, 3)))).to.equal(true);
    expect(Array.from(result.assignments)).to.deep.equal([0, 0, 2, 0, 0, 1, 1, 1, 1]);
    // 0.0625 + 1.0625 + 0 + 1.0625 + 0.5625 (group A) + 0.0625 + 1.0625 + 0.5625 + 1.0625 (group B)
    expect(result.inertia).to.equal(5.5);
  });

  it('terminates on identical rows with k > distinct rows', async () => {
    const same = new Float32Array(10 * 3).fill(0.5);
    const result = await kmeans(same, 10, 3, { k: 3, seed: 3, maxIterations: 5 });
    expect(result.inertia).to.equal(0);
    expect(result.iterationsRun).to.equal(1);
    expect(Array.from(result.assignments)).to.deep.equal(new Array(10).fill(0));
  });

  it('names bad arguments', async () => {
    const cases: [() => Promise<unknown>, RegExp][] = [
      [() => kmeans(x, n, dim, { k: n + 1, seed: 1 }), /^Expected an integer in \[1, 400\] for k but received 401$/],
      [() => kmeans(x, n, dim, { k: 0, seed: 1 }), /for k but received 0/],
      [() => kmeans(x, n, dim, { k, seed: 1.5 }), /for seed but received 1.5/],
      [() => kmeans(x, n, dim, { k, seed: 1, maxIterations: -1 }), /^Expected an integer >= 0 for maxIterations but received -1$/],
      [() => kmeans(x, n, dim, { k, seed: 1, init: 'greedy' as never }), /^Expected 'greedy-k-means\+\+' or 'k-means\+\+' or 'random' for init but received "greedy"$/],
      [() => kmeans(x, n, dim, { k, seed: 1, roundFraction: -0.5 }), /^Expected a finite number >= 0 for roundFraction but received -0.5$/],
      [() => kmeansSweep(x, n, dim, [2, 401], { seed: 1 }), /^Expected an integer in \[1, 400\] for ks\[1\] but received 401$/],
      [() => kmeansSweep(x, n, dim, [], { seed: 1 }), /for ks but received/],
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
