/**
 * @file What an evaluation shows besides its metrics, for the reports' diagnostic views: the label
 * pairs most often confused in the top K (fed the same neighbour blocks as the metrics), and the
 * histograms of the cosine similarities of positive pairs (same label) and negative pairs (different
 * labels), over every query-gallery pair when that takes at most {@link MAX_EXACT_WORK} multiply-adds
 * (600 x 600 items of 64 dimensions do), else over {@link SAMPLED_PAIRS} seeded random pairs of each kind. A query is never paired with itself
 * (by id, as in the metrics).
 */
import type { EmbeddingSet } from '../embed/embedding-set.js';
import type { NeighbourBlock } from '../search/neighbours.js';
import { Rng } from '../util/rng.js';

/** Multiply-adds (queries x gallery x dimension) up to which every pair is counted (above: a sample). */
export const MAX_EXACT_WORK = 64_000_000;
/** Pairs of each kind sampled above {@link MAX_EXACT_WORK}. */
export const SAMPLED_PAIRS = 50_000;
/** Histogram bins over [-1, 1]. */
export const SIMILARITY_BINS = 40;
/** Confused label pairs kept (most frequent first). */
export const CONFUSIONS_KEPT = 20;

/** One confused label pair: how often items labelled `neighbourLabel` stood in the top K of queries labelled `queryLabel`. */
export interface LabelConfusion {
  queryLabel: string;
  neighbourLabel: string;
  count: number;
  /** `count` / (queries labelled `queryLabel` x K): the share of that label's top-K places taken by the other. */
  fraction: number;
}

/** The histograms of pair similarities. */
export interface SimilarityHistograms {
  /** `all`: every query-gallery pair but a query with itself; `sampled`: seeded random pairs of each kind. */
  mode: 'all' | 'sampled';
  /** Equal bins over [-1, 1]: bin i holds similarities in [-1 + 2i/bins, -1 + 2(i+1)/bins) (1 in the last). */
  bins: number;
  positiveCounts: number[];
  negativeCounts: number[];
  /** Mean similarity of the positive and of the negative pairs counted (null without any). */
  positiveMean: number | null;
  negativeMean: number | null;
}

/** The diagnostics of one run (report.json's `diagnostics`). */
export interface RunDiagnostics {
  /** The K of the confusions: the largest K of Recall@K. */
  confusionK: number;
  /** The {@link CONFUSIONS_KEPT} most frequent pairs, most frequent first (ties by labels). */
  confusions: LabelConfusion[];
  similarities: SimilarityHistograms;
}

/** The bin of similarity `s` (clamped into [-1, 1]). */
export function similarityBin(s: number, bins = SIMILARITY_BINS): number {
  return Math.min(bins - 1, Math.max(0, Math.floor(((s + 1) / 2) * bins)));
}

/** Counts, over neighbour blocks, the gallery labels other than the query's in each query's top `k`. */
export class ConfusionCounter {
  private readonly counts = new Map<number, number>();
  private readonly labelCount: number;

  constructor(
    private readonly queryCodes: Int32Array,
    private readonly galleryCodes: Int32Array,
    private readonly labelNames: readonly string[],
    readonly k: number,
  ) {
    this.labelCount = labelNames.length;
  }

  /** Adds a block of neighbours (rows nearest first, -1 for padding). */
  add = (block: NeighbourBlock): void => {
    const width = Math.min(this.k, block.k);
    for (let q = 0; q < block.queryCount; q++) {
      const own = this.queryCodes[block.queryOffset + q] as number;
      for (let j = 0; j < width; j++) {
        const row = block.indices[q * block.k + j] as number;
        if (row < 0) continue;
        const other = this.galleryCodes[row] as number;
        if (other === own) continue;
        const key = own * this.labelCount + other;
        this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
      }
    }
  };

  /** The most frequent pairs (see {@link RunDiagnostics.confusions}). */
  result(): LabelConfusion[] {
    const queriesOf = new Map<number, number>();
    for (const code of this.queryCodes) queriesOf.set(code, (queriesOf.get(code) ?? 0) + 1);
    return [...this.counts.entries()]
      .map(([key, count]) => {
        const own = Math.floor(key / this.labelCount);
        return { queryLabel: this.labelNames[own] as string, neighbourLabel: this.labelNames[key % this.labelCount] as string, count, fraction: count / ((queriesOf.get(own) ?? 1) * this.k) };
      })
      .sort((a, b) => b.count - a.count || a.queryLabel.localeCompare(b.queryLabel) || a.neighbourLabel.localeCompare(b.neighbourLabel))
      .slice(0, CONFUSIONS_KEPT);
  }
}

