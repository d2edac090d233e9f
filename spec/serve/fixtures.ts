/**
 * @file Fixtures of the serving specs: a small image folder copied from data/default (Fashion-MNIST
 * test images, 28x28 grey PNG) and a search index built from it with models/default.onnx, plus the
 * brute-force neighbours of the embeddings the index was built from.
 */
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { openDataset } from '../../lib/data/open-dataset.js';
import { OnnxEmbedder } from '../../lib/embed/embedder.js';
import type { EmbeddingSet } from '../../lib/embed/embedding-set.js';
import { SearchIndexStore } from '../../lib/index-store/hnsw-store.js';
import { bruteForceNeighbourBlocks } from '../helpers/brute-force-neighbours.js';

/** The default model: 1x28x28 grey input, 64-d output. */
export const MODEL = path.resolve('models/default.onnx');

/** Copies `perClass` images of each of the first `classes` classes of data/default into `root`. */
export function copyImages(root: string, classes: number, perClass: number, skip = 0): string {
  for (const cls of readdirSync('data/default').sort().slice(0, classes)) {
    mkdirSync(path.join(root, cls), { recursive: true });
    for (const f of readdirSync(path.join('data/default', cls)).sort().slice(skip, skip + perClass)) {
      copyFileSync(path.join('data/default', cls, f), path.join(root, cls, f));
    }
  }
  return root;
}

/** A built fixture index and what it was built from. */
export interface FixtureIndex {
  /** The index folder. */
  dir: string;
  /** The image folder it indexes (`<class>/<file>.png`, ids `<class>/<file>.png`). */
  images: string;
  /** The embeddings in index order. */
  set: EmbeddingSet;
}

/** Builds an index of `classes` x `perClass` images under `parent` (HNSW settings that are exact at this size). */
export async function buildFixtureIndex(parent: string, classes = 4, perClass = 6): Promise<FixtureIndex> {
  const images = copyImages(path.join(parent, 'images'), classes, perClass);
  const manifest = await openDataset(`folder:${images}`, { warn: () => undefined });
  const embedder = await OnnxEmbedder.open(MODEL, { device: 'cpu' });
  try {
    const { set } = await embedder.embedItems(manifest.items);
    const dir = path.join(parent, 'index');
    await SearchIndexStore.create(dir, {
      modelPath: MODEL,
      metadata: {
        model: { sha256: embedder.modelSha256, source: MODEL, outputName: embedder.signature.outputName },
        preprocessing: embedder.preprocessing,
        dataset: { spec: `folder:${images}`, manifestHash: 'fixture' },
      },
      set,
      sources: manifest.items.map((item) => item.source),
      hnsw: { m: 16, efConstruction: 200, ef: 64, seed: 0 },
    });
    return { dir, images, set };
  } finally {
    await embedder.release();
  }
}

/** One expected neighbour. */
export interface ExpectedHit {
  id: string;
  label: string;
  score: number;
}

/**
 * Brute-force neighbours of `query` among the rows of `set` (float64 cosine), best first, leaving out
 * row `exclude` and rows whose label is not `label` when given.
 */
export function bruteForce(set: EmbeddingSet, query: Float32Array, k: number, options: { exclude?: number; label?: string } = {}): ExpectedHit[] {
  const rows = set.ids.map((_, i) => i).filter((i) => i !== options.exclude && (options.label === undefined || set.labels[i] === options.label));
  const values = new Float64Array(rows.length * set.dim);
  rows.forEach((row, i) => values.set(set.vectors.subarray(row * set.dim, (row + 1) * set.dim), i * set.dim));
  const [block] = bruteForceNeighbourBlocks({
    queries: { values: Float64Array.from(query), count: 1, dim: set.dim },
    gallery: { values, count: rows.length, dim: set.dim },
    k: Math.min(k, rows.length),
  });
  if (!block) return [];
  return Array.from(block.indices, (index, j) => {
    const row = rows[index] as number;
    return { id: set.ids[row] as string, label: set.labels[row] as string, score: block.similarities[j] as number };
  });
}

/** Row `row` of `set`. */
export function rowOf(set: EmbeddingSet, row: number): Float32Array {
  return set.vectors.slice(row * set.dim, (row + 1) * set.dim);
}
