/**
 * @file `dml eval --save-neighbours`: every query's top K neighbours (ids, labels, similarities) kept
 * while the search streams, then written as one long-format CSV for error analysis in pandas or numpy
 * (`pd.read_csv(file)`), one row per query, model and rank.
 */
import type { EmbeddingSet } from '../embed/embedding-set.js';
import { invalidParameterError } from '../errors.js';
import type { NeighbourBlock } from '../search/neighbours.js';

/** The header of the CSV {@link neighboursCsv} writes. */
export const NEIGHBOURS_CSV_HEADER = ['model', 'query_id', 'query_label', 'rank', 'neighbour_id', 'neighbour_label', 'similarity', 'correct'] as const;

/**
 * Keeps the top `k` neighbours of every query as the blocks pass (pass {@link NeighbourRecorder.add} as
 * `evaluateEmbeddings`' `onNeighbours`). Memory: queries x k x 8 bytes.
 */
export class NeighbourRecorder {
  private indices = new Int32Array(0);
  private similarities = new Float32Array(0);
  private query: EmbeddingSet | undefined;
  private gallery: EmbeddingSet | undefined;

  constructor(
    /** Run name written in the CSV's `model` column. */
    readonly name: string,
    /** Neighbours kept per query (the largest K of Recall@K). */
    readonly k: number,
  ) {
    if (!Number.isInteger(k) || k < 1) throw invalidParameterError('k', 'a positive integer', k);
  }

  /** Records one block (its first `k` columns; padding, index -1, is left out when written). */
  add = (block: NeighbourBlock, sets: { query: EmbeddingSet; gallery: EmbeddingSet }): void => {
    if (this.query !== sets.query) {
      this.query = sets.query;
      this.gallery = sets.gallery;
      this.indices = new Int32Array(sets.query.count * this.k).fill(-1);
      this.similarities = new Float32Array(sets.query.count * this.k);
    }
    const width = Math.min(this.k, block.k);
    for (let row = 0; row < block.queryCount; row++) {
      const to = (block.queryOffset + row) * this.k;
      this.indices.set(block.indices.subarray(row * block.k, row * block.k + width), to);
      this.similarities.set(block.similarities.subarray(row * block.k, row * block.k + width), to);
    }
  };

  /** The CSV lines of this run (no header), one per query and rank, nearest first. */
  *lines(): Generator<string> {
    const { query, gallery } = this;
    if (query === undefined || gallery === undefined) return;
    for (let q = 0; q < query.count; q++) {
      const queryLabel = query.labels[q] as string;
      for (let rank = 0; rank < this.k; rank++) {
        const g = this.indices[q * this.k + rank] as number;
        if (g < 0) break;
        const label = gallery.labels[g] as string;
        const similarity = this.similarities[q * this.k + rank] as number;
        yield [this.name, query.ids[q] as string, queryLabel, String(rank + 1), gallery.ids[g] as string, label, similarity.toFixed(6), label === queryLabel ? '1' : '0']
          .map(csvField)
          .join(',');
      }
    }
  }
}

/** One CSV field: quoted (with inner quotes doubled) when it holds a comma, quote or line break. */
export function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The whole CSV of the runs' recorders, header first, as UTF-8 chunks (for an atomic streamed write). */
export function* neighboursCsv(recorders: readonly NeighbourRecorder[]): Generator<Uint8Array> {
  const encoder = new TextEncoder();
  let chunk = `${NEIGHBOURS_CSV_HEADER.join(',')}\n`;
  for (const recorder of recorders) {
    for (const line of recorder.lines()) {
      chunk += `${line}\n`;
      if (chunk.length >= 1 << 16) {
        yield encoder.encode(chunk);
        chunk = '';
      }
    }
  }
  if (chunk.length > 0) yield encoder.encode(chunk);
}
