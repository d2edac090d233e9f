/**
 * @file Streaming retrieval metrics: Recall@K, Precision@1, R-Precision, MAP@R and MAP@K computed from
 * the neighbour lists of blocks of queries, so no query x gallery matrix is ever held. (The metrics of
 * the whole ranking, MRR and mAP, are in full-ranking.ts.)
 *
 * Usage: build a {@link RetrievalMetricsAccumulator} from the label codes (see `labels.ts`), search
 * `accumulator.requiredNeighbours` neighbours per query (self excluded by id), `add` every
 * {@link NeighbourBlock} in any order, then read `result()`.
 */

import { DmlError, invalidParameterError } from '../errors.js';
import type { NeighbourBlock } from '../search/neighbours.js';
import { countLabelCodes } from './labels.js';

/** What the accumulator needs to know about the query and gallery sets. */
export interface RetrievalMetricsOptions {
  /** Label code of each query (dense codes as produced by `encodeLabels`). */
  queryLabelCodes: Int32Array;
  /** Label code of each gallery item, same code table as `queryLabelCodes`. */
  galleryLabelCodes: Int32Array;
  /** The K values of Recall@K: distinct positive integers, in any order. */
  recallK: readonly number[];
  /**
   * For each query, the gallery row that is the query itself (same item id), or -1 when the query is
   * not in the gallery. Omit when query and gallery sets are disjoint (every entry -1).
   * It makes R = (gallery items with the query's label) - 1 for such queries.
   */
  querySelfIndex?: Int32Array;
}

/** The definitions written into every report next to the values. */
export const RETRIEVAL_METRIC_DEFINITIONS = {
  ranking:
    'Gallery items ranked by cosine similarity of L2-normalised embeddings, descending; ties broken by gallery index ascending; ' +
    'when the query is in the gallery it is removed from its own ranking by id (exact duplicates of it still count).',
  recall:
    'Recall@K (= hit@K = CMC@K): 1 if at least one of the K nearest gallery items has the query label, else 0; ' +
    'averaged over all queries, lone queries counting as misses.',
  precisionAt1: 'Precision@1 = Recall@1.',
  rPrecision:
    'R-Precision: (number of same-label items among the R nearest) / R, where R = number of gallery items with the query label, ' +
    'the query itself excluded; averaged over non-lone queries (R > 0); null if every query is lone.',
  mapAtR:
    'MAP@R: (1/R) * sum over ranks i <= R of precision@i * rel(i), rel(i) = 1 if the i-th nearest has the query label; ' +
    'averaged over non-lone queries (R > 0); null if every query is lone.',
  mapAtK:
    'MAP@K (PML mean_average_precision with k = K): (1/h) * sum over ranks i <= K of precision@i * rel(i), h = the number of same-label items ' +
    'among the K nearest (0 when h = 0); averaged over non-lone queries; null if every query is lone.',
  loneQueries: 'Lone queries: queries with no same-label gallery item other than themselves (R = 0).',
} as const;

/** Retrieval metrics of a whole query set. */
export interface RetrievalMetrics {
  /** Number of queries evaluated. */
  queryCount: number;
  /** Number of queries with R = 0 (no same-label gallery item other than themselves). */
  loneQueries: number;
  /** Recall@K keyed by K (ascending), each in [0, 1]; lone queries count as misses. */
  recall: Record<number, number>;
  /** Precision@1 = Recall@1, in [0, 1]. */
  precisionAt1: number;
  /** Mean R-Precision over non-lone queries, in [0, 1]; null when every query is lone. */
  rPrecision: number | null;
  /** Mean MAP@R over non-lone queries, in [0, 1]; null when every query is lone. */
  mapAtR: number | null;
  /** Mean MAP@K over non-lone queries keyed by K (ascending), as PML's mean_average_precision with k = K; null when every query is lone. */
  mapAtK: Record<number, number> | null;
  /** Precision@1 over the non-lone queries (PML's precision_at_1); null when every query is lone. */
  precisionAt1NonLone: number | null;
  definitions: typeof RETRIEVAL_METRIC_DEFINITIONS;
}

