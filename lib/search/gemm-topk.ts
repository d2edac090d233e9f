/**
 * @file The exact nearest-neighbour kernel: one onnxruntime graph
 * `scores = Gemm(queries[n, D], gallery[G, D], transB=1 [, bias[1, G]])` -> `TopK(k, axis=1, largest=1, sorted=1)`.
 *
 * Queries run in chunks, so the score matrix held at any time is one chunk x G, never queries x G.
 * The gallery is fed as an input (not baked into the graph), so one session per
 * (dim, k, bias or not, threads) signature serves every gallery; sessions are cached for the process.
 *
 * Ties: ONNX TopK (opset >= 11) orders equal values by index ascending, and onnxruntime's CPU kernel
 * does so in every regime measured (k = 1, heap, partial sort and full sort paths; k from 1 to G;
 * G up to 100,000, see spec/search/gemm-topk.spec.ts). Rows therefore come out ordered by
 * (score descending, gallery index ascending) without a post-sort. Scores are float32 inner products
 * summed by MLAS; two gallery rows tie only when their float32 products are equal.
 *
 * With `withScores` the graph also returns the chunk's whole score matrix (the metrics of the whole
 * ranking, lib/metrics/full-ranking.ts, read it); it is the same tensor TopK ranked.
 *
 * Sessions run on the CPU provider: the gallery is a host array fed on every run (the node binding has
 * no IO binding), and the CPU TopK's tie order is the one verified.
 */
import ort from '../onnx/ort.js';
import { invalidParameterError } from '../errors.js';
import { encodeModel, int64Tensor, node, tensorValueInfo } from '../onnx/builder.js';
import { createSession } from '../onnx/session.js';
import { DEFAULT_QUERY_CHUNK } from '../util/defaults.js';
import type { NeighbourBlock } from './neighbours.js';

/** Options of {@link gemmTopK}. */
export interface GemmTopKOptions {
  /** Neighbours per query (>= 1). Rows hold exactly k entries, padded when the gallery has fewer rows. */
  k: number;
  /**
   * Per-gallery-row bias added to every query's score for that row (length = galleryCount). k-means
   * passes `-|c|^2 / 2`, which turns the top-1 score into the nearest centroid in Euclidean distance.
   * With a bias, `similarities` hold the biased scores.
   */
  bias?: Float32Array;
  /** Queries per onnxruntime run (>= 1); default {@link DEFAULT_QUERY_CHUNK}. */
  chunkSize?: number;
  /** onnxruntime intra-op threads; onnxruntime's default when omitted. */
  threads?: number;
  /** Also return each chunk's scores against the whole gallery (`scores` of the blocks). */
  withScores?: boolean;
}

const sessions = new Map<string, Promise<ort.InferenceSession>>();

function buildGraph(dim: number, k: number, hasBias: boolean, withScores: boolean): Uint8Array {
  const scores = tensorValueInfo('scores', 'float32', ['query_count', 'gallery_count']);
  return encodeModel({
    graphName: `gemm_topk_d${dim}_k${k}${hasBias ? '_bias' : ''}${withScores ? '_scores' : ''}`,
    inputs: [
      tensorValueInfo('queries', 'float32', ['query_count', dim]),
      tensorValueInfo('gallery', 'float32', ['gallery_count', dim]),
      ...(hasBias ? [tensorValueInfo('bias', 'float32', [1, 'gallery_count'])] : []),
    ],
    outputs: [tensorValueInfo('values', 'float32', ['query_count', k]), tensorValueInfo('indices', 'int64', ['query_count', k]), ...(withScores ? [scores] : [])],
    initializers: [int64Tensor('k', [1], [k])],
    valueInfo: withScores ? [] : [scores],
    nodes: [
      node('Gemm', hasBias ? ['queries', 'gallery', 'bias'] : ['queries', 'gallery'], ['scores'], {
        alpha: { f: 1 },
        beta: { f: 1 },
        transA: { i: 0 },
        transB: { i: 1 },
      }),
      node('TopK', ['scores', 'k'], ['values', 'indices'], { axis: { i: 1 }, largest: { i: 1 }, sorted: { i: 1 } }),
    ],
  });
}

