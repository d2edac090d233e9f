/**
 * @file Retrieval examples for the reports: a seeded sample of queries whose nearest neighbour has
 * another label (failures) and of queries whose nearest neighbour has their label (successes), each with
 * its top neighbours. Sampled while the neighbour blocks stream past, so nothing else is kept.
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

/** One query with its top neighbours, nearest first. */
export interface RetrievalExample {
  /** `failure`: the nearest neighbour has another label; `success`: it has the query's label. */
  kind: 'failure' | 'success';
  query: { id: string; label: string };
  neighbours: ExampleNeighbour[];
}

/** How many examples to keep and how many neighbours each shows. */
export interface RetrievalExampleOptions {
  /** Failures kept, and successes kept (each at most this many). */
  perKind: number;
  /** Neighbours listed per example. */
  neighbours: number;
  /** Seed of the sample (the same seed gives the same queries). */
  seed: number;
}

/** Examples per kind when nothing else is asked for. */
export const DEFAULT_EXAMPLES_PER_KIND = 4;
/** Neighbours shown per example by default. */
export const DEFAULT_EXAMPLE_NEIGHBOURS = 5;

/** The labelled ids the sampler reads rows of. */
interface LabelledRows {
  ids: readonly string[];
  labels: readonly string[];
}

/**
 * Keeps a uniform seeded sample of failures and successes. Each query gets a random priority drawn from
 * the seed before any block arrives; a kind keeps its `perKind` queries of lowest priority. The sample
 * is therefore the same whatever order and size the blocks come in. Lone queries (no same-label item
 * in the gallery) are neither.
 */
export class RetrievalExampleSampler {
  private readonly priority: Float64Array;
  private readonly kept = { failure: [] as RetrievalExample[], success: [] as RetrievalExample[] };
  private readonly keptPriority = { failure: [] as number[], success: [] as number[] };

  constructor(
    private readonly query: LabelledRows,
    private readonly gallery: LabelledRows,
    /** For each query, whether it has a same-label gallery item other than itself. */
    private readonly hasPositive: (queryRow: number) => boolean,
    private readonly options: RetrievalExampleOptions,
  ) {
    const rng = new Rng(options.seed);
    this.priority = Float64Array.from({ length: query.ids.length }, () => rng.next());
  }

  /** Looks at the queries of one block (rows nearest first; index -1 is padding). */
  add(block: NeighbourBlock): void {
    const shown = Math.min(this.options.neighbours, block.k);
    for (let row = 0; row < block.queryCount; row++) {
      const q = block.queryOffset + row;
      if (!this.hasPositive(q)) continue;
      const label = this.query.labels[q] as string;
      const top = block.indices[row * block.k] as number;
      const kind = top >= 0 && this.gallery.labels[top] === label ? 'success' : 'failure';
      const priority = this.priority[q] as number;
      const priorities = this.keptPriority[kind];
      if (priorities.length >= this.options.perKind) {
        const worst = Math.max(...priorities);
        if (priority >= worst) continue;
        const at = priorities.indexOf(worst);
        priorities.splice(at, 1);
        this.kept[kind].splice(at, 1);
      }
      const neighbours: ExampleNeighbour[] = [];
      for (let rank = 0; rank < shown; rank++) {
        const g = block.indices[row * block.k + rank] as number;
        if (g < 0) break;
        const neighbourLabel = this.gallery.labels[g] as string;
        neighbours.push({ id: this.gallery.ids[g] as string, label: neighbourLabel, similarity: block.similarities[row * block.k + rank] as number, correct: neighbourLabel === label });
      }
      priorities.push(priority);
      this.kept[kind].push({ kind, query: { id: this.query.ids[q] as string, label }, neighbours });
    }
  }

  /** The failures, then the successes, each in sample (priority) order. */
  result(): RetrievalExample[] {
    const ordered = (kind: 'failure' | 'success'): RetrievalExample[] =>
      this.kept[kind].map((example, i) => ({ example, priority: this.keptPriority[kind][i] as number })).sort((a, b) => a.priority - b.priority).map((e) => e.example);
    return [...ordered('failure'), ...ordered('success')];
  }
}
