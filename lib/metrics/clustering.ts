/**
 * @file Clustering scores of a cluster assignment against the true labels: normalised mutual
 * information (NMI, also used for the NMI+ sweep), adjusted mutual information (AMI, chance-corrected)
 * and the pairwise clustering F1.
 *
 * All work on a sparse contingency table (only the non-zero label x cluster cells, at most one per
 * item), so 11k labels x 300k clusters cost O(N) memory, not a dense K x L matrix. Labels and
 * clusters are arbitrary Int32 values (negative and non-contiguous values are fine). Sums run in
 * (label value, cluster value) order, so the scores do not depend on the order of the items.
 */

import { DmlError, invalidParameterError } from '../errors.js';

/** The definitions written into every report next to the values. */
export const CLUSTERING_METRIC_DEFINITIONS = {
  nmi:
    'NMI = 2 I(Y;C) / (H(Y) + H(C)) (arithmetic mean of the entropies, natural log; = scikit-learn ' +
    "normalized_mutual_info_score(average_method='arithmetic')); 1 if labels and clusters are both a single group, " +
    '0 if exactly one of them is.',
  ami:
    'AMI = (I(Y;C) - E[I]) / ((H(Y) + H(C)) / 2 - E[I]), E[I] the expected mutual information of two random partitions with ' +
    "the same group sizes (hypergeometric model; = scikit-learn adjusted_mutual_info_score(average_method='arithmetic'), " +
    "PML's AMI); 0 in expectation for a random clustering, 1 for a perfect one, negative when worse than chance; at K = the label count.",
  pairwiseF1:
    'Pairwise clustering F1 over all unordered item pairs: TP = pairs in the same cluster with the same label; ' +
    'precision = TP / same-cluster pairs, recall = TP / same-label pairs, F1 = 2PR / (P + R); ' +
    'a ratio with a zero denominator is 0.',
} as const;

/** Pairwise clustering precision, recall and F1, with the exact pair counts they come from. */
export interface PairwiseClusteringF1 {
  /** truePositivePairs / sameClusterPairs; 0 when no two items share a cluster. */
  precision: number;
  /** truePositivePairs / sameLabelPairs; 0 when no two items share a label. */
  recall: number;
  /** 2 * precision * recall / (precision + recall); 0 when both are 0. */
  f1: number;
  /** Unordered pairs in the same cluster and with the same label: sum over cells C(n_lc, 2). */
  truePositivePairs: number;
  /** Unordered pairs in the same cluster: sum over clusters C(n_c, 2). */
  sameClusterPairs: number;
  /** Unordered pairs with the same label: sum over labels C(n_l, 2). */
  sameLabelPairs: number;
}

/**
 * Largest item count for which every pair count is an exact float64 integer: 2^27 items give at most
 * 2^27 (2^27 - 1) / 2 = 2^53 - 2^26 pairs, below 2^53. (SOP's 60,502 test images give ~1.8e9 pairs.)
 */
export const MAX_ITEMS_FOR_EXACT_PAIR_COUNTS = 2 ** 27;

/**
 * Normalised mutual information between the true labels Y and the clusters C (natural log, float64):
 *
 *   I(Y;C) = sum over non-zero cells (n_lc / N) * ln(N * n_lc / (n_l * n_c))
 *   H(Y)   = -sum_l (n_l / N) * ln(n_l / N),  H(C) likewise
 *   NMI    = I(Y;C) / ((H(Y) + H(C)) / 2)
 *
 * Degenerate cases follow scikit-learn 1.2 `normalized_mutual_info_score`: 1 when labels and clusters
 * are both a single group (nothing to split, a perfect match); 0 when exactly one of them is a single
 * group (then I = 0). The result is clipped to [0, 1] against rounding (identical partitions such as
 * [5, 5, 4] would otherwise score 1 + 2^-52).
 */
