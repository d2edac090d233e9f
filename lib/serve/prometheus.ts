/**
 * @file Prometheus metrics of the search service (`GET /metrics`, text exposition format 0.0.4), kept
 * with prom-client in a {@link Registry} of their own, so that two apps in one process (the tests, or
 * an embedding application with its own metrics) never share or clash over a metric:
 *
 * - `dmlkit_http_requests_total{method, route, status_code}`: requests answered. `route` is the route
 *   pattern (`/items/:id`), or `(no route)` for a 404 on an unknown path, so the label set stays small.
 * - `dmlkit_http_request_duration_seconds{method, route}`: latency histogram (fastify's elapsed time,
 *   from the request's arrival to the end of the response).
 * - `dmlkit_embedding_duration_seconds{outcome}`: time from handing an uploaded image to the inference
 *   workers to its embedding (queue wait, decoding and inference), `outcome` `ok` or `error`.
 * - `dmlkit_index_items`, `dmlkit_index_labels`: the index's size now.
 * - `dmlkit_inference_pending`, `dmlkit_inference_workers`: images being embedded, worker threads.
 * - prom-client's default process metrics (`process_*`, `nodejs_*`: CPU, memory, event-loop lag, GC,
 *   handles) in the same registry.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Latency buckets of the request histogram, in seconds. */
export const REQUEST_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Buckets of the embedding histogram, in seconds. */
export const EMBEDDING_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Route label of requests that matched no route. */
export const NO_ROUTE = '(no route)';

/** Read when Prometheus scrapes: the state of the index and the workers. */
export interface ServiceGauges {
  /** Items in the index. */
  items(): number;
  /** Distinct labels in the index (the LanceDB store counts them asynchronously). */
  labels(): number | Promise<number>;
  /** Images being embedded or waiting for a worker. */
  pending(): number;
  /** Inference worker threads. */
  workers(): number;
}

/** The Prometheus metrics of one app (see the file comment). */
export class ServiceMetrics {
  /** The registry `GET /metrics` renders; no other app writes to it. */
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'route' | 'status_code'>;
  readonly #latency: Histogram<'method' | 'route'>;
  readonly #embedding: Histogram<'outcome'>;

  /** Creates the metrics; `gauges` are read at each scrape. `defaultMetrics: false` leaves out the process metrics. */
  constructor(gauges: ServiceGauges, options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.#requests = new Counter({
      name: 'dmlkit_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status_code'],
      registers,
    });
    this.#latency = new Histogram({
      name: 'dmlkit_http_request_duration_seconds',
      help: 'HTTP request latency in seconds, by method and route pattern.',
      labelNames: ['method', 'route'],
      buckets: [...REQUEST_BUCKETS],
      registers,
    });
    this.#embedding = new Histogram({
      name: 'dmlkit_embedding_duration_seconds',
      help: 'Time to embed an uploaded image in seconds (queue wait, decoding and inference), by outcome (ok or error).',
      labelNames: ['outcome'],
      buckets: [...EMBEDDING_BUCKETS],
      registers,
    });
    const gauge = (name: string, help: string, read: () => number | Promise<number>): void => {
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          this.set(await read());
        },
      });
    };
    gauge('dmlkit_index_items', 'Items in the search index.', () => gauges.items());
    gauge('dmlkit_index_labels', 'Distinct labels in the search index.', () => gauges.labels());
    gauge('dmlkit_inference_pending', 'Images being embedded or waiting for an inference worker.', () => gauges.pending());
    gauge('dmlkit_inference_workers', 'Inference worker threads.', () => gauges.workers());
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** Records one answered request: `route` is the route pattern, or undefined when no route matched. */
  recordRequest(method: string, route: string | undefined, statusCode: number, elapsedMs: number): void {
    const path = route ?? NO_ROUTE;
    this.#requests.inc({ method, route: path, status_code: String(statusCode) });
    this.#latency.observe({ method, route: path }, elapsedMs / 1000);
  }

  /** Runs `embed` and records how long it took and whether it succeeded. */
  async timeEmbedding<T>(embed: () => Promise<T>): Promise<T> {
    const started = performance.now();
    let outcome = 'error';
    try {
      const result = await embed();
      outcome = 'ok';
      return result;
    } finally {
      this.#embedding.observe({ outcome }, (performance.now() - started) / 1000);
    }
  }

  /** The Content-Type of {@link render}'s text (`text/plain; version=0.0.4; charset=utf-8`). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every metric in the Prometheus text exposition format. */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