/** The retrieval metrics of the queries of one label code. */
export interface LabelRetrievalMetrics {
  /** The label code (as in `queryLabelCodes`). */
  code: number;
  /** Queries with this label. */
  queryCount: number;
  /** Recall@1 over those queries (lone ones counting as misses). */
  recallAt1: number;
  /** Mean R-Precision over its non-lone queries; null when all are lone. */
  rPrecision: number | null;
  /** Mean MAP@R over its non-lone queries; null when all are lone. */
  mapAtR: number | null;
}

/** Marks a query whose neighbours have not been added yet (in `firstHitRankPerQuery`). */
const NOT_ADDED = -2;
/** Marks a query without any same-label item among the examined neighbours. */
const NO_HIT = -1;

/**
 * Accumulates per-query retrieval scores block by block. Memory: a few numbers per query and per label
 * code; the neighbour blocks themselves are not kept. Sums are taken in query order when the result is
 * read, so the values are bit-identical whatever order and block sizes the blocks arrive in.
 */
export class RetrievalMetricsAccumulator {
  /**
   * Neighbours per query that `add` needs: max(largest K, largest R over the queries). Columns of a
   * block beyond this are ignored.
   */
  readonly requiredNeighbours: number;

  private readonly queryLabelCodes: Int32Array;
  private readonly galleryLabelCodes: Int32Array;
  private readonly recallK: number[];
  private readonly querySelfIndex: Int32Array;
  /** R of each query: same-label gallery items, the query itself excluded. */
  private readonly relevantCountPerQuery: Int32Array;
  /** 0-based rank of the first same-label neighbour, NO_HIT, or NOT_ADDED. */
  private readonly firstHitRankPerQuery: Int32Array;
  private readonly rPrecisionPerQuery: Float64Array;
  private readonly averagePrecisionAtRPerQuery: Float64Array;
  /** AP@K of each query for each K of `recallK` (ascending), row-major [query, K]. */
  private readonly averagePrecisionAtKPerQuery: Float64Array;
  private addedQueryCount = 0;

  /** max(largest K, largest R) for these options, without keeping an accumulator. */
  static requiredNeighbours(options: RetrievalMetricsOptions): number {
    return new RetrievalMetricsAccumulator(options).requiredNeighbours;
  }

  constructor(options: RetrievalMetricsOptions) {
    const { queryLabelCodes, galleryLabelCodes } = options;
    if (!(queryLabelCodes instanceof Int32Array)) {
      throw invalidParameterError('queryLabelCodes', 'an Int32Array', queryLabelCodes);
    }
    if (!(galleryLabelCodes instanceof Int32Array)) {
      throw invalidParameterError('galleryLabelCodes', 'an Int32Array', galleryLabelCodes);
    }
    if (queryLabelCodes.length === 0) throw new DmlError('E_EMPTY', 'Cannot compute retrieval metrics: the query set is empty');
    if (galleryLabelCodes.length === 0) throw new DmlError('E_EMPTY', 'Cannot compute retrieval metrics: the gallery is empty');
    const queryCount = queryLabelCodes.length;
    const galleryCount = galleryLabelCodes.length;

    this.queryLabelCodes = queryLabelCodes;
    this.galleryLabelCodes = galleryLabelCodes;
    this.recallK = validateRecallK(options.recallK);
    this.querySelfIndex = validateSelfIndex(options.querySelfIndex, queryLabelCodes, galleryLabelCodes);

    const codeCount = queryCount + galleryCount;
    for (let q = 0; q < queryCount; q++) {
      const code = queryLabelCodes[q]!;
      if (code < 0 || code >= codeCount) {
        throw invalidParameterError(`queryLabelCodes[${q}]`, `a dense label code in [0, ${codeCount}) (see encodeLabels)`, code);
      }
    }
    const galleryCountPerCode = countLabelCodes(galleryLabelCodes, codeCount);

    this.relevantCountPerQuery = new Int32Array(queryCount);
    let largestRelevantCount = 0;
    for (let q = 0; q < queryCount; q++) {
      const relevantCount = galleryCountPerCode[queryLabelCodes[q]!]! - (this.querySelfIndex[q]! >= 0 ? 1 : 0);
      this.relevantCountPerQuery[q] = relevantCount;
      if (relevantCount > largestRelevantCount) largestRelevantCount = relevantCount;
    }
    this.requiredNeighbours = Math.max(this.recallK[this.recallK.length - 1]!, largestRelevantCount);
    this.firstHitRankPerQuery = new Int32Array(queryCount).fill(NOT_ADDED);
    this.rPrecisionPerQuery = new Float64Array(queryCount);
    this.averagePrecisionAtRPerQuery = new Float64Array(queryCount);
    this.averagePrecisionAtKPerQuery = new Float64Array(queryCount * this.recallK.length);
  }