export function normalizedMutualInformation(labels: Int32Array, clusters: Int32Array): number {
  const table = buildSparseContingency(labels, clusters);
  if (table.labelSizes.length === 1 && table.clusterSizes.length === 1) return 1;
  const n = table.itemCount;
  const mutualInformation = mutualInformationOf(table);
  // Exactly one side a single group: every cell's log argument is N n / (N n) = 1 exactly, so I = 0
  // and NMI = 0 (the mean entropy is positive).
  const meanEntropy = (entropy(table.labelSizes, n) + entropy(table.clusterSizes, n)) / 2;
  return Math.min(1, Math.max(0, mutualInformation) / meanEntropy);
}

/**
 * Adjusted mutual information between the true labels Y and the clusters C (natural log, float64), as
 * scikit-learn 1.2 `adjusted_mutual_info_score(average_method='arithmetic')` (Vinh, Epps and Bailey,
 * "Information Theoretic Measures for Clusterings Comparison", JMLR 2010):
 *
 *   AMI = (I(Y;C) − E[I]) / ((H(Y) + H(C)) / 2 − E[I])
 *   E[I] = Σ_l Σ_c Σ_{n = max(1, a_l + b_c − N)}^{min(a_l, b_c)} (n / N) ln(N n / (a_l b_c))
 *          · a_l! b_c! (N − a_l)! (N − b_c)! / (N! n! (a_l − n)! (b_c − n)! (N − a_l − b_c + n)!)
 *
 * with a_l the label sizes and b_c the cluster sizes. The terms depend on (a_l, b_c) only, so the sum
 * runs over the distinct label sizes x distinct cluster sizes, each weighted by how many labels and
 * clusters have it (scikit-learn sums every label x cluster pair: the same terms). Log-factorials come
 * from one table of cumulative logarithms. Degenerate cases as scikit-learn: 1 when labels and clusters
 * are both a single group; E[I] = 0 when either is; a denominator within float64 epsilon of 0 keeps
 * its sign at ±epsilon.
 */
export function adjustedMutualInformation(labels: Int32Array, clusters: Int32Array): number {
  const table = buildSparseContingency(labels, clusters);
  if (table.labelSizes.length === 1 && table.clusterSizes.length === 1) return 1;
  const n = table.itemCount;
  const mutualInformation = mutualInformationOf(table);
  const expected = expectedMutualInformation(table.labelSizes, table.clusterSizes, n);
  const meanEntropy = (entropy(table.labelSizes, n) + entropy(table.clusterSizes, n)) / 2;
  let denominator = meanEntropy - expected;
  denominator = denominator < 0 ? Math.min(denominator, -Number.EPSILON) : Math.max(denominator, Number.EPSILON);
  return (mutualInformation - expected) / denominator;
}

/** E[I] of random partitions with these group sizes (see {@link adjustedMutualInformation}). */
function expectedMutualInformation(labelSizes: Float64Array, clusterSizes: Float64Array, n: number): number {
  if (labelSizes.length === 1 || clusterSizes.length === 1) return 0;
  // logFactorial[k] = ln k!, k = 0..N.
  const logFactorial = new Float64Array(n + 1);
  for (let k = 2; k <= n; k++) logFactorial[k] = logFactorial[k - 1]! + Math.log(k);
  const labelGroups = sizeMultiplicities(labelSizes);
  const clusterGroups = sizeMultiplicities(clusterSizes);
  const logN = Math.log(n);
  let sum = 0;
  for (const [a, labelCount] of labelGroups) {
    for (const [b, clusterCount] of clusterGroups) {
      const fixed = logFactorial[a]! + logFactorial[b]! + logFactorial[n - a]! + logFactorial[n - b]! - logFactorial[n]!;
      let pairSum = 0;
      for (let cell = Math.max(1, a + b - n); cell <= Math.min(a, b); cell++) {
        const logProbability = fixed - logFactorial[cell]! - logFactorial[a - cell]! - logFactorial[b - cell]! - logFactorial[n - a - b + cell]!;
        pairSum += (cell / n) * (logN + Math.log(cell) - Math.log(a) - Math.log(b)) * Math.exp(logProbability);
      }
      sum += labelCount * clusterCount * pairSum;
    }
  }
  return sum;
}

