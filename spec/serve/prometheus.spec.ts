/**
 * `GET /metrics` in the Prometheus text format: exact counter values after a known sequence of
 * requests, the histograms, the gauges, the process metrics, and one registry per app.
 */
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import { createSearchApp } from '../../lib/serve/app.js';
import { EMBEDDING_BUCKETS, REQUEST_BUCKETS } from '../../lib/serve/prometheus.js';
import { makeTempDir } from '../image/image-fixtures.js';
import { buildFixtureIndex, type FixtureIndex } from './fixtures.js';

/** One sample of the exposition text: metric name, labels and value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text exposition format (0.0.4) into samples; checks each line's syntax. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`Not a sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key as string] = value as string;
    const raw = m[3] as string;
    samples.push({ name: m[1] as string, labels, value: raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw) });
  }
  return samples;
}

/** The value of the sample `name` whose labels are exactly `labels`, or undefined. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const key = JSON.stringify(Object.entries(labels).sort());
  return samples.find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === key)?.value;
}

/** `METHOD route status` -> count, from the request counter. */
function requestCounts(samples: Sample[]): Record<string, number> {
  return Object.fromEntries(
    samples
      .filter((s) => s.name === 'dmlkit_http_requests_total')
      .map((s) => [`${s.labels['method']} ${s.labels['route']} ${s.labels['status_code']}`, s.value])
      .sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1)),
  );
}

describe('serve/Prometheus GET /metrics', function () {
  this.timeout(60_000);
  let tmp: string;
  let fixture: FixtureIndex;
  let app: FastifyInstance;

  before(async () => {
    tmp = makeTempDir('dml-prom-');
    fixture = await buildFixtureIndex(tmp);
    app = await createSearchApp({ dir: fixture.dir, device: 'cpu' });
  });
  after(async () => {
    await app?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  async function scrape(target: FastifyInstance = app): Promise<Sample[]> {
    const res = await target.inject({ url: '/metrics' });
    expect(res.statusCode).to.equal(200);
    expect(res.headers['content-type']).to.equal('text/plain; version=0.0.4; charset=utf-8');
    return parseExposition(res.body);
  }

  it('counts a known sequence of requests by route and status, with latency and embedding histograms', async () => {
    const image = readFileSync(path.join(fixture.images, 'bag', 't10k-00018.png'));
    const png = { 'content-type': 'image/png' };
    for (let i = 0; i < 2; i++) expect((await app.inject({ method: 'POST', url: '/search?k=3', headers: png, payload: image })).statusCode).to.equal(200);
    expect((await app.inject({ method: 'POST', url: '/search', headers: png, payload: Buffer.from('not an image') })).statusCode).to.equal(422);
    expect((await app.inject({ method: 'POST', url: '/search?k=0', headers: png, payload: image })).statusCode).to.equal(400);
    expect((await app.inject({ url: '/search?id=nope' })).statusCode).to.equal(404);
    expect((await app.inject({ url: `/items/${encodeURIComponent('bag/t10k-00018.png')}/image` })).statusCode).to.equal(200);
    for (let i = 0; i < 3; i++) expect((await app.inject({ url: '/healthz' })).statusCode).to.equal(200);
    expect((await app.inject({ url: '/healthz', headers: { host: 'rebound.example' } })).statusCode).to.equal(403);
    expect((await app.inject({ url: '/no/such/path' })).statusCode).to.equal(404);
    expect((await app.inject({ method: 'DELETE', url: '/items/x' })).statusCode).to.equal(403);

    const samples = await scrape();
    expect(requestCounts(samples)).to.deep.equal({
      'DELETE /items/:id 403': 1,
      'GET (no route) 404': 1,
      'GET /healthz 200': 3,
      'GET /healthz 403': 1,
      'GET /items/:id/image 200': 1,
      'GET /search 404': 1,
      'POST /search 200': 2,
      'POST /search 400': 1,
      'POST /search 422': 1,
    });

    // Latency histogram per route: cumulative buckets ending in +Inf = count.
    const latency = (suffix: string, labels: Record<string, string>): number | undefined => valueOf(samples, `dmlkit_http_request_duration_seconds${suffix}`, labels);
    expect(latency('_count', { method: 'POST', route: '/search' })).to.equal(4);
    expect(latency('_count', { method: 'GET', route: '/healthz' })).to.equal(4);
    expect(latency('_sum', { method: 'POST', route: '/search' })).to.be.above(0);
    const buckets = [...REQUEST_BUCKETS.map(String), '+Inf'].map((le) => latency('_bucket', { le, method: 'POST', route: '/search' }) as number);
    expect(buckets.every((v, i) => i === 0 || v >= (buckets[i - 1] as number))).to.equal(true);
    expect(buckets.at(-1)).to.equal(4);

    // Embedding time: the two good images and the undecodable one reached the workers; k=0 did not.
    const embedding = (suffix: string, outcome: string, le?: string): number | undefined =>
      valueOf(samples, `dmlkit_embedding_duration_seconds${suffix}`, le === undefined ? { outcome } : { le, outcome });
    expect(embedding('_count', 'ok')).to.equal(2);
    expect(embedding('_count', 'error')).to.equal(1);
    expect(embedding('_bucket', 'ok', '+Inf')).to.equal(2);
    expect(samples.filter((s) => s.name === 'dmlkit_embedding_duration_seconds_bucket' && s.labels['outcome'] === 'ok')).to.have.length(EMBEDDING_BUCKETS.length + 1);
    expect(embedding('_sum', 'ok')).to.be.above(0);

    // Gauges read at scrape time.
    expect(valueOf(samples, 'dmlkit_index_items')).to.equal(24);
    expect(valueOf(samples, 'dmlkit_index_labels')).to.equal(4);
    expect(valueOf(samples, 'dmlkit_inference_pending')).to.equal(0);
    expect(valueOf(samples, 'dmlkit_inference_workers')).to.equal(1);

    // prom-client's default process metrics.
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
      expect(samples.some((s) => s.name === name), name).to.equal(true);
    }

    // The scrape itself is counted once answered; HEAD and the JSON metrics are separate routes.
    const again = requestCounts(await scrape());
    expect(again['GET /metrics 200']).to.equal(1);
    expect(again['POST /search 200']).to.equal(2);
  });

  it('keeps one registry per app: a second app in the process starts from zero and does not disturb the first', async () => {
    const before = requestCounts(await scrape());
    const other = await createSearchApp({ dir: fixture.dir, device: 'cpu' });
    try {
      await other.inject({ url: '/healthz' });
      expect(requestCounts(await scrape(other))).to.deep.equal({ 'GET /healthz 200': 1 });
    } finally {
      await other.close();
    }
    const after = requestCounts(await scrape());
    expect(after).to.deep.equal({ ...before, 'GET /metrics 200': (before['GET /metrics 200'] as number) + 1 });
  });
});