  /** R of query row `query`: its same-label gallery items, itself excluded (0 for a lone query). */
  relevantCount(query: number): number {
    return this.relevantCountPerQuery[query] ?? 0;
  }

  /**
   * AP@R of query row `query` once its block has been added: (1/R) * sum over ranks i <= R of
   * precision@i at every hit; 0 for a lone query or one not added yet.
   */
  averagePrecisionAtR(query: number): number {
    return this.averagePrecisionAtRPerQuery[query] ?? 0;
  }

  /**
   * Scores the queries of one block. Each row must list at least `requiredNeighbours` gallery rows,
   * nearest first, the query itself already excluded; index -1 (padding) counts as a non-match.
   * Each query must be added exactly once.
   */
  add(block: NeighbourBlock): void {
    this.validateBlock(block);
    const examined = this.requiredNeighbours;
    for (let row = 0; row < block.queryCount; row++) {
      const query = block.queryOffset + row;
      const label = this.queryLabelCodes[query]!;
      const relevantCount = this.relevantCountPerQuery[query]!;
      const rowStart = row * block.k;
      let firstHitRank = NO_HIT;
      let hitsWithinR = 0;
      let precisionSumAtHits = 0;
      // Hits and the sum of precision@i at them over the ranks seen so far, for MAP@K.
      let hits = 0;
      let precisionSum = 0;
      let nextK = 0;
      const kSlots = this.averagePrecisionAtKPerQuery.subarray(query * this.recallK.length, (query + 1) * this.recallK.length);
      for (let rank = 0; rank < examined; rank++) {
        const galleryRow = block.indices[rowStart + rank]!;
        if (galleryRow >= 0 && this.galleryLabelCodes[galleryRow] === label) {
          if (firstHitRank === NO_HIT) firstHitRank = rank;
          hits++;
          precisionSum += hits / (rank + 1);
          if (rank < relevantCount) {
            hitsWithinR++;
            precisionSumAtHits += hitsWithinR / (rank + 1);
          }
        }
        while (nextK < this.recallK.length && this.recallK[nextK] === rank + 1) kSlots[nextK++] = hits > 0 ? precisionSum / hits : 0;
      }
      this.firstHitRankPerQuery[query] = firstHitRank;
      if (relevantCount > 0) {
        this.rPrecisionPerQuery[query] = hitsWithinR / relevantCount;
        this.averagePrecisionAtRPerQuery[query] = precisionSumAtHits / relevantCount;
      }
    }
    this.addedQueryCount += block.queryCount;
  }

