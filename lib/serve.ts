/**
 * @file `dmlkit/serve`: the nearest-neighbour image search service (fastify app, index store, inference
 * worker threads).
 */
export { createSearchApp, type SearchAppOptions } from './serve/app.js';
export { SearchIndexStore, type SearchIndexMetadata, type IndexedItem, type NewItem, type SearchHit } from './serve/index-store.js';
export { InferenceWorkerPool, type WorkerPoolOptions } from './serve/worker-pool.js';
export { RequestMetrics } from './serve/metrics.js';
