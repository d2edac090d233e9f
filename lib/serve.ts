/**
 * @file `dmlkit/serve`: the nearest-neighbour image search service (fastify app, index store, inference
 * worker threads).
 */
export { createSearchApp, type SearchAppOptions } from './serve/app.js';
export { SearchIndexStore } from './index-store/store.js';
export type { SearchIndexMetadata, IndexedItem, NewItem, SearchHit } from './index-store/layout.js';
export { InferenceWorkerPool, type WorkerPoolOptions } from './serve/worker-pool.js';
export { RequestMetrics } from './serve/metrics.js';
