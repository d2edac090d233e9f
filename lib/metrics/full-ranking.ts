/**
 * @file The metrics of the whole ranking: mean reciprocal rank (MRR) and mean average precision (mAP),
 * as PyTorch Metric Learning's AccuracyCalculator gives them with `k = None` (every reference item
 * ranked). They need where every same-label gallery item falls in the query's ranking, which a top-k
 * list does not hold, so they are computed from the query's scores against the whole gallery (one row
 * of the search's score matrix, streamed chunk by chunk; see `withScores` in search/gemm-topk.ts).
 *
 * Per query with R > 0 same-label gallery items (the query itself excluded), ranked by score
 * descending then gallery index ascending (the search's order), with rank_t the 1-based rank of the
 * t-th of them (t = 1..R):
 *
 *   RR = 1 / rank_1,   AP = (1/R) Σ_t t / rank_t
 *
 * MRR and mAP average these over the non-lone queries (R > 0), as PML does; null when every query is
 * lone. The ranks are found without sorting the gallery: the R relevant scores are sorted, and each
 * gallery item is placed among them through a grid of buckets over their range (O(G + R log R) per
 * query, about as fast as reading the scores).
 */
import { DmlError, invalidParameterError } from '../errors.js';

/** Grid buckets per relevant item when placing gallery items among a query's relevant scores. */
const BUCKETS_PER_RELEVANT = 4;

/** Gallery rows below this sort by a packed numeric key (see {@link rankingOrder}). */
const PACKED_ROWS = 2 ** 21;

/** Reinterprets a float32 as its bits. */
const floatBits = new Float32Array(1);
const floatBitsAsUint = new Uint32Array(floatBits.buffer);

/**
 * `rows` (ascending) in ranking order: score descending, then row ascending. With fewer than 2^21
 * gallery rows each row is packed with its score into one float64 key, (order-preserving 32-bit key of
 * −score) · 2^21 + row, an exact integer below 2^53, and the keys sorted numerically (a native sort,
 * several times faster than a comparator for the thousands of relevant items of a large class).
 */
function rankingOrder(rows: Int32Array, row: Float32Array): Int32Array {
  if (row.length > PACKED_ROWS) return Int32Array.from(Array.from(rows).sort((a, b) => row[b]! - row[a]! || a - b));
  const keys = new Float64Array(rows.length);
  rows.forEach((g, t) => {
    const score = row[g]!;
    floatBits[0] = score === 0 ? 0 : -score; // −0 and +0 are one score
    const bits = floatBitsAsUint[0]!;
    // Negative floats: all bits flipped; non-negative: the sign bit set. Ascending keys = ascending floats.
    const ordered = bits & 0x80000000 ? ~bits >>> 0 : (bits | 0x80000000) >>> 0;
    keys[t] = ordered * PACKED_ROWS + g;
  });
  keys.sort();
  return Int32Array.from(keys, (key) => key % PACKED_ROWS);
}

/** The definitions written into every report next to the values. */
export const FULL_RANKING_METRIC_DEFINITIONS = {
  mrr:
    'MRR (PML mean_reciprocal_rank, k = None): 1 / (rank of the nearest same-label item in the whole ranking); averaged over non-lone queries; ' +
    'null if every query is lone or the whole ranking was not computed (--no-full-ranking).',
  map:
    'mAP (PML mean_average_precision, k = None): (1/R) * sum over the R same-label items of (their position among them) / (their rank in the whole ranking), ' +
    "= scikit-learn's average_precision_score of the query's scores when no two tie; averaged over non-lone queries; null if every query is lone or the whole ranking was not computed.",
} as const;

/** MRR and mAP of a query set. */
export interface FullRankingMetrics {
  /** Mean reciprocal rank over the non-lone queries; null when every query is lone. */
  mrr: number | null;
  /** Mean average precision over the whole ranking, over the non-lone queries; null when every query is lone. */
  map: number | null;
}

/** What {@link FullRankingAccumulator} needs to know about the query and gallery sets. */
export interface FullRankingOptions {
  /** Label code of each query (dense codes as produced by `encodeLabels`). */
  queryLabelCodes: Int32Array;
  /** Label code of each gallery item, same code table. */
  galleryLabelCodes: Int32Array;
  /** For each query, its own gallery row (left out of its ranking), or -1. Default: every entry -1. */
  querySelfIndex?: Int32Array;
}

/** Accumulates per-query reciprocal rank and average precision from rows of scores against the whole gallery. */
export class FullRankingAccumulator {
  private readonly queryLabelCodes: Int32Array;
  private readonly galleryLabelCodes: Int32Array;
  private readonly querySelfIndex: Int32Array | undefined;
  /** Gallery rows of each label code, ascending. */
  private readonly rowsOfCode = new Map<number, Int32Array>();
  private readonly reciprocalRanks: Float64Array;
  private readonly averagePrecisions: Float64Array;
  /** 1 once a query's scores were added. */
  private readonly added: Uint8Array;

