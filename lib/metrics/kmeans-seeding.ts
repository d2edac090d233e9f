/**
 * @file k-means seeding: which rows become the initial centroids.
 *
 * - `k-means++` (Arthur & Vassilvitskii, 2007): D² sampling, each new centroid a row drawn with
 *   probability proportional to its squared distance to the nearest centroid chosen so far.
 * - `random`: k distinct rows drawn uniformly (faiss's default).
 *
 * k-means++ is sequential by definition: each draw needs the distances to every centroid before it,
 * N x D scalar work per centroid (N x K x D in all, the cost that made the old seeding slower than the
 * whole Lloyd run). Here the draws come in rounds: a round draws `ceil(roundFraction x chosen so far)`
 * rows *without replacement* from the current D² distribution, and then one onnxruntime Gemm + TopK
 * (the exact-search kernel, see {@link nearestCentroids}) folds the new rows into every row's nearest
 * distance. The rounds grow geometrically, so seeding K centroids takes about log(K) / log(1 +
 * roundFraction) rounds and N x K x D multiply-adds of GEMM in all (one Lloyd assignment's worth).
 * `roundFraction = 0` draws one row per round: exact sequential k-means++. Drawing several rows from
 * one distribution is the oversampling step of k-means|| (Bahmani et al., 2012) with the round size
 * tied to the number already chosen.
 *
 * Sampling without replacement uses exponential keys (Efraimidis & Spirakis, 2006): every row gets
 * `key = -ln(u) / weight` with a fresh uniform u per row and round, and the round takes the rows with
 * the smallest keys, in key order. That order has the distribution of successive weighted draws
 * without replacement. Because each round consumes exactly one uniform per row whatever its size,
 * seeding is **prefix-consistent**: the first K' rows of a seeding for K > K' are exactly the seeding
 * for K' from the same generator state. An NMI+ sweep therefore seeds once, at the largest cluster
 * count, and every smaller count starts from a prefix.
 *
 * Rows at distance 0 from a chosen centroid (the centroids themselves, exact duplicates) have weight
 * 0; when a round needs more rows than have positive weight, the rest are drawn uniformly (smallest u)
 * from the rows not chosen yet. `random` is the same procedure with every weight 1 and a single round.
 *
 * - `greedy-k-means++` (scikit-learn's `_kmeans_plusplus`, the seeding of its `KMeans`): the first
 *   centroid a uniformly drawn row; then for each next centroid `2 + floor(ln k)` candidate rows are
 *   drawn by D² sampling (a uniform times the current potential, located in the running sum of the
 *   nearest squared distances), and the candidate that leaves the smallest potential (the sum over
 *   rows of the squared distance to the nearest centroid) becomes the centroid. It is sequential, one
 *   GEMM of the rows by the candidates per centroid (through {@link gemmTopK}), and prefix-consistent
 *   in k for a fixed number of candidates, which depends on k: an NMI+ sweep's counts each seed anew.
 *   On the same vectors its clusterings score the NMI of scikit-learn's (see docs/decisions.md, Q16).
 */
import { invalidParameterError } from '../errors.js';
import type { Rng } from '../util/rng.js';
import { gemmTopK } from '../search/gemm-topk.js';
import { nearestCentroids } from './kmeans-assign.js';
import { DEFAULT_ROUND_FRACTION, KMEANS_INITS, type KMeansInit } from './kmeans-options.js';

/** Options of {@link seedRows}. */
export interface SeedingOptions {
  init: KMeansInit;
  /** k-means++ only: a round draws ceil(roundFraction x rows chosen so far) rows; 0 = one per round. */
  roundFraction?: number;
  /** Squared L2 norm of every row (float64), as {@link rowSquaredNorms} computes it. */
  squaredNorms: Float64Array;
  /** onnxruntime intra-op threads for the distance updates. */
  threads?: number;
}

/** Squared L2 norm of each of the `count` rows of `vectors`, in float64. */
export function rowSquaredNorms(vectors: Float32Array, count: number, dim: number): Float64Array {
  const norms = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    let s = 0;
    for (let j = i * dim, end = j + dim; j < end; j++) s += (vectors[j] as number) * (vectors[j] as number);
    norms[i] = s;
  }
  return norms;
}

