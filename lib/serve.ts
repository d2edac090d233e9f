/**
 * @file `dmlkit/serve`: the nearest-neighbour image search service (fastify app, index store, inference
 * worker threads).
 */
export { createSearchApp, type SearchAppOptions } from './serve/app.js';
export type { ServiceLoggerOptions } from './serve/log-redaction.js';
export { DEFAULT_MAX_UPLOAD_BYTES } from './serve/defaults.js';
export { SearchIndexStore } from './index-store/store.js';
export type { SearchIndexMetadata, IndexedItem, NewItem, SearchHit, IndexSearchOptions, OpenIndexOptions, CreateIndexInit } from './index-store/layout.js';
export type { HnswParams } from './search/hnsw.js';
export { DEFAULT_SNAPSHOT_EVERY } from './index-store/layout.js';
export { InferenceWorkerPool, type WorkerPoolOptions } from './serve/worker-pool.js';
export { RequestMetrics, type RouteMetrics } from './serve/metrics.js';
export { ServiceMetrics, type ServiceGauges } from './serve/prometheus.js';
