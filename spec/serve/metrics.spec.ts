import { expect } from 'chai';
import { LATENCY_WINDOW, RequestMetrics } from '../../lib/serve/metrics.js';

describe('serve/RequestMetrics', () => {
  it('counts requests per route and status and gives nearest-rank latency quantiles', () => {
    const metrics = new RequestMetrics();
    // Latencies 1..100 ms in a shuffled order: p50 = 50, p90 = 90, p99 = 99, max = 100, mean = 50.5.
    const order = Array.from({ length: 100 }, (_, i) => ((i * 37) % 100) + 1);
    order.forEach((ms, i) => metrics.record('POST /search', i % 10 === 0 ? 422 : 200, ms));
    metrics.record('GET /healthz', 200, 0.25);
    const snapshot = metrics.snapshot();
    expect(snapshot.requests).to.equal(101);
    expect(Object.keys(snapshot.routes)).to.deep.equal(['GET /healthz', 'POST /search']);
    expect(snapshot.routes['POST /search']).to.deep.equal({
      count: 100,
      statuses: { '200': 90, '422': 10 },
      latencyMs: { p50: 50, p90: 90, p99: 99, max: 100, mean: 50.5, window: 100 },
    });
    expect(snapshot.routes['GET /healthz']?.latencyMs).to.deep.equal({ p50: 0.25, p90: 0.25, p99: 0.25, max: 0.25, mean: 0.25, window: 1 });
    expect(snapshot.uptimeSeconds).to.be.at.least(0);
  });

  it('computes the quantiles over the latest window of requests only', () => {
    const metrics = new RequestMetrics();
    for (let i = 0; i < LATENCY_WINDOW; i++) metrics.record('GET /search', 200, 1000);
    for (let i = 0; i < LATENCY_WINDOW; i++) metrics.record('GET /search', 200, 2);
    const route = metrics.snapshot().routes['GET /search'];
    expect(route?.count).to.equal(2 * LATENCY_WINDOW);
    expect(route?.latencyMs).to.deep.equal({ p50: 2, p90: 2, p99: 2, max: 2, mean: 2, window: LATENCY_WINDOW });
  });
});