  /**
   * The metrics over all queries. Every query must have been added.
   *
   * - Recall@K = (1/Q) * sum_q [firstHitRank(q) < K] (lone queries have no hit, so they count as misses)
   * - Precision@1 = Recall@1
   * - R-Precision = mean over queries with R > 0 of hits(top R) / R
   * - MAP@R = mean over queries with R > 0 of (1/R) * sum_{i <= R} P(i) * rel(i)
   * - MAP@K = mean over queries with R > 0 of (1/h_K) * sum_{i <= K} P(i) * rel(i), h_K the hits in the top K
   * - Precision@1 of the non-lone queries = mean over queries with R > 0 of rel(1)
   */
  result(): RetrievalMetrics {
    const queryCount = this.queryLabelCodes.length;
    if (this.addedQueryCount < queryCount) {
      const firstMissing = this.firstHitRankPerQuery.indexOf(NOT_ADDED);
      throw new DmlError(
        'E_ARG',
        `Cannot compute retrieval metrics: ${queryCount - this.addedQueryCount} of ${queryCount} queries have no neighbours added yet (first missing: query ${firstMissing})`,
      );
    }
    const recall: Record<number, number> = {};
    for (const k of this.recallK) {
      let hits = 0;
      for (let q = 0; q < queryCount; q++) {
        const rank = this.firstHitRankPerQuery[q]!;
        if (rank >= 0 && rank < k) hits++;
      }
      recall[k] = hits / queryCount;
    }
    let precisionAt1Hits = 0;
    let loneQueries = 0;
    let rPrecisionSum = 0;
    let averagePrecisionSum = 0;
    const averagePrecisionAtKSums = new Float64Array(this.recallK.length);
    for (let q = 0; q < queryCount; q++) {
      if (this.firstHitRankPerQuery[q] === 0) precisionAt1Hits++;
      if (this.relevantCountPerQuery[q] === 0) {
        loneQueries++;
      } else {
        rPrecisionSum += this.rPrecisionPerQuery[q]!;
        averagePrecisionSum += this.averagePrecisionAtRPerQuery[q]!;
        for (let i = 0; i < this.recallK.length; i++) averagePrecisionAtKSums[i]! += this.averagePrecisionAtKPerQuery[q * this.recallK.length + i]!;
      }
    }
    const scoredQueries = queryCount - loneQueries;
    let mapAtK: Record<number, number> | null = null;
    if (scoredQueries > 0) {
      mapAtK = {};
      this.recallK.forEach((k, i) => ((mapAtK as Record<number, number>)[k] = averagePrecisionAtKSums[i]! / scoredQueries));
    }
    return {
      queryCount,
      loneQueries,
      recall,
      precisionAt1: precisionAt1Hits / queryCount,
      rPrecision: scoredQueries > 0 ? rPrecisionSum / scoredQueries : null,
      mapAtR: scoredQueries > 0 ? averagePrecisionSum / scoredQueries : null,
      mapAtK,
      // A lone query has no hit, so the hits at rank 1 are all of non-lone queries.
      precisionAt1NonLone: scoredQueries > 0 ? precisionAt1Hits / scoredQueries : null,
      definitions: RETRIEVAL_METRIC_DEFINITIONS,
    };
  }

  /**
   * Recall@1, R-Precision and MAP@R per query label, for the labels that have queries, in code order;
   * the same per-query values {@link result} averages. Call after every query was added.
   */
  resultPerLabel(): LabelRetrievalMetrics[] {
    this.result(); // the same completeness check
    const byCode = new Map<number, { queries: number; hits: number; scored: number; rPrecision: number; averagePrecision: number }>();
    for (let q = 0; q < this.queryLabelCodes.length; q++) {
      const code = this.queryLabelCodes[q]!;
      let entry = byCode.get(code);
      if (entry === undefined) {
        entry = { queries: 0, hits: 0, scored: 0, rPrecision: 0, averagePrecision: 0 };
        byCode.set(code, entry);
      }
      entry.queries++;
      if (this.firstHitRankPerQuery[q] === 0) entry.hits++;
      if (this.relevantCountPerQuery[q]! > 0) {
        entry.scored++;
        entry.rPrecision += this.rPrecisionPerQuery[q]!;
        entry.averagePrecision += this.averagePrecisionAtRPerQuery[q]!;
      }
    }
    return [...byCode]
      .sort(([a], [b]) => a - b)
      .map(([code, e]) => ({
        code,
        queryCount: e.queries,
        recallAt1: e.hits / e.queries,
        rPrecision: e.scored > 0 ? e.rPrecision / e.scored : null,
        mapAtR: e.scored > 0 ? e.averagePrecision / e.scored : null,
      }));
  }

