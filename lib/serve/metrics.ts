/**
 * @file The JSON request metrics of the search service (`GET /metrics.json`; Prometheus scrapes
 * `GET /metrics`, see prometheus.ts): a count per route and status, and latency quantiles over a
 * sliding window of the most recent requests of each route.
 *
 * Quantiles are exact over the window (the latest {@link LATENCY_WINDOW} latencies of a route, kept in
 * a ring buffer and sorted when read, nearest-rank definition), so they follow the current load
 * rather than averaging over the server's whole life. Counts cover the whole life of the process.
 */

/** Latencies kept per route for the quantiles. */
export const LATENCY_WINDOW = 4096;

/** The quantiles reported, as fractions. */
export const QUANTILES = [0.5, 0.9, 0.99] as const;

/** What {@link RequestMetrics.snapshot} reports for one route. */
export interface RouteMetrics {
  /** Requests answered since the start. */
  count: number;
  /** Requests per HTTP status, e.g. `{ "200": 10, "422": 1 }`. */
  statuses: Record<string, number>;
  /** Latency in milliseconds over the window: p50, p90, p99, max and mean, and the window's size. */
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number; window: number };
}

/** Counts and latencies of one route. */
class RouteRecorder {
  count = 0;
  readonly statuses = new Map<number, number>();
  readonly #latencies = new Float64Array(LATENCY_WINDOW);
  #filled = 0;
  #next = 0;

  record(status: number, ms: number): void {
    this.count++;
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
    this.#latencies[this.#next] = ms;
    this.#next = (this.#next + 1) % LATENCY_WINDOW;
    this.#filled = Math.min(this.#filled + 1, LATENCY_WINDOW);
  }

  snapshot(): RouteMetrics {
    const sorted = this.#latencies.slice(0, this.#filled).sort();
    const n = sorted.length;
    // Nearest rank: the smallest value with at least q * n values at or below it.
    const at = (q: number): number => (n === 0 ? 0 : (sorted[Math.max(0, Math.ceil(q * n) - 1)] as number));
    const round = (ms: number): number => Math.round(ms * 1000) / 1000;
    const [p50, p90, p99] = QUANTILES.map((q) => round(at(q))) as [number, number, number];
    const mean = n === 0 ? 0 : sorted.reduce((s, v) => s + v, 0) / n;
    return {
      count: this.count,
      statuses: Object.fromEntries([...this.statuses].sort(([a], [b]) => a - b).map(([s, c]) => [String(s), c])),
      latencyMs: { p50, p90, p99, max: round(n === 0 ? 0 : (sorted[n - 1] as number)), mean: round(mean), window: n },
    };
  }
}

/** Request counts and latency quantiles per route (`"POST /search"`), for `GET /metrics.json`. */
export class RequestMetrics {
  readonly #routes = new Map<string, RouteRecorder>();
  readonly #started = Date.now();

  /** Records one answered request of `route` with its status and latency in milliseconds. */
  record(route: string, status: number, ms: number): void {
    let recorder = this.#routes.get(route);
    if (!recorder) {
      recorder = new RouteRecorder();
      this.#routes.set(route, recorder);
    }
    recorder.record(status, ms);
  }

  /** Seconds since the metrics were created (the server's uptime). */
  get uptimeSeconds(): number {
    return (Date.now() - this.#started) / 1000;
  }

  /** Every route's metrics, routes in alphabetical order, plus the total count. */
  snapshot(): { uptimeSeconds: number; requests: number; routes: Record<string, RouteMetrics> } {
    const routes = [...this.#routes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return {
      uptimeSeconds: Math.round(this.uptimeSeconds * 1000) / 1000,
      requests: routes.reduce((s, [, r]) => s + r.count, 0),
      routes: Object.fromEntries(routes.map(([name, r]) => [name, r.snapshot()])),
    };
  }
}
