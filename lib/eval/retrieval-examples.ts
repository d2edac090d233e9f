/**
 * @file Retrieval examples for the reports: two selections of queries, each with its top neighbours.
 * `random`: a seeded sample of queries drawn from the seed and the query rows alone, so every model
 * evaluated on the same data shows the same queries and the reports can line them up. `worst`: the
 * queries of lowest AP@R (the ones this model gets most wrong). Both are chosen while the neighbour
 * blocks stream past, so nothing else is kept.
 */
import type { NeighbourBlock } from '../search/neighbours.js';
import { Rng } from '../util/rng.js';

/** One ranked gallery item of an example. */
export interface ExampleNeighbour {
  id: string;
  label: string;
  /** Cosine similarity to the query. */
  similarity: number;
  /** True when the item has the query's label. */
  correct: boolean;
}

/** How an example's query was chosen: the seeded sample shared by every model, or this model's lowest AP@R. */
export type ExampleSelection = 'random' | 'worst';

/** One query with its top neighbours, nearest first. */
export interface RetrievalExample {
  /** `random`: the seeded sample (the same queries for every model); `worst`: this model's lowest AP@R. */
  selection: ExampleSelection;
  /** `failure`: the nearest neighbour has another label; `success`: it has the query's label. */
  kind: 'failure' | 'success';
  query: { id: string; label: string };
  /** The query's AP@R (the per-query term of MAP@R), in [0, 1]. */
  averagePrecision: number;
  neighbours: ExampleNeighbour[];
}

/** How many examples to keep and how many neighbours each shows. */
export interface RetrievalExampleOptions {
  /** Queries kept per selection: this many random ones and this many worst ones (0 keeps none). */
  count: number;
  /** Neighbours listed per example. */
  neighbours: number;
  /** Seed of the random selection (the same seed and query set give the same queries). */
  seed: number;
}

/** Queries per selection (random, worst) when nothing else is asked for: `dml eval --examples`' default. */
export const DEFAULT_EXAMPLES = 4;
/** Neighbours shown per example by default. */
export const DEFAULT_EXAMPLE_NEIGHBOURS = 5;

/** The labelled ids the sampler reads rows of. */
interface LabelledRows {
  ids: readonly string[];
  labels: readonly string[];
}

/** What the sampler needs to know of each query's scores (read after the query's block was scored). */
export interface QueryScores {
  /** Whether query row `q` has a same-label gallery item other than itself (lone queries are never shown). */
  hasPositive(q: number): boolean;
  /** AP@R of query row `q`. */
  averagePrecision(q: number): number;
}

/** A bounded list that keeps the `capacity` entries of lowest key (ties: lower query row first). */
class LowestKept {
  readonly entries: Array<{ key: number; row: number; example: RetrievalExample }> = [];
  constructor(private readonly capacity: number) {}

  /** Whether an entry with this key and row would be kept. */
  wants(key: number, row: number): boolean {
    if (this.capacity === 0) return false;
    if (this.entries.length < this.capacity) return true;
    const last = this.entries[this.entries.length - 1] as { key: number; row: number };
    return key < last.key || (key === last.key && row < last.row);
  }

  add(key: number, row: number, example: RetrievalExample): void {
    let at = this.entries.length;
    while (at > 0) {
      const before = this.entries[at - 1] as { key: number; row: number };
      if (before.key < key || (before.key === key && before.row < row)) break;
      at--;
    }
    this.entries.splice(at, 0, { key, row, example });
    if (this.entries.length > this.capacity) this.entries.pop();
  }
}

/**
 * Keeps the `random` and `worst` selections. Each query gets a random priority drawn from the seed
 * before any block arrives; the random selection keeps the `count` non-lone queries of lowest priority,
 * which depends on the seed and the query rows only, never on the model. The worst selection keeps the
 * `count` non-lone queries of lowest AP@R. Both are the same whatever order and size the blocks come in.
 */
export class RetrievalExampleSampler {
  private readonly priority: Float64Array;
  private readonly random: LowestKept;
  private readonly worst: LowestKept;

  constructor(
    private readonly query: LabelledRows,
    private readonly gallery: LabelledRows,
    private readonly scores: QueryScores,
    private readonly options: RetrievalExampleOptions,
  ) {
    const rng = new Rng(options.seed);
    this.priority = Float64Array.from({ length: query.ids.length }, () => rng.next());
    this.random = new LowestKept(options.count);
    this.worst = new LowestKept(options.count);
  }

  /** Looks at the queries of one block (rows nearest first; index -1 is padding), after they were scored. */
  add(block: NeighbourBlock): void {
    for (let row = 0; row < block.queryCount; row++) {
      const q = block.queryOffset + row;
      if (!this.scores.hasPositive(q)) continue;
      const priority = this.priority[q] as number;
      const ap = this.scores.averagePrecision(q);
      const wantsRandom = this.random.wants(priority, q);
      const wantsWorst = this.worst.wants(ap, q);
      if (!wantsRandom && !wantsWorst) continue;
      const example = this.example(block, row, ap);
      if (wantsRandom) this.random.add(priority, q, { ...example, selection: 'random' });
      if (wantsWorst) this.worst.add(ap, q, { ...example, selection: 'worst' });
    }
  }

  private example(block: NeighbourBlock, row: number, averagePrecision: number): Omit<RetrievalExample, 'selection'> {
    const q = block.queryOffset + row;
    const label = this.query.labels[q] as string;
    const neighbours: ExampleNeighbour[] = [];
    const shown = Math.min(this.options.neighbours, block.k);
    for (let rank = 0; rank < shown; rank++) {
      const g = block.indices[row * block.k + rank] as number;
      if (g < 0) break;
      const neighbourLabel = this.gallery.labels[g] as string;
      neighbours.push({ id: this.gallery.ids[g] as string, label: neighbourLabel, similarity: block.similarities[row * block.k + rank] as number, correct: neighbourLabel === label });
    }
    const top = block.indices[row * block.k] as number;
    const kind = top >= 0 && this.gallery.labels[top] === label ? 'success' : 'failure';
    return { kind, query: { id: this.query.ids[q] as string, label }, averagePrecision, neighbours };
  }

  /** The random selection in sample (priority) order, then the worst selection, lowest AP@R first. */
  result(): RetrievalExample[] {
    return [...this.random.entries.map((e) => e.example), ...this.worst.entries.map((e) => e.example)];
  }
}