  private validateBlock(block: NeighbourBlock): void {
    const queryCount = this.queryLabelCodes.length;
    const galleryCount = this.galleryLabelCodes.length;
    const { queryOffset, queryCount: blockQueryCount, k, indices } = block;
    if (!Number.isSafeInteger(k) || k < this.requiredNeighbours) {
      throw invalidParameterError(
        'block.k',
        `at least ${this.requiredNeighbours} neighbours per query (max of the largest K and the largest R)`,
        k,
      );
    }
    if (!Number.isSafeInteger(queryOffset) || queryOffset < 0 || queryOffset >= queryCount) {
      throw invalidParameterError('block.queryOffset', `an integer in [0, ${queryCount})`, queryOffset);
    }
    if (!Number.isSafeInteger(blockQueryCount) || blockQueryCount < 1 || queryOffset + blockQueryCount > queryCount) {
      throw invalidParameterError('block.queryCount', `an integer in [1, ${queryCount - queryOffset}]`, blockQueryCount);
    }
    if (!(indices instanceof Int32Array) || indices.length !== blockQueryCount * k) {
      throw invalidParameterError('block.indices', `an Int32Array of length ${blockQueryCount * k} (queryCount * k)`, indices);
    }
    for (let row = 0; row < blockQueryCount; row++) {
      const query = queryOffset + row;
      if (this.firstHitRankPerQuery[query] !== NOT_ADDED) {
        throw new DmlError('E_ARG', `Neighbours of query ${query} were added twice`);
      }
      const selfIndex = this.querySelfIndex[query]!;
      for (let rank = 0; rank < this.requiredNeighbours; rank++) {
        const galleryRow = indices[row * k + rank]!;
        if (galleryRow < -1 || galleryRow >= galleryCount) {
          throw invalidParameterError(
            `block.indices[${row * k + rank}]`,
            `a gallery row in [0, ${galleryCount}) or -1 (padding)`,
            galleryRow,
          );
        }
        if (galleryRow >= 0 && galleryRow === selfIndex) {
          throw new DmlError(
            'E_ARG',
            `Neighbours of query ${query} contain the query itself (gallery row ${selfIndex}) at rank ${rank + 1}; the search must exclude it by id`,
          );
        }
      }
    }
  }
}

function validateRecallK(recallK: readonly number[]): number[] {
  const expected = 'a non-empty list of distinct positive integers';
  if (!Array.isArray(recallK) || recallK.length === 0) throw invalidParameterError('recallK', expected, recallK);
  for (let i = 0; i < recallK.length; i++) {
    const k = recallK[i];
    if (typeof k !== 'number' || !Number.isSafeInteger(k) || k < 1) {
      throw invalidParameterError(`recallK[${i}]`, 'a positive integer', k);
    }
    if (recallK.indexOf(k) !== i) throw invalidParameterError(`recallK[${i}]`, `${expected} (duplicate)`, k);
  }
  return [...recallK].sort((a, b) => a - b);
}

function validateSelfIndex(
  querySelfIndex: Int32Array | undefined,
  queryLabelCodes: Int32Array,
  galleryLabelCodes: Int32Array,
): Int32Array {
  const queryCount = queryLabelCodes.length;
  if (querySelfIndex === undefined) return new Int32Array(queryCount).fill(-1);
  if (!(querySelfIndex instanceof Int32Array) || querySelfIndex.length !== queryCount) {
    throw invalidParameterError('querySelfIndex', `an Int32Array of length ${queryCount} (one entry per query)`, querySelfIndex);
  }
  for (let q = 0; q < queryCount; q++) {
    const selfIndex = querySelfIndex[q]!;
    if (selfIndex < -1 || selfIndex >= galleryLabelCodes.length) {
      throw invalidParameterError(`querySelfIndex[${q}]`, `a gallery row in [0, ${galleryLabelCodes.length}) or -1`, selfIndex);
    }
    if (selfIndex >= 0 && galleryLabelCodes[selfIndex] !== queryLabelCodes[q]) {
      throw invalidParameterError(
        `querySelfIndex[${q}]`,
        `a gallery row with the query's label code ${queryLabelCodes[q]}`,
        `row ${selfIndex} with label code ${galleryLabelCodes[selfIndex]}`,
      );
    }
  }
  return querySelfIndex;
}
