/**
 * @file Euclidean k-means (Lloyd) with k-means++ seeding, for NMI / NMI+ clustering of embeddings.
 *
 * Like faiss's default, it clusters the given vectors (normally L2-normalised) by squared Euclidean
 * distance. The assignment step runs on the exact-search kernel: with bias `-|c|^2 / 2` per centroid,
 * the top-1 of `x . c - |c|^2 / 2` is the nearest centroid (`|x - c|^2 = |x|^2 - 2 (x . c - |c|^2 / 2)`),
 * ties going to the lower centroid index. Everything else (distances, centroid sums, inertia) is
 * computed in float64 in JavaScript. No N x N or N x K matrix is ever held: the assignment runs in
 * chunks of rows.
 *
 * One Lloyd iteration, given centroids C:
 * 1. assign every row to its nearest centroid in C;
 * 2. new centroid = mean of its rows (float64 sums, rounded to float32);
 * 3. a centroid left without rows is re-seeded deterministically: rows are taken in order of their
 *    squared distance to their assigned centroid (descending, then row index ascending), skipping rows
 *    whose cluster would be left empty; the taken row leaves its cluster's sum and becomes the centroid;
 * 4. stop when the total squared centroid movement is <= `tolerance`.
 * After the last iteration, rows are assigned to the final centroids and the inertia is computed from
 * that assignment.
 */
import { invalidParameterError } from '../errors.js';
import { Rng } from '../util/rng.js';
import { gemmTopK } from '../search/gemm-topk.js';

/** Options of {@link kmeans}. */
export interface KMeansOptions {
  /** Number of clusters, 1 <= k <= count. */
  k: number;
  /** Maximum Lloyd iterations per restart (>= 0). Default 20. */
  iterations?: number;
  /** Independent k-means++ initialisations; the lowest final inertia wins (>= 1). Default 1. */
  restarts?: number;
  /** Seed of the k-means++ sampling, integer in [0, 2^32). Same seed and data -> identical result. */
  seed: number;
  /** Stop when the total squared centroid movement of an iteration is <= tolerance (>= 0). Default 0. */
  tolerance?: number;
  /** Start from these centroids (k x dim, row-major) instead of k-means++; needs restarts = 1. */
  initialCentroids?: Float32Array;
  /** onnxruntime intra-op threads for the assignment step. */
  threads?: number;
}

/** The clustering of the restart with the lowest inertia. */
export interface KMeansResult {
  /** Cluster of each row, in [0, k). */
  assignments: Int32Array;
  /** k x dim centroids, row-major. */
  centroids: Float32Array;
  /** Sum over rows of the squared Euclidean distance to the assigned centroid (float64). */
  inertia: number;
  /** Lloyd iterations the winning restart ran. */
  iterationsRun: number;
  /** Final inertia of every restart, in order. */
  restartInertias: number[];
}

/** Upper bound on the floats of one assignment chunk's score matrix (rows x k). */
const ASSIGN_CHUNK_FLOATS = 1 << 22;

function squaredDistance(vectors: Float32Array, row: number, centroids: Float32Array, cluster: number, dim: number): number {
  const a = row * dim;
  const b = cluster * dim;
  let sum = 0;
  for (let j = 0; j < dim; j++) {
    const d = (vectors[a + j] as number) - (centroids[b + j] as number);
    sum += d * d;
  }
  return sum;
}

/**
 * k-means++ seeding (D² sampling): the first centroid is a uniformly random row; each next one is a
 * row drawn with probability proportional to its squared distance to the nearest centroid so far.
 * Distances are kept per row (float64) and updated with one pass per new centroid. When every row
 * coincides with a chosen centroid, the next one is drawn uniformly.
 */
export function kmeansPlusPlus(vectors: Float32Array, count: number, dim: number, k: number, rng: Rng): Float32Array {
  const centroids = new Float32Array(k * dim);
  const nearest = new Float64Array(count).fill(Infinity);
  let chosen = rng.nextInt(count);
  for (let c = 0; ; c++) {
    centroids.set(vectors.subarray(chosen * dim, (chosen + 1) * dim), c * dim);
    if (c === k - 1) return centroids;
    let total = 0;
    for (let i = 0; i < count; i++) {
      const d = squaredDistance(vectors, i, centroids, c, dim);
      if (d < (nearest[i] as number)) nearest[i] = d;
      total += nearest[i] as number;
    }
    if (total > 0) {
      const target = rng.next() * total;
      let cumulative = 0;
      chosen = count - 1;
      for (let i = 0; i < count; i++) {
        cumulative += nearest[i] as number;
        if (target < cumulative) {
          chosen = i;
          break;
        }
      }
    } else {
      chosen = rng.nextInt(count);
    }
  }
}

/** Nearest centroid of every row through the GEMM + TopK kernel with bias -|c|^2/2. */
async function assignNearest(
  vectors: Float32Array,
  count: number,
  dim: number,
  centroids: Float32Array,
  k: number,
  threads: number | undefined,
): Promise<Int32Array> {
  const bias = new Float32Array(k);
  for (let c = 0; c < k; c++) {
    let norm = 0;
    for (let j = 0; j < dim; j++) norm += (centroids[c * dim + j] as number) ** 2;
    bias[c] = -norm / 2;
  }
  const assignments = new Int32Array(count);
  const chunkSize = Math.max(512, Math.floor(ASSIGN_CHUNK_FLOATS / k));
  for await (const block of gemmTopK(vectors, count, centroids, k, dim, {
    k: 1,
    bias,
    chunkSize,
    ...(threads !== undefined ? { threads } : {}),
  })) {
    assignments.set(block.indices, block.queryOffset);
  }
  return assignments;
}

