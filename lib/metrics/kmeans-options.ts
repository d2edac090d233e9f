/**
 * @file The k-means settings' names and defaults (kmeans.ts, kmeans-seeding.ts), apart from the
 * implementations so that command-line help and reports can name them without loading onnxruntime.
 */

/**
 * How initial centroids are chosen: greedy k-means++ (scikit-learn's: each centroid the best of
 * 2 + ln(k) D² draws), k-means++ (D² sampling, in rounds) or uniformly random rows.
 */
export type KMeansInit = 'greedy-k-means++' | 'k-means++' | 'random';

/** The seeding methods, for messages and the CLI. */
export const KMEANS_INITS: readonly [KMeansInit, ...KMeansInit[]] = ['greedy-k-means++', 'k-means++', 'random'];

/** Default `roundFraction`: each k-means++ round draws a quarter of the count chosen so far. */
export const DEFAULT_ROUND_FRACTION = 0.25;

/** Default cap on Lloyd iterations per run. */
export const DEFAULT_MAX_ITERATIONS = 100;
/** Default convergence tolerance on the relative inertia change of one iteration. */
export const DEFAULT_TOLERANCE = 1e-4;