  constructor(options: FullRankingOptions) {
    const { queryLabelCodes, galleryLabelCodes, querySelfIndex } = options;
    if (!(queryLabelCodes instanceof Int32Array)) throw invalidParameterError('queryLabelCodes', 'an Int32Array', queryLabelCodes);
    if (!(galleryLabelCodes instanceof Int32Array)) throw invalidParameterError('galleryLabelCodes', 'an Int32Array', galleryLabelCodes);
    if (querySelfIndex !== undefined && (!(querySelfIndex instanceof Int32Array) || querySelfIndex.length !== queryLabelCodes.length)) {
      throw invalidParameterError('querySelfIndex', `an Int32Array of length ${queryLabelCodes.length} (one entry per query)`, querySelfIndex);
    }
    this.queryLabelCodes = queryLabelCodes;
    this.galleryLabelCodes = galleryLabelCodes;
    this.querySelfIndex = querySelfIndex;
    const rows = new Map<number, number[]>();
    galleryLabelCodes.forEach((code, row) => {
      let list = rows.get(code);
      if (list === undefined) rows.set(code, (list = []));
      list.push(row);
    });
    for (const [code, list] of rows) this.rowsOfCode.set(code, Int32Array.from(list));
    this.reciprocalRanks = new Float64Array(queryLabelCodes.length);
    this.averagePrecisions = new Float64Array(queryLabelCodes.length);
    this.added = new Uint8Array(queryLabelCodes.length);
  }

  /**
   * Scores queries `queryOffset .. queryOffset + queryCount - 1` from their rows of `scores`
   * (row-major [queryCount, galleryCount]: each query's score against every gallery row, higher =
   * nearer). Each query is added once.
   */
  add(queryOffset: number, queryCount: number, scores: Float32Array): void {
    const galleryCount = this.galleryLabelCodes.length;
    if (!Number.isSafeInteger(queryOffset) || queryOffset < 0 || !Number.isSafeInteger(queryCount) || queryOffset + queryCount > this.queryLabelCodes.length) {
      throw invalidParameterError('queryOffset/queryCount', `a range of queries within [0, ${this.queryLabelCodes.length})`, `${queryOffset} + ${queryCount}`);
    }
    if (!(scores instanceof Float32Array) || scores.length !== queryCount * galleryCount) {
      throw invalidParameterError('scores', `a Float32Array of ${queryCount * galleryCount} values (${queryCount} queries x ${galleryCount} gallery rows)`, scores);
    }
    for (let row = 0; row < queryCount; row++) {
      const query = queryOffset + row;
      if (this.added[query] === 1) throw new DmlError('E_ARG', `Scores of query ${query} were added twice`);
      this.added[query] = 1;
      const self = this.querySelfIndex?.[query] ?? -1;
      const relevantRows = (this.rowsOfCode.get(this.queryLabelCodes[query]!) ?? new Int32Array(0)).filter((g) => g !== self);
      if (relevantRows.length === 0) continue;
      const offset = row * galleryCount;
      this.scoreQuery(query, scores.subarray(offset, offset + galleryCount), relevantRows, self);
    }
  }

  /** RR and AP of one query from its score row (see the file comment). */
  private scoreQuery(query: number, row: Float32Array, relevantRows: Int32Array, self: number): void {
    const r = relevantRows.length;
    const relevant = rankingOrder(relevantRows, row);
    const relevantScores = Float64Array.from(relevant, (g) => row[g]!);
    const highest = relevantScores[0]!;
    const lowest = relevantScores[r - 1]!;
    // A grid of BUCKETS_PER_RELEVANT * R buckets over [lowest, highest]: bucket b starts below
    // highest − b·width, and start[b] relevant items score above that edge. An item in bucket b has
    // at least start[b − 1] relevant items before it (one bucket of margin for rounding), and the scan
    // from there passes the few in between.
    const buckets = BUCKETS_PER_RELEVANT * r;
    const width = (highest - lowest) / buckets;
    const start = new Int32Array(buckets + 1);
    if (width > 0) {
      let t = 0;
      for (let b = 0; b <= buckets; b++) {
        while (t < r && relevantScores[t]! > highest - b * width) t++;
        start[b] = t;
      }
    }
    // placed[t]: gallery items (relevant ones included) with exactly t relevant items ranked before them.
    const placed = new Float64Array(r + 1);
    const perWidth = width > 0 ? 1 / width : 0;
    for (let g = 0; g < row.length; g++) {
      const score = row[g]!;
      if (score < lowest || g === self) continue; // after every relevant item, or the query itself
      const bucket = Math.min(buckets, Math.floor((highest - score) * perWidth));
      let t = bucket > 0 ? start[bucket - 1]! : 0;
      // Relevant items ranked before g: those with a higher score, or the same score and a lower row.
      while (t < r && (relevantScores[t]! > score || (relevantScores[t] === score && relevant[t]! < g))) t++;
      placed[t]!++;
    }
    // rank_t = items with at most t − 1 relevant items before them (the t-th relevant item itself included).
    let before = 0;
    let precisionSum = 0;
    for (let t = 0; t < r; t++) {
      before += placed[t]!;
      if (t === 0) this.reciprocalRanks[query] = 1 / before;
      precisionSum += (t + 1) / before;
    }
    this.averagePrecisions[query] = precisionSum / r;
  }

  /** MRR and mAP over every query; each query must have been added. */
  result(): FullRankingMetrics {
    const missing = this.added.indexOf(0);
    if (missing >= 0) throw new DmlError('E_ARG', `Cannot compute MRR and mAP: the scores of query ${missing} were not added`);
    let scored = 0;
    let reciprocalRankSum = 0;
    let averagePrecisionSum = 0;
    for (let q = 0; q < this.queryLabelCodes.length; q++) {
      const self = this.querySelfIndex?.[q] ?? -1;
      const relevant = (this.rowsOfCode.get(this.queryLabelCodes[q]!)?.length ?? 0) - (self >= 0 ? 1 : 0);
      if (relevant <= 0) continue;
      scored++;
      reciprocalRankSum += this.reciprocalRanks[q]!;
      averagePrecisionSum += this.averagePrecisions[q]!;
    }
    return scored > 0 ? { mrr: reciprocalRankSum / scored, map: averagePrecisionSum / scored } : { mrr: null, map: null };
  }
}