/**
 * Indices of the rows with the `take` smallest keys among rows where `eligible` is 1, ordered by key
 * ascending, then row index ascending. At most the number of eligible rows are returned.
 */
function smallestKeys(keys: Float64Array, eligible: Uint8Array, take: number): number[] {
  const rows: number[] = [];
  for (let i = 0; i < keys.length; i++) if (eligible[i] === 1) rows.push(i);
  if (rows.length <= take) return rows.sort((a, b) => (keys[a] as number) - (keys[b] as number) || a - b);
  // Partial selection: a max-heap of the best `take` rows so far (root = the worst kept row).
  const worse = (a: number, b: number): boolean => (keys[a] as number) > (keys[b] as number) || ((keys[a] as number) === (keys[b] as number) && a > b);
  const heap = rows.slice(0, take);
  const siftDown = (start: number): void => {
    let i = start;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let top = i;
      if (l < take && worse(heap[l] as number, heap[top] as number)) top = l;
      if (r < take && worse(heap[r] as number, heap[top] as number)) top = r;
      if (top === i) return;
      [heap[i], heap[top]] = [heap[top] as number, heap[i] as number];
      i = top;
    }
  };
  for (let i = Math.floor(take / 2) - 1; i >= 0; i--) siftDown(i);
  for (let n = take; n < rows.length; n++) {
    const row = rows[n] as number;
    if (worse(heap[0] as number, row)) {
      heap[0] = row;
      siftDown(0);
    }
  }
  return heap.sort((a, b) => (keys[a] as number) - (keys[b] as number) || a - b);
}

/**
 * Draws `take` distinct rows not yet chosen: first by exponential keys among rows of positive weight,
 * then, if those run out, uniformly among the remaining unchosen rows. One uniform per row is drawn
 * from `rng` whatever `take` is (prefix consistency).
 */
function drawRound(weights: Float64Array, chosen: Uint8Array, take: number, rng: Rng): number[] {
  const count = weights.length;
  const u = new Float64Array(count);
  const keys = new Float64Array(count);
  const positive = new Uint8Array(count);
  for (let i = 0; i < count; i++) {
    // 1 - next() is in (0, 1], so ln is finite; -ln(1) = 0 is a valid key.
    u[i] = 1 - rng.next();
    const w = weights[i] as number;
    if (chosen[i] === 0 && w > 0) {
      positive[i] = 1;
      keys[i] = -Math.log(u[i] as number) / w;
    }
  }
  const picked = smallestKeys(keys, positive, take);
  if (picked.length === take) return picked;
  const rest = new Uint8Array(count);
  for (let i = 0; i < count; i++) rest[i] = chosen[i] === 0 && positive[i] === 0 ? 1 : 0;
  return picked.concat(smallestKeys(u, rest, take - picked.length));
}

/**
 * The `k` rows that seed k-means, in draw order (see the file comment). `vectors` holds `count`
 * row-major rows of `dim` floats; `k <= count`. Deterministic for a given `rng` state, and
 * prefix-consistent in `k`.
 */
export async function seedRows(
  vectors: Float32Array,
  count: number,
  dim: number,
  k: number,
  rng: Rng,
  options: SeedingOptions,
): Promise<Int32Array> {
  const { init, roundFraction = DEFAULT_ROUND_FRACTION, squaredNorms, threads } = options;
  if (!KMEANS_INITS.includes(init)) throw invalidParameterError('init', `one of ${KMEANS_INITS.map((m) => `'${m}'`).join(', ')}`, init);
  if (typeof roundFraction !== 'number' || !(roundFraction >= 0) || !Number.isFinite(roundFraction)) {
    throw invalidParameterError('roundFraction', 'a finite number >= 0', roundFraction);
  }
  const chosen = new Uint8Array(count);
  const order: number[] = [];
  const take = (rows: number[]): void => {
    for (const r of rows) {
      chosen[r] = 1;
      order.push(r);
    }
  };
  if (init === 'greedy-k-means++') return greedySeeding(vectors, count, dim, k, rng, squaredNorms, threads);
  if (init === 'random') {
    take(drawRound(new Float64Array(count).fill(1), chosen, k, rng));
    return Int32Array.from(order);
  }
  // k-means++: the first row uniformly, then rounds of D² draws.
  const nearest = new Float64Array(count).fill(Infinity);
  take(drawRound(new Float64Array(count).fill(1), chosen, 1, rng));
  let folded = 0;
  while (order.length < k) {
    const fresh = order.slice(folded);
    const centroids = new Float32Array(fresh.length * dim);
    fresh.forEach((row, c) => centroids.set(vectors.subarray(row * dim, (row + 1) * dim), c * dim));
    const { distances } = await nearestCentroids(vectors, count, dim, squaredNorms, centroids, fresh.length, threads);
    for (let i = 0; i < count; i++) if ((distances[i] as number) < (nearest[i] as number)) nearest[i] = distances[i] as number;
    for (const row of fresh) nearest[row] = 0;
    folded = order.length;
    const size = Math.max(1, Math.ceil(roundFraction * order.length));
    take(drawRound(nearest, chosen, Math.min(size, k - order.length), rng));
  }
  return Int32Array.from(order);
}