/** The distinct group sizes, ascending, each with the number of groups of that size. */
function sizeMultiplicities(sizes: Float64Array): Array<[number, number]> {
  const counts = new Map<number, number>();
  for (const size of sizes) counts.set(size, (counts.get(size) ?? 0) + 1);
  return [...counts].sort((x, y) => x[0] - y[0]);
}

/** I(Y;C) = Σ over non-zero cells (n_lc / N) ln(N n_lc / (n_l n_c)). */
function mutualInformationOf(table: SparseContingency): number {
  const n = table.itemCount;
  let mutualInformation = 0;
  for (let cell = 0; cell < table.cellSizes.length; cell++) {
    const cellSize = table.cellSizes[cell]!;
    const labelSize = table.labelSizes[table.cellLabels[cell]!]!;
    const clusterSize = table.clusterSizes[table.cellClusters[cell]!]!;
    mutualInformation += (cellSize / n) * Math.log((n * cellSize) / (labelSize * clusterSize));
  }
  return mutualInformation;
}

/**
 * Pairwise clustering F1 over all N (N - 1) / 2 unordered item pairs:
 *
 *   TP = sum over cells C(n_lc, 2),  same-cluster pairs = sum_c C(n_c, 2),  same-label pairs = sum_l C(n_l, 2)
 *   P = TP / same-cluster pairs,  R = TP / same-label pairs,  F1 = 2PR / (P + R)
 *
 * A zero denominator gives 0 (scikit-learn's zero_division default). Counts are float64 integers,
 * exact because N <= `MAX_ITEMS_FOR_EXACT_PAIR_COUNTS` keeps every count and partial sum below
 * 2^53 (larger inputs are rejected), and plain numbers serialise to JSON reports unlike BigInt.
 */
export function pairwiseClusteringF1(labels: Int32Array, clusters: Int32Array): PairwiseClusteringF1 {
  if (labels instanceof Int32Array && labels.length > MAX_ITEMS_FOR_EXACT_PAIR_COUNTS) {
    throw invalidParameterError('labels', `at most ${MAX_ITEMS_FOR_EXACT_PAIR_COUNTS} items (exact pair counts)`, labels);
  }
  const table = buildSparseContingency(labels, clusters);
  const truePositivePairs = sumOfPairCounts(table.cellSizes);
  const sameClusterPairs = sumOfPairCounts(table.clusterSizes);
  const sameLabelPairs = sumOfPairCounts(table.labelSizes);
  const precision = sameClusterPairs > 0 ? truePositivePairs / sameClusterPairs : 0;
  const recall = sameLabelPairs > 0 ? truePositivePairs / sameLabelPairs : 0;
  const f1 = precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
  return { precision, recall, f1, truePositivePairs, sameClusterPairs, sameLabelPairs };
}

/** Non-zero cells of the label x cluster contingency table, with the row and column sums. */
interface SparseContingency {
  itemCount: number;
  /** Items per label group; group g is the g-th smallest distinct label value. */
  labelSizes: Float64Array;
  /** Items per cluster group; group g is the g-th smallest distinct cluster value. */
  clusterSizes: Float64Array;
  /** Label group of each non-zero cell; cells are sorted by (label group, cluster group). */
  cellLabels: Int32Array;
  /** Cluster group of each non-zero cell. */
  cellClusters: Int32Array;
  /** Items in each non-zero cell. */
  cellSizes: Float64Array;
}

