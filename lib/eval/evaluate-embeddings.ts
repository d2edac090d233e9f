/**
 * @file Embeddings -> metrics. Given a query set and a gallery set (or one set used as both), it runs
 * the search (exact chunked GEMM + top-k, or HNSW plus an exact reference), streams the neighbour
 * blocks into the retrieval metrics and the exact search's score rows into the metrics of the whole
 * ranking (MRR, mAP; with HNSW from its exact reference pass), clusters the embeddings with k-means over the requested cluster
 * counts, and returns metrics, parameters and timings. Memory stays bounded: no query x gallery matrix.
 */
import { DmlError, invalidParameterError } from '../errors.js';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import { adjustedMutualInformation, normalizedMutualInformation, pairwiseClusteringF1 } from '../metrics/clustering.js';
import { FullRankingAccumulator } from '../metrics/full-ranking.js';
import { kmeansSweep } from '../metrics/kmeans.js';
import { DEFAULT_MAX_ITERATIONS, DEFAULT_ROUND_FRACTION, DEFAULT_TOLERANCE, type KMeansInit } from '../metrics/kmeans-options.js';
import { encodeLabels } from '../metrics/labels.js';
import { RetrievalMetricsAccumulator } from '../metrics/retrieval.js';
import { exactSearch } from '../search/exact.js';
import { HnswIndex } from '../search/hnsw.js';
import type { NeighbourBlock } from '../search/neighbours.js';
import type { NeighbourRecorder } from './saved-neighbours.js';
import { ConfusionCounter, similarityHistograms, type RunDiagnostics } from './diagnostics.js';
import { DEFAULT_EXAMPLE_NEIGHBOURS, DEFAULT_EXAMPLES, RetrievalExampleSampler, type RetrievalExample } from './retrieval-examples.js';
import { clampedClusterCountsWarning, DEFAULT_CLUSTER_COUNTS, nmiPlusOf, resolveClusterCounts, type ClusterCountSpec } from './cluster-counts.js';
import { CLUSTER_SETS, DEFAULT_INDEX, DEFAULT_KS } from './evaluation.js';
import type {
  ClassMetrics,
  ClusterSet,
  EvaluationMetrics,
  EvaluationParameters,
  EvaluationTimings,
  IndexParameters,
  KMeansParameters,
  NmiCurvePoint,
} from './evaluation.js';

/** Options of {@link evaluateEmbeddings}; every one has `dml eval`'s default. */
export interface EvaluateEmbeddingsOptions {
  /** K values of Recall@K. Default {@link DEFAULT_KS} (1, 2, 4, 8). */
  ks?: readonly number[];
  /** Cluster counts of the NMI curve (1x is always added: it gives NMI and F1). Default {@link DEFAULT_CLUSTER_COUNTS}. */
  clusterCounts?: readonly ClusterCountSpec[];
  /** Which embeddings are clustered for NMI/F1. Default `union`. */
  clusterSet?: ClusterSet;
  /** Exact search or HNSW. Default {@link DEFAULT_INDEX} (exact, 512 queries per chunk). */
  index?: IndexParameters;
  /**
   * k-means settings; omitted fields take the k-means defaults (seed 0, k-means++, 100 iterations,
   * tolerance 1e-4, 1 restart).
   */
  kmeans?: { seed?: number; maxIterations?: number; tolerance?: number; restarts?: number; init?: KMeansInit; roundFraction?: number };
  /**
   * Retrieval examples kept for the reports: `count` queries per selection, a seeded random sample
   * (the same queries for every model) and the lowest AP@R (default {@link DEFAULT_EXAMPLES}, 0 for
   * none), with `neighbours` each (default {@link DEFAULT_EXAMPLE_NEIGHBOURS}); sampled with the
   * k-means seed.
   */
  examples?: { count?: number; neighbours?: number };
  /** onnxruntime threads for the search and k-means kernels. Default: onnxruntime's. */
  threads?: number;
  /**
   * MRR and mAP over the whole ranking (each query's similarity to every gallery item is read; about as
   * much time again as the search). Default true; false leaves `mrr` and `map` null.
   */
  fullRanking?: boolean;
  /**
   * Called with every block of neighbours the metrics are computed from (rows of `sets.gallery`
   * nearest first, the query itself excluded; HNSW's with `index.kind` `hnsw`), with the query and
   * gallery sets the rows index; for saving them (see {@link NeighbourRecorder}).
   */
  onNeighbours?: (block: NeighbourBlock, sets: { query: EmbeddingSet; gallery: EmbeddingSet }) => void;
  /**
   * Progress per stage: `stage` is `search`, `hnsw search`, `exact reference` (queries done),
   * `hnsw build` (gallery rows added) or `k-means` (runs done of restarts x cluster counts).
   */
  onProgress?: (stage: string, done: number, total: number) => void;
  /** Stops the work between chunks; the promise then rejects with DmlError `E_CANCELLED`. */
  signal?: AbortSignal;
}