/** New centroids from an assignment (steps 2 and 3 of the iteration). */
function updateCentroids(vectors: Float32Array, count: number, dim: number, k: number, centroids: Float32Array, assignments: Int32Array): Float32Array {
  const sums = new Float64Array(k * dim);
  const sizes = new Int32Array(k);
  const distances = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const c = assignments[i] as number;
    sizes[c] = (sizes[c] as number) + 1;
    distances[i] = squaredDistance(vectors, i, centroids, c, dim);
    for (let j = 0; j < dim; j++) sums[c * dim + j] = (sums[c * dim + j] as number) + (vectors[i * dim + j] as number);
  }
  const empty: number[] = [];
  sizes.forEach((size, c) => {
    if (size === 0) empty.push(c);
  });
  if (empty.length > 0) {
    const farthestFirst = Array.from({ length: count }, (_, i) => i).sort(
      (a, b) => (distances[b] as number) - (distances[a] as number) || a - b,
    );
    let next = 0;
    for (const target of empty) {
      // Terminates: a cluster is skipped at most once (its last row), and count >= k.
      while ((sizes[assignments[farthestFirst[next] as number] as number] as number) < 2) next++;
      const row = farthestFirst[next++] as number;
      const donor = assignments[row] as number;
      for (let j = 0; j < dim; j++) {
        const x = vectors[row * dim + j] as number;
        sums[donor * dim + j] = (sums[donor * dim + j] as number) - x;
        sums[target * dim + j] = x;
      }
      sizes[donor] = (sizes[donor] as number) - 1;
      sizes[target] = 1;
    }
  }
  const next = new Float32Array(k * dim);
  for (let c = 0; c < k; c++) {
    for (let j = 0; j < dim; j++) next[c * dim + j] = (sums[c * dim + j] as number) / (sizes[c] as number);
  }
  return next;
}

function squaredShift(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += ((a[i] as number) - (b[i] as number)) ** 2;
  return sum;
}

interface RunResult {
  assignments: Int32Array;
  centroids: Float32Array;
  inertia: number;
  iterationsRun: number;
}

async function lloyd(
  vectors: Float32Array,
  count: number,
  dim: number,
  k: number,
  initial: Float32Array,
  iterations: number,
  tolerance: number,
  threads: number | undefined,
): Promise<RunResult> {
  let centroids = initial;
  let iterationsRun = 0;
  while (iterationsRun < iterations) {
    const assignments = await assignNearest(vectors, count, dim, centroids, k, threads);
    const next = updateCentroids(vectors, count, dim, k, centroids, assignments);
    iterationsRun++;
    const shift = squaredShift(next, centroids);
    centroids = next;
    if (shift <= tolerance) break;
  }
  const assignments = await assignNearest(vectors, count, dim, centroids, k, threads);
  let inertia = 0;
  for (let i = 0; i < count; i++) inertia += squaredDistance(vectors, i, centroids, assignments[i] as number, dim);
  return { assignments, centroids, inertia, iterationsRun };
}

function checkInteger(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidParameterError(name, max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer in [${min}, ${max}]`, value);
  }
  return value;
}

/**
 * Clusters `count` row-major rows of `vectors` (length count x dim) into `options.k` clusters by
 * squared Euclidean distance: k-means++ seeding, Lloyd iterations, `restarts` independent runs
 * keeping the lowest inertia (the first on ties). Deterministic: the same seed and data give
 * byte-identical assignments and centroids.
 *
 * Errors: E_ARG for bad arguments (k > count included) and for non-finite values in `vectors`.
 */
export async function kmeans(vectors: Float32Array, count: number, dim: number, options: KMeansOptions): Promise<KMeansResult> {
  checkInteger('count', count, 1);
  checkInteger('dim', dim, 1);
  if (!(vectors instanceof Float32Array)) throw invalidParameterError('vectors', 'a Float32Array', vectors);
  if (vectors.length !== count * dim) {
    throw invalidParameterError('vectors.length', `${count * dim} (${count} rows x ${dim} dims)`, vectors.length);
  }
  const k = checkInteger('k', options.k, 1, count);
  const iterations = checkInteger('iterations', options.iterations ?? 20, 0);
  const restarts = checkInteger('restarts', options.restarts ?? 1, 1);
  const seed = checkInteger('seed', options.seed, 0, 0xffffffff);
  const tolerance = options.tolerance ?? 0;
  if (typeof tolerance !== 'number' || !(tolerance >= 0) || !Number.isFinite(tolerance)) {
    throw invalidParameterError('tolerance', 'a finite number >= 0', tolerance);
  }
  const { initialCentroids, threads } = options;
  if (threads !== undefined) checkInteger('threads', threads, 1);
  if (initialCentroids !== undefined) {
    if (!(initialCentroids instanceof Float32Array) || initialCentroids.length !== k * dim) {
      throw invalidParameterError('initialCentroids', `a Float32Array of length ${k * dim} (k x dim)`, initialCentroids);
    }
    if (restarts !== 1) throw invalidParameterError('restarts', '1 when initialCentroids is given', restarts);
  }
  const bad = vectors.findIndex((v) => !Number.isFinite(v));
  if (bad >= 0) throw invalidParameterError(`vectors[${bad}] (row ${Math.floor(bad / dim)})`, 'a finite number', vectors[bad]);

  const rng = new Rng(seed);
  let best: RunResult | undefined;
  const restartInertias: number[] = [];
  for (let r = 0; r < restarts; r++) {
    const initial = initialCentroids?.slice() ?? kmeansPlusPlus(vectors, count, dim, k, rng.fork());
    const run = await lloyd(vectors, count, dim, k, initial, iterations, tolerance, threads);
    restartInertias.push(run.inertia);
    if (best === undefined || run.inertia < best.inertia) best = run;
  }
  return { ...(best as RunResult), restartInertias };
}