function sessionFor(dim: number, k: number, hasBias: boolean, withScores: boolean, threads: number | undefined): Promise<ort.InferenceSession> {
  const key = `${dim}/${k}/${hasBias}/${withScores}/${threads ?? 'default'}`;
  let session = sessions.get(key);
  if (session === undefined) {
    session = createSession(buildGraph(dim, k, hasBias, withScores), {
      device: 'cpu',
      name: `gemm-topk ${key}`,
      ...(threads !== undefined ? { threads } : {}),
    }).then((created) => created.session);
    session.catch(() => sessions.delete(key));
    sessions.set(key, session);
  }
  return session;
}

function checkCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw invalidParameterError(name, 'a non-negative integer', value);
}

function checkPositive(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1) throw invalidParameterError(name, 'a positive integer', value);
}

function checkMatrix(name: string, data: Float32Array, rows: number, dim: number): void {
  if (!(data instanceof Float32Array)) throw invalidParameterError(name, 'a Float32Array', data);
  if (data.length !== rows * dim) {
    throw invalidParameterError(`${name}.length`, `${rows * dim} (${rows} rows x ${dim} dims)`, data.length);
  }
}

/**
 * The `options.k` highest-scoring gallery rows for every query, score = inner product (+ bias),
 * ordered by score descending then gallery index ascending. `queries` and `gallery` are row-major
 * `count x dim` arrays (L2-normalised for cosine similarity). Yields one {@link NeighbourBlock} per
 * chunk of queries; when the gallery has fewer than k rows, each row is padded with index -1 and
 * similarity -Infinity. With `options.withScores` each block also holds its queries' scores against
 * every gallery row.
 */
export async function* gemmTopK(
  queries: Float32Array,
  queryCount: number,
  gallery: Float32Array,
  galleryCount: number,
  dim: number,
  options: GemmTopKOptions,
): AsyncGenerator<NeighbourBlock> {
  const { k, bias, chunkSize = DEFAULT_QUERY_CHUNK, threads, withScores = false } = options;
  checkCount('queryCount', queryCount);
  checkCount('galleryCount', galleryCount);
  checkPositive('dim', dim);
  checkMatrix('queries', queries, queryCount, dim);
  checkMatrix('gallery', gallery, galleryCount, dim);
  checkPositive('k', k);
  checkPositive('chunkSize', chunkSize);
  if (threads !== undefined) checkPositive('threads', threads);
  if (bias !== undefined) checkMatrix('bias', bias, galleryCount, 1);

  const found = Math.min(k, galleryCount);
  const session = found > 0 ? await sessionFor(dim, found, bias !== undefined, withScores, threads) : undefined;
  const feeds: Record<string, ort.Tensor> = {
    gallery: new ort.Tensor('float32', gallery, [galleryCount, dim]),
    ...(bias !== undefined ? { bias: new ort.Tensor('float32', bias, [1, galleryCount]) } : {}),
  };

  for (let start = 0; start < queryCount; start += chunkSize) {
    const count = Math.min(chunkSize, queryCount - start);
    const indices = new Int32Array(count * k).fill(-1);
    const similarities = new Float32Array(count * k).fill(-Infinity);
    let scores: Float32Array | undefined = withScores ? new Float32Array(0) : undefined;
    if (session !== undefined) {
      feeds.queries = new ort.Tensor('float32', queries.subarray(start * dim, (start + count) * dim), [count, dim]);
      const out = await session.run(feeds);
      const values = out.values?.data as Float32Array;
      const rows = out.indices?.data as BigInt64Array;
      for (let q = 0; q < count; q++) {
        for (let j = 0; j < found; j++) {
          indices[q * k + j] = Number(rows[q * found + j]);
          similarities[q * k + j] = values[q * found + j] as number;
        }
      }
      if (withScores) scores = out.scores?.data as Float32Array;
    }
    yield { queryOffset: start, queryCount: count, k, indices, similarities, ...(scores !== undefined ? { scores } : {}) };
  }
}