/** Result of {@link evaluateEmbeddings}. */
export interface EmbeddingEvaluation {
  metrics: EvaluationMetrics;
  parameters: EvaluationParameters;
  timings: EvaluationTimings;
  /** True when every query is also a gallery item (same id). */
  sameSet: boolean;
  /** A seeded sample of failing and succeeding queries with their top neighbours. */
  examples: RetrievalExample[];
  /** The label pairs most often confused in the top K and the pair-similarity histograms (eval/diagnostics.ts). */
  diagnostics: RunDiagnostics;
  /**
   * Warnings about the numbers, one line each, for the caller to show and record (nothing is printed
   * here): a single-class set (retrieval trivially perfect), cluster counts capped at the item count.
   */
  warnings: string[];
}

const seconds = (start: number): number => (performance.now() - start) / 1000;

/**
 * For each query, the gallery row with the same id, or -1. This is the by-id self-exclusion of the
 * canonical definitions: it works for query set = gallery set and for partial overlaps.
 */
export function selfIndexById(queryIds: readonly string[], galleryIds: readonly string[]): Int32Array {
  const rowOfId = new Map<string, number>();
  galleryIds.forEach((id, row) => rowOfId.set(id, row));
  return Int32Array.from(queryIds, (id) => rowOfId.get(id) ?? -1);
}

function checkSet(set: EmbeddingSet, name: string): void {
  if (set.count === 0) throw new DmlError('E_EMPTY', `The ${name} set is empty; nothing to evaluate`);
  if (set.vectors.length !== set.count * set.dim || set.ids.length !== set.count || set.labels.length !== set.count) {
    throw new DmlError(
      'E_EMBEDDING',
      `The ${name} set is inconsistent: ${set.vectors.length} values, ${set.ids.length} ids, ${set.labels.length} labels for ${set.count} x ${set.dim}`,
    );
  }
}

/** At most this many labels are quoted in a label-mismatch message. */
const LABELS_QUOTED = 3;

/**
 * Checks that the query labels occur among the gallery labels: none at all is an E_DATASET error (the
 * metrics would all be 0, typically string labels against integer ones, or two label files that do
 * not belong together); some missing gives a warning naming how many queries and which labels.
 */
export function checkQueryLabelsInGallery(queryLabels: readonly string[], galleryLabels: readonly string[]): string | undefined {
  const gallery = new Set(galleryLabels);
  const missing = new Map<string, number>();
  for (const label of queryLabels) if (!gallery.has(label)) missing.set(label, (missing.get(label) ?? 0) + 1);
  if (missing.size === 0) return undefined;
  const quote = (labels: Iterable<string>): string => {
    const list = [...labels];
    return list.slice(0, LABELS_QUOTED).map((l) => JSON.stringify(l)).join(', ') + (list.length > LABELS_QUOTED ? ', ...' : '');
  };
  const queries = [...missing.values()].reduce((a, b) => a + b, 0);
  if (queries === queryLabels.length) {
    throw new DmlError(
      'E_DATASET',
      `none of the ${queryLabels.length} query labels occurs among the gallery labels (queries: ${quote(missing.keys())}; gallery: ${quote(gallery)}); expected the query and gallery sets to share labels (string against integer labels?)`,
    );
  }
  return `${queries} of ${queryLabels.length} queries have a label that never occurs in the gallery (${quote(missing.keys())}); they count as misses`;
}

/**
 * Evaluates `query` against `gallery` (pass the same object, or null, for the query set = gallery set
 * protocol). Vectors must already be L2-normalised.
 */
