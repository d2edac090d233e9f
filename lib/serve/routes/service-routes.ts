/**
 * @file The routes about the service itself: `GET /healthz`, `GET /metrics` (Prometheus text format,
 * prometheus.ts), `GET /metrics.json` (request latency quantiles over a window, index and worker
 * state; metrics.ts), `GET /openapi.json` and the search page at `/` (page.ts).
 */
import type { FastifyInstance } from 'fastify';
import { DEFAULT_K } from '../defaults.js';
import { searchPage } from '../page.js';
import type { RouteContext } from './route-context.js';

/** Registers the service routes (a fastify plugin; see the file comment). */
export async function serviceRoutes(app: FastifyInstance, context: RouteContext): Promise<void> {
  const { store, pool, provider: chosen, schemas, maxK, metrics, prometheus } = context;
  app.get('/healthz', { schema: schemas.healthz }, async () => ({
    status: 'ok',
    items: store.count,
    workers: pool.size,
    pending: pool.pending,
    generation: store.generation,
    dataFiles: await store.dataFiles(),
    provider: chosen?.provider ?? null,
  }));

  app.get('/metrics', { schema: schemas.metrics }, async (_request, reply) => reply.type(prometheus.contentType).send(await prometheus.render()));

  app.get('/metrics.json', { schema: schemas.metricsJson }, async () => ({
    ...metrics.snapshot(),
    index: { items: store.count, labels: (await store.labelCounts()).length, dim: store.dim, generation: store.generation, journalLines: await store.pendingChanges() },
    inference: { workers: pool.size, pending: pool.pending, provider: chosen?.provider ?? null },
  }));

  app.get('/openapi.json', { schema: schemas.openapi }, async () => app.swagger());

  app.get('/', { schema: schemas.page }, async (_request, reply) => reply.type('text/html; charset=utf-8').send(searchPage({ maxK, defaultK: DEFAULT_K })));
}
