/**
 * @file Public types of an evaluation: its parameters, its metrics and the definitions written into
 * every report. The implementation is in evaluate-embeddings.ts (embeddings -> metrics) and
 * evaluate-model.ts (model + dataset -> embeddings -> metrics).
 */
import { CLUSTERING_METRIC_DEFINITIONS } from '../metrics/clustering.js';
import { FULL_RANKING_METRIC_DEFINITIONS } from '../metrics/full-ranking.js';
import type { KMeansInit } from '../metrics/kmeans-options.js';
import { RETRIEVAL_METRIC_DEFINITIONS } from '../metrics/retrieval.js';
import { DEFAULT_QUERY_CHUNK } from '../util/defaults.js';
import type { ClusterCountSpec } from './cluster-counts.js';

/** Exact chunked search, or an HNSW index (whose recall against exact search is then reported). */
export type IndexParameters =
  | { kind: 'exact'; chunkSize: number }
  | { kind: 'hnsw'; m: number; efConstruction: number; ef: number; seed: number };

/** Recall@K values when neither the caller nor the dataset protocol gives any. */
export const DEFAULT_KS: readonly number[] = [1, 2, 4, 8];

/** The index when none is asked for: exact search, 512 queries per chunk (`dml eval --index exact --chunk-size 512`). */
export const DEFAULT_INDEX: IndexParameters = { kind: 'exact', chunkSize: DEFAULT_QUERY_CHUNK };

/** k-means settings used for NMI, NMI+ and F1. */
export interface KMeansParameters {
  /** Seeding method (see metrics/kmeans-seeding.ts). */
  init: KMeansInit;
  /** k-means++ round size as a fraction of the centroids chosen so far (0 = sequential k-means++). */
  roundFraction: number;
  /** Cap on Lloyd iterations per run. */
  maxIterations: number;
  /** Convergence tolerance on the relative inertia change of one iteration. */
  tolerance: number;
  restarts: number;
  seed: number;
}

/** Which embeddings are clustered for NMI/F1. */
export type ClusterSet = 'union' | 'query' | 'gallery';

/** Every {@link ClusterSet}, for parsers and messages. */
export const CLUSTER_SETS: readonly ClusterSet[] = ['union', 'query', 'gallery'];

/** Everything that determines the metrics (recorded in every report). */
export interface EvaluationParameters {
  /** K values of Recall@K. */
  ks: number[];
  /** Cluster counts as requested (`10`, `5x`, ...). */
  clusterCounts: ClusterCountSpec[];
  /** The cluster counts after resolving multiples of the label count and capping at the point count. */
  resolvedClusterCounts: number[];
  clusterSet: ClusterSet;
  index: IndexParameters;
  kmeans: KMeansParameters;
  /** Self-exclusion rule: a query is removed from its own ranking by id. */
  selfExclusion: 'by-id';
  /** Number of neighbours retrieved per query (max K and max R). */
  neighboursRetrieved: number;
  /** Whether MRR and mAP over the whole ranking were computed (`dml eval --no-full-ranking`: not). */
  fullRanking: boolean;
}

/** One point of the NMI+ curve. */
export interface NmiCurvePoint {
  /** Number of k-means clusters. */
  clusters: number;
  nmi: number;
  /** Pairwise clustering F1 at this cluster count. */
  f1: number;
  /** k-means objective (sum of squared distances) of the kept restart. */
  inertia: number;
  /** Lloyd iterations the kept restart ran. */
  iterations: number;
  /** Whether it stopped by convergence (false: it hit the iteration cap). */
  converged: boolean;
}

/** The retrieval metrics of the queries of one label. */
export interface ClassMetrics {
  label: string;
  queryCount: number;
  recallAt1: number;
  rPrecision: number | null;
  mapAtR: number | null;
}

/**
 * The metrics of PyTorch Metric Learning's `AccuracyCalculator` under its names, as its `get_accuracy`
 * returns them with `k = None` (the whole ranking): the kNN metrics over the non-lone queries; NMI and
 * AMI of dmlkit's k-means at K = the label count (PML clusters the queries: `--cluster-set query`, or
 * a query set that is the gallery). Values a set of lone queries leaves undefined are null (PML: 0).
 */
export interface AccuracyCalculatorMetrics {
  /** Precision@1 over the non-lone queries (not Recall@1: lone queries are left out). */
  precision_at_1: number | null;
  /** = rPrecision. */
  r_precision: number | null;
  /** = mapAtR. */
  mean_average_precision_at_r: number | null;
  /** = map (over the whole ranking). */
  mean_average_precision: number | null;
  /** = mrr. */
  mean_reciprocal_rank: number | null;
  /** = nmi. */
  NMI: number;
  /** = ami. */
  AMI: number;
}