export async function evaluateEmbeddings(
  query: EmbeddingSet,
  gallery: EmbeddingSet | null,
  options: EvaluateEmbeddingsOptions = {},
): Promise<EmbeddingEvaluation> {
  const g = gallery ?? query;
  checkSet(query, 'query');
  checkSet(g, 'gallery');
  if (query.dim !== g.dim) {
    throw new DmlError('E_EMBEDDING', `Query embeddings have dimension ${query.dim} but gallery embeddings have ${g.dim}`);
  }
  const ks = [...(options.ks ?? DEFAULT_KS)];
  if (ks.length === 0 || !ks.every((k) => Number.isInteger(k) && k > 0)) throw invalidParameterError('ks', 'a non-empty list of positive integers', options.ks);
  const index = options.index ?? DEFAULT_INDEX;
  const clusterCountSpecs = options.clusterCounts ?? DEFAULT_CLUSTER_COUNTS;
  const clusterSet = options.clusterSet ?? 'union';
  if (!CLUSTER_SETS.includes(clusterSet)) throw invalidParameterError('clusterSet', `one of ${CLUSTER_SETS.join(', ')}`, clusterSet);
  const kmeansSeed = options.kmeans?.seed ?? 0;
  const selfIndex = selfIndexById(query.ids, g.ids);
  const sameSet = g === query || (query.count === g.count && selfIndex.every((row) => row >= 0));
  const anySelf = selfIndex.some((row) => row >= 0);
  const maxK = Math.max(...ks);
  const reachable = g.count - (anySelf ? 1 : 0);
  if (maxK > reachable) {
    throw new DmlError(
      'E_EMPTY',
      `K = ${maxK} is larger than the gallery: ${g.count} items${anySelf ? ', minus the query itself' : ''}, so at most K = ${reachable}`,
    );
  }

  const labels = encodeLabels(query.labels, g.labels);
  const warnings: string[] = [];
  const labelWarning = checkQueryLabelsInGallery(query.labels, g.labels);
  if (labelWarning !== undefined) warnings.push(labelWarning);
  if (labels.labelNames.length === 1) {
    warnings.push(
      `every item has the same label (${JSON.stringify(labels.labelNames[0])}): with a single class every retrieval metric (Recall@K, R-Precision, MAP@R) is trivially 100 and NMI says nothing; evaluate on at least 2 classes`,
    );
  }
  const accumulator = new RetrievalMetricsAccumulator({
    queryLabelCodes: labels.queryCodes,
    galleryLabelCodes: labels.galleryCodes,
    recallK: ks,
    querySelfIndex: selfIndex,
  });
  const withScores = options.fullRanking ?? true;
  const fullRanking = withScores ? new FullRankingAccumulator({ queryLabelCodes: labels.queryCodes, galleryLabelCodes: labels.galleryCodes, querySelfIndex: selfIndex }) : undefined;
  const addScores = (block: NeighbourBlock): void => fullRanking?.add(block.queryOffset, block.queryCount, block.scores as Float32Array);
  const scores = { hasPositive: (q: number) => accumulator.relevantCount(q) > 0, averagePrecision: (q: number) => accumulator.averagePrecisionAtR(q) };
  const examples = new RetrievalExampleSampler(query, g, scores, {
    count: options.examples?.count ?? DEFAULT_EXAMPLES,
    neighbours: options.examples?.neighbours ?? DEFAULT_EXAMPLE_NEIGHBOURS,
    seed: kmeansSeed,
  });
  const confusions = new ConfusionCounter(labels.queryCodes, labels.galleryCodes, labels.labelNames, maxK);
  // Rows of queries that are in the gallery come back padded where fewer than k others exist.
  const k = Math.min(accumulator.requiredNeighbours, g.count);
  const threads = options.threads !== undefined ? { threads: options.threads } : {};
  const signal = options.signal !== undefined ? { signal: options.signal } : {};
  const timings: EvaluationTimings = { searchSeconds: 0, clusteringSeconds: 0 };
  const sets = { query, gallery: g };
  let annRecall: Record<string, number> | undefined;
  let effectiveIndex = index;

  if (index.kind === 'exact') {
    const start = performance.now();
    for await (const block of exactSearch(query.vectors, query.count, g.vectors, g.count, g.dim, {
      k,
      selfIndex,
      chunkSize: index.chunkSize,
      withScores,
      onProgress: (done, total) => options.onProgress?.('search', done, total),
      ...threads,
      ...signal,
    })) {
      addScores(block);
      accumulator.add(block);
      examples.add(block);
      confusions.add(block);
      options.onNeighbours?.(block, sets);
    }
    timings.searchSeconds = seconds(start);
  } else {
    const p = index;
    let start = performance.now();
    const hnsw = await HnswIndex.build(g.vectors, g.count, g.dim, {
      m: p.m,
      efConstruction: p.efConstruction,
      ef: p.ef,
      seed: p.seed,
      onProgress: (done, total) => options.onProgress?.('hnsw build', done, total),
      ...signal,
    });
    timings.indexBuildSeconds = seconds(start);
    if (k + 1 > p.ef && k > maxK) {
      warnings.push(
        `--index hnsw: ef is raised from ${p.ef} to ${k + 1} so that every query gets its R same-label neighbours for MAP@R and R-Precision (R is up to ${k} here); with ef that large HNSW is often slower than exact search, which is the better choice unless the gallery is very large`,
      );
    }
    // Keep the HNSW top-maxK of every query to compare with the exact top-maxK afterwards.
    const approxTop = new Int32Array(query.count * maxK);
    start = performance.now();
    for await (const block of hnsw.search(query.vectors, query.count, { k, selfIndex })) {
      accumulator.add(block);
      examples.add(block);
      confusions.add(block);
      options.onNeighbours?.(block, sets);
      copyTopColumns(block, maxK, approxTop);
      options.onProgress?.('hnsw search', block.queryOffset + block.queryCount, query.count);
    }
    timings.searchSeconds = seconds(start);
    effectiveIndex = { ...p, ef: hnsw.params.ef };
    start = performance.now();
    const hits = new Float64Array(ks.length);
    for await (const block of exactSearch(query.vectors, query.count, g.vectors, g.count, g.dim, {
      k: maxK,
      selfIndex,
      withScores,
      onProgress: (done, total) => options.onProgress?.('exact reference', done, total),
      ...threads,
      ...signal,
    })) {
      addScores(block);
      countOverlap(block, approxTop, maxK, ks, hits);
    }
    timings.exactReferenceSeconds = seconds(start);
    annRecall = {};
    ks.forEach((kk, i) => {
      (annRecall as Record<string, number>)[String(kk)] = (hits[i] as number) / (kk * query.count);
    });
  }
  const diagnostics: RunDiagnostics = {
    confusionK: maxK,
    confusions: confusions.result(),
    similarities: similarityHistograms(query, g, selfIndex, labels.queryCodes, labels.galleryCodes, kmeansSeed),
  };
  const retrieval = accumulator.result();
  const { mrr, map } = fullRanking?.result() ?? { mrr: null, map: null };
  const perClass = worstFirst(
    accumulator.resultPerLabel().map((m) => ({ label: labels.labelNames[m.code] as string, queryCount: m.queryCount, recallAt1: m.recallAt1, rPrecision: m.rPrecision, mapAtR: m.mapAtR })),
  );

  // Clustering: the union of query and gallery items (by id), or the queries or the gallery alone.
  const start = performance.now();
  const clustered = sameSet || clusterSet === 'query' ? query : clusterSet === 'gallery' ? g : unionById(query, g);
  const clusterLabels = encodeLabels(clustered.labels, []).queryCodes;
  const labelCount = new Set(clustered.labels).size;
  const clusterCounts = resolveClusterCounts(clusterCountSpecs, labelCount, clustered.count);
  const capped = clampedClusterCountsWarning(clusterCountSpecs, labelCount, clustered.count);
  if (capped !== undefined) warnings.push(capped);
  const kmeansParameters: KMeansParameters = {
    init: options.kmeans?.init ?? 'k-means++',
    roundFraction: options.kmeans?.roundFraction ?? DEFAULT_ROUND_FRACTION,
    maxIterations: options.kmeans?.maxIterations ?? DEFAULT_MAX_ITERATIONS,
    tolerance: options.kmeans?.tolerance ?? DEFAULT_TOLERANCE,
    restarts: options.kmeans?.restarts ?? 1,
    seed: kmeansSeed,
  };
  // One sweep: the seeding is drawn once at the largest count and shared (see metrics/kmeans.ts).
  const results = await kmeansSweep(clustered.vectors, clustered.count, clustered.dim, clusterCounts, {
    ...kmeansParameters,
    ...threads,
    ...signal,
    onProgress: (done, total) => options.onProgress?.('k-means', done, total),
  });
  const nmiCurve: NmiCurvePoint[] = results.map((result) => ({
    clusters: result.k,
    nmi: normalizedMutualInformation(clusterLabels, result.assignments),
    f1: pairwiseClusteringF1(clusterLabels, result.assignments).f1,
    inertia: result.inertia,
    iterations: result.iterationsRun,
    converged: result.converged,
  }));
  timings.clusteringSeconds = seconds(start);
  const atLabelCount = nmiCurve.find((p) => p.clusters === Math.min(labelCount, clustered.count)) as NmiCurvePoint;
  const ami = adjustedMutualInformation(clusterLabels, (results.find((r) => r.k === atLabelCount.clusters) as (typeof results)[number]).assignments);

  const recall: Record<string, number> = {};
  for (const kk of ks) recall[String(kk)] = retrieval.recall[kk] as number;
  const mapAtK = retrieval.mapAtK === null ? null : Object.fromEntries(ks.map((kk) => [String(kk), retrieval.mapAtK?.[kk] as number]));
  const metrics: EvaluationMetrics = {
    recall,
    precisionAt1: retrieval.precisionAt1,
    rPrecision: retrieval.rPrecision,
    mapAtR: retrieval.mapAtR,
    mrr,
    map,
    mapAtK,
    nmi: atLabelCount.nmi,
    ami,
    nmiCurve,
    nmiPlus: nmiPlusOf(nmiCurve, labelCount, clustered.count),
    perClass,
    f1: atLabelCount.f1,
    loneQueries: retrieval.loneQueries,
    queryCount: query.count,
    galleryCount: g.count,
    labelCount,
    accuracyCalculator: {
      precision_at_1: retrieval.precisionAt1NonLone,
      r_precision: retrieval.rPrecision,
      mean_average_precision_at_r: retrieval.mapAtR,
      mean_average_precision: map,
      mean_reciprocal_rank: mrr,
      NMI: atLabelCount.nmi,
      AMI: ami,
    },
    ...(annRecall !== undefined ? { annRecall } : {}),
  };
  const parameters: EvaluationParameters = {
    ks,
    clusterCounts: [...clusterCountSpecs],
    resolvedClusterCounts: clusterCounts,
    clusterSet,
    index: effectiveIndex,
    kmeans: kmeansParameters,
    selfExclusion: 'by-id',
    neighboursRetrieved: k,
    fullRanking: withScores,
  };
  return { metrics, parameters, timings, sameSet, examples: examples.result(), diagnostics, warnings };
}