/** The inner product of row `a` of `x` and row `b` of `y` (both `dim` wide). */
function dot(x: Float32Array, a: number, y: Float32Array, b: number, dim: number): number {
  let s = 0;
  const oa = a * dim;
  const ob = b * dim;
  for (let d = 0; d < dim; d++) s += (x[oa + d] as number) * (y[ob + d] as number);
  return s;
}

/**
 * The positive and negative pair-similarity histograms of `query` against `gallery` (see the file
 * comment); `selfIndex[q]` is query q's own gallery row or -1, `queryCodes` and `galleryCodes` their
 * labels as codes; the sample is drawn with `seed`.
 */
export function similarityHistograms(
  query: EmbeddingSet,
  gallery: EmbeddingSet,
  selfIndex: Int32Array,
  queryCodes: Int32Array,
  galleryCodes: Int32Array,
  seed: number,
  limits: { maxExactWork?: number; sampledPairs?: number } = {},
): SimilarityHistograms {
  const bins = SIMILARITY_BINS;
  const positive = new Array<number>(bins).fill(0);
  const negative = new Array<number>(bins).fill(0);
  const sums = { positive: 0, negative: 0 };
  const count = (s: number, same: boolean): void => {
    const counts = same ? positive : negative;
    const bin = similarityBin(s, bins);
    counts[bin] = (counts[bin] as number) + 1;
    if (same) sums.positive += s;
    else sums.negative += s;
  };
  const dim = query.dim;
  const exact = query.count * gallery.count * dim <= (limits.maxExactWork ?? MAX_EXACT_WORK);
  if (exact) {
    for (let q = 0; q < query.count; q++) {
      for (let g = 0; g < gallery.count; g++) {
        if (g === selfIndex[q]) continue;
        count(dot(query.vectors, q, gallery.vectors, g, dim), queryCodes[q] === galleryCodes[g]);
      }
    }
  } else {
    const rng = new Rng(seed >>> 0);
    const rowsOf = new Map<number, number[]>();
    galleryCodes.forEach((code, row) => {
      const rows = rowsOf.get(code);
      if (rows) rows.push(row);
      else rowsOf.set(code, [row]);
    });
    // Positives: a random query with another same-label gallery item, and one of those items.
    const withPositive: number[] = [];
    for (let q = 0; q < query.count; q++) {
      const rows = rowsOf.get(queryCodes[q] as number) ?? [];
      if (rows.length - (rows.includes(selfIndex[q] as number) ? 1 : 0) > 0) withPositive.push(q);
    }
    const wanted = limits.sampledPairs ?? SAMPLED_PAIRS;
    for (let i = 0; i < wanted && withPositive.length > 0; i++) {
      const q = withPositive[rng.nextInt(withPositive.length)] as number;
      const rows = rowsOf.get(queryCodes[q] as number) as number[];
      let g = rows[rng.nextInt(rows.length)] as number;
      while (g === selfIndex[q]) g = rows[rng.nextInt(rows.length)] as number;
      count(dot(query.vectors, q, gallery.vectors, g, dim), true);
    }
    // Negatives: a random query and a random gallery item of another label (100 draws at most per pair).
    for (let i = 0; i < wanted; i++) {
      const q = rng.nextInt(query.count);
      for (let tries = 0; tries < 100; tries++) {
        const g = rng.nextInt(gallery.count);
        if (galleryCodes[g] === queryCodes[q]) continue;
        count(dot(query.vectors, q, gallery.vectors, g, dim), false);
        break;
      }
    }
  }
  const positives = positive.reduce((a, b) => a + b, 0);
  const negatives = negative.reduce((a, b) => a + b, 0);
  return {
    mode: exact ? 'all' : 'sampled',
    bins,
    positiveCounts: positive,
    negativeCounts: negative,
    positiveMean: positives > 0 ? sums.positive / positives : null,
    negativeMean: negatives > 0 ? sums.negative / negatives : null,
  };
}