/** The metrics of one evaluation. */
export interface EvaluationMetrics {
  /** Recall@K keyed by K, in [0, 1]. Lone queries count as misses. */
  recall: Record<string, number>;
  /** = Recall@1. */
  precisionAt1: number;
  /** Over non-lone queries; null when every query is lone. */
  rPrecision: number | null;
  /** Over non-lone queries; null when every query is lone. */
  mapAtR: number | null;
  /** Mean reciprocal rank over the whole ranking, over non-lone queries; null when every query is lone or without the whole ranking. */
  mrr: number | null;
  /** Mean average precision over the whole ranking, over non-lone queries; null when every query is lone or without the whole ranking. */
  map: number | null;
  /** MAP@K keyed by K (the Recall@K values; PML's mean_average_precision with k = K), over non-lone queries; null when every query is lone. */
  mapAtK: Record<string, number> | null;
  /** NMI with K = number of distinct labels in the clustered set. */
  nmi: number;
  /** Adjusted mutual information of the same clustering (chance-corrected; negative when worse than chance). */
  ami: number;
  /** The NMI curve: NMI (and F1) at each requested cluster count. */
  nmiCurve: NmiCurvePoint[];
  /** NMI+ (Levi et al.): the curve's NMI at 10x the label count; null when 10x is not among the cluster counts. */
  nmiPlus: number | null;
  /** Pairwise clustering F1 with K = number of distinct labels. */
  f1: number;
  /** Queries without any same-label gallery item (other than themselves). */
  loneQueries: number;
  queryCount: number;
  galleryCount: number;
  /** Distinct labels in the clustered set. */
  labelCount: number;
  /** The same values under PyTorch Metric Learning's AccuracyCalculator names and conventions. */
  accuracyCalculator: AccuracyCalculatorMetrics;
  /**
   * Recall@1, R-Precision and MAP@R per query label, worst first (by MAP@R, then Recall@1, then label;
   * labels whose queries are all lone last).
   */
  perClass: ClassMetrics[];
  /** With an HNSW index: recall@K of its neighbours against exact search (|HNSW top-K ∩ exact top-K| / K). */
  annRecall?: Record<string, number>;
}

/** Seconds spent per stage. */
export interface EvaluationTimings {
  embedSeconds?: number;
  searchSeconds: number;
  exactReferenceSeconds?: number;
  indexBuildSeconds?: number;
  clusteringSeconds: number;
}

/**
 * The definitions written into every report, so numbers are never read with another toolkit's meaning:
 * the retrieval and clustering metrics' own definitions plus what the evaluation adds.
 */
export const METRIC_DEFINITIONS = {
  ...RETRIEVAL_METRIC_DEFINITIONS,
  ...FULL_RANKING_METRIC_DEFINITIONS,
  ...CLUSTERING_METRIC_DEFINITIONS,
  accuracyCalculator:
    "AccuracyCalculator: PyTorch Metric Learning's names with k = None: precision_at_1 over non-lone queries (Recall@1 counts lone queries as misses), " +
    'r_precision, mean_average_precision_at_r, mean_average_precision (= mAP), mean_reciprocal_rank (= MRR); NMI and AMI of the clustering at K = the label count ' +
    '(PML clusters the queries alone); null where every query is lone (PML returns 0).',
  nmiClusters: 'NMI and F1 use k-means with K = number of distinct labels in the clustered set (query and gallery items, each once; --cluster-set query or gallery clusters that set alone).',
  nmiCurve: 'NMI curve = the same NMI at each listed cluster count (more clusters than labels shows class collapse).',
  perClass: 'Per class: Recall@1, R-Precision and MAP@R averaged over the queries of each label (as the overall values), worst classes first.',
  nmiPlus: 'NMI+ = the NMI with K = 10 x the number of distinct labels in the clustered set (capped at the item count), as Levi et al. 2021 report it; null unless 10x is among the cluster counts.',
  kmeans: 'Euclidean k-means on the L2-normalised embeddings: seeded k-means++ (D² sampling in rounds) or random initialisation, Lloyd iterations until the relative inertia change is at most the tolerance (or the assignment stops changing, or the cap), restarts keep the lowest inertia.',
  annRecall: 'ANN recall@K = mean over queries of |HNSW top-K ∩ exact top-K| / K on the same embeddings.',
} as const;