/** Candidates per centroid of greedy k-means++: scikit-learn's `2 + int(np.log(n_clusters))`. */
export function greedyTrials(k: number): number {
  return 2 + Math.floor(Math.log(k));
}

/** Index of the first entry of the ascending `cumulative` that is >= `value` (numpy's searchsorted, side left), clipped to the last. */
function searchSorted(cumulative: Float64Array, value: number): number {
  let lo = 0;
  let hi = cumulative.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((cumulative[mid] as number) < value) lo = mid + 1;
    else hi = mid;
  }
  return Math.min(lo, cumulative.length - 1);
}

/** Greedy k-means++ (see the file comment). */
async function greedySeeding(vectors: Float32Array, count: number, dim: number, k: number, rng: Rng, squaredNorms: Float64Array, threads: number | undefined): Promise<Int32Array> {
  const trials = greedyTrials(k);
  const order = [Math.min(count - 1, Math.floor(rng.next() * count))];
  const closest = (await nearestCentroids(vectors, count, dim, squaredNorms, vectors.slice(order[0] as number * dim, (order[0] as number + 1) * dim), 1, threads)).distances;
  closest[order[0] as number] = 0;
  let potential = closest.reduce((a, b) => a + b, 0);
  const cumulative = new Float64Array(count);
  while (order.length < k) {
    let running = 0;
    for (let i = 0; i < count; i++) cumulative[i] = running += closest[i] as number;
    const candidates = Array.from({ length: trials }, () => searchSorted(cumulative, rng.next() * potential));
    const centroids = new Float32Array(trials * dim);
    const bias = new Float32Array(trials);
    candidates.forEach((row, t) => {
      centroids.set(vectors.subarray(row * dim, (row + 1) * dim), t * dim);
      bias[t] = -(squaredNorms[row] as number) / 2;
    });
    // Every row's squared distance to every candidate: the scores x . c - |c|^2 / 2 of all candidates.
    const distances = new Float64Array(trials * count);
    // One run for all rows (a few candidates: the scores are small), as nearestCentroids chunks them.
    for await (const block of gemmTopK(vectors, count, centroids, trials, dim, { k: trials, bias, chunkSize: Math.max(1, Math.floor((1 << 22) / trials)), ...(threads !== undefined ? { threads } : {}) })) {
      for (let q = 0; q < block.queryCount; q++) {
        const row = block.queryOffset + q;
        for (let j = 0; j < trials; j++) {
          const t = block.indices[q * trials + j] as number;
          distances[t * count + row] = Math.min(closest[row] as number, Math.max(0, (squaredNorms[row] as number) - 2 * (block.similarities[q * trials + j] as number)));
        }
      }
    }
    let best = 0;
    let bestPotential = Infinity;
    for (let t = 0; t < trials; t++) {
      let p = 0;
      for (let i = t * count, end = i + count; i < end; i++) p += distances[i] as number;
      if (p < bestPotential) {
        bestPotential = p;
        best = t;
      }
    }
    const row = candidates[best] as number;
    closest.set(distances.subarray(best * count, (best + 1) * count));
    closest[row] = 0;
    potential = bestPotential;
    order.push(row);
  }
  return Int32Array.from(order);
}