/** Copies the first `width` neighbour indices of each query of `block` into `into` (rows of `width`). */
function copyTopColumns(block: NeighbourBlock, width: number, into: Int32Array): void {
  for (let q = 0; q < block.queryCount; q++) {
    const src = q * block.k;
    into.set(block.indices.subarray(src, src + width), (block.queryOffset + q) * width);
  }
}

/** Adds |approx top-K ∩ exact top-K| for each K of `ks` over the queries of `exact` into `hits`. */
function countOverlap(exact: NeighbourBlock, approxTop: Int32Array, width: number, ks: number[], hits: Float64Array): void {
  for (let q = 0; q < exact.queryCount; q++) {
    const approxRow = approxTop.subarray((exact.queryOffset + q) * width, (exact.queryOffset + q + 1) * width);
    ks.forEach((kk, i) => {
      const truth = new Set<number>();
      for (let j = 0; j < kk; j++) {
        const idx = exact.indices[q * exact.k + j] as number;
        if (idx >= 0) truth.add(idx);
      }
      let found = 0;
      for (let j = 0; j < kk; j++) if (truth.has(approxRow[j] as number)) found++;
      hits[i] = (hits[i] as number) + found;
    });
  }
}

/** Classes ordered worst first: by MAP@R ascending (classes whose queries are all lone last), then Recall@1, then label. */
function worstFirst(classes: ClassMetrics[]): ClassMetrics[] {
  const key = (c: ClassMetrics): number => c.mapAtR ?? Number.POSITIVE_INFINITY;
  return classes.sort((a, b) => key(a) - key(b) || a.recallAt1 - b.recallAt1 || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
}

/** The gallery plus the queries whose id is not in the gallery. */
function unionById(query: EmbeddingSet, gallery: EmbeddingSet): EmbeddingSet {
  const galleryIds = new Set(gallery.ids);
  const extra: number[] = [];
  query.ids.forEach((id, row) => {
    if (!galleryIds.has(id)) extra.push(row);
  });
  if (extra.length === 0) return gallery;
  const dim = gallery.dim;
  const vectors = new Float32Array((gallery.count + extra.length) * dim);
  vectors.set(gallery.vectors);
  extra.forEach((row, i) => vectors.set(query.vectors.subarray(row * dim, (row + 1) * dim), (gallery.count + i) * dim));
  return {
    vectors,
    count: gallery.count + extra.length,
    dim,
    ids: [...gallery.ids, ...extra.map((r) => query.ids[r] as string)],
    labels: [...gallery.labels, ...extra.map((r) => query.labels[r] as string)],
  };
}