function buildSparseContingency(labels: Int32Array, clusters: Int32Array): SparseContingency {
  if (!(labels instanceof Int32Array)) throw invalidParameterError('labels', 'an Int32Array', labels);
  if (!(clusters instanceof Int32Array)) throw invalidParameterError('clusters', 'an Int32Array', clusters);
  if (clusters.length !== labels.length) {
    throw invalidParameterError('clusters', `an Int32Array of length ${labels.length} (one cluster per label)`, clusters);
  }
  const itemCount = labels.length;
  if (itemCount === 0) throw new DmlError('E_EMPTY', 'Cannot compute clustering scores of an empty set');

  const labelGroups = groupIndices(labels);
  const clusterGroups = groupIndices(clusters);
  const labelSizes = new Float64Array(labelGroups.groupCount);
  const clusterSizes = new Float64Array(clusterGroups.groupCount);
  for (let item = 0; item < itemCount; item++) {
    labelSizes[labelGroups.groupOfItem[item]!]!++;
    clusterSizes[clusterGroups.groupOfItem[item]!]!++;
  }

  // Counting sort of the items by label group, then one pass per label group over its items.
  const labelStart = new Int32Array(labelGroups.groupCount + 1);
  for (let group = 0; group < labelGroups.groupCount; group++) labelStart[group + 1] = labelStart[group]! + labelSizes[group]!;
  const nextSlot = labelStart.slice(0, labelGroups.groupCount);
  const itemsByLabel = new Int32Array(itemCount);
  for (let item = 0; item < itemCount; item++) itemsByLabel[nextSlot[labelGroups.groupOfItem[item]!]!++] = item;

  const cellLabels = new Int32Array(itemCount);
  const cellClusters = new Int32Array(itemCount);
  const cellSizes = new Float64Array(itemCount);
  const itemsInClusterOfThisLabel = new Int32Array(clusterGroups.groupCount);
  const touchedClusters = new Int32Array(itemCount);
  let cellCount = 0;
  for (let labelGroup = 0; labelGroup < labelGroups.groupCount; labelGroup++) {
    let touchedCount = 0;
    for (let slot = labelStart[labelGroup]!; slot < labelStart[labelGroup + 1]!; slot++) {
      const clusterGroup = clusterGroups.groupOfItem[itemsByLabel[slot]!]!;
      if (itemsInClusterOfThisLabel[clusterGroup]!++ === 0) touchedClusters[touchedCount++] = clusterGroup;
    }
    const touched = touchedClusters.subarray(0, touchedCount).sort();
    for (const clusterGroup of touched) {
      cellLabels[cellCount] = labelGroup;
      cellClusters[cellCount] = clusterGroup;
      cellSizes[cellCount] = itemsInClusterOfThisLabel[clusterGroup]!;
      cellCount++;
      itemsInClusterOfThisLabel[clusterGroup] = 0;
    }
  }
  return {
    itemCount,
    labelSizes,
    clusterSizes,
    cellLabels: cellLabels.subarray(0, cellCount),
    cellClusters: cellClusters.subarray(0, cellCount),
    cellSizes: cellSizes.subarray(0, cellCount),
  };
}

/** Maps each value to the rank of its value among the distinct values (0 = smallest). */
function groupIndices(values: Int32Array): { groupOfItem: Int32Array; groupCount: number } {
  const sorted = values.slice().sort();
  const groupOfValue = new Map<number, number>();
  for (const value of sorted) if (!groupOfValue.has(value)) groupOfValue.set(value, groupOfValue.size);
  return { groupOfItem: Int32Array.from(values, (value) => groupOfValue.get(value)!), groupCount: groupOfValue.size };
}

/** H = -sum_g (n_g / N) * (ln n_g - ln N), over the non-empty groups. */
function entropy(groupSizes: Float64Array, itemCount: number): number {
  const logItemCount = Math.log(itemCount);
  let sum = 0;
  for (const size of groupSizes) sum -= (size / itemCount) * (Math.log(size) - logItemCount);
  return sum;
}

/** sum_g C(n_g, 2) = sum_g n_g (n_g - 1) / 2, exact while the total stays below 2^53. */
function sumOfPairCounts(groupSizes: Float64Array): number {
  let pairs = 0;
  for (const size of groupSizes) pairs += (size * (size - 1)) / 2;
  return pairs;
}
