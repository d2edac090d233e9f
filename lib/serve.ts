/**
 * @file `dmlkit/serve`: the nearest-neighbour image search service (fastify app, the index stores
 * behind one interface: hnswlib folder and LanceDB `lance:<folder>`, inference worker threads).
 *
 * @module dmlkit/serve
 */
export { createSearchApp, type SearchAppOptions } from './serve/app.js';
export type { ServiceLoggerOptions } from './serve/log-redaction.js';
export { DEFAULT_K, DEFAULT_MAX_K, DEFAULT_MAX_UPLOAD_BYTES, ITEMS_PAGE, THUMBNAIL_SIZES } from './serve/defaults.js';
export { SearchIndexStore } from './index-store/hnsw-store.js';
export type { SearchIndexMetadata, IndexedItem, NewItem, SearchHit, IndexSearchOptions, OpenIndexOptions, CreateIndexInit } from './index-store/layout.js';
export type { HnswParams } from './search/hnsw.js';
export { DEFAULT_SNAPSHOT_EVERY } from './index-store/layout.js';
export type { IndexStore, IndexStoreKind, IndexStoreMetadata, LabelCount, ListOptions, OpenIndexStoreOptions, OptimizeOptions, Awaitable } from './index-store/index-store.js';
export { LANCE_PREFIX } from './index-store/index-store.js';
export { openIndexStore, createIndexStore, parseIndexLocation, type CreateIndexStoreInit } from './index-store/open-store.js';
export {
  LanceIndexStore,
  checkLanceAnnParams,
  DEFAULT_LANCE_ANN,
  DEFAULT_REFRESH_SECONDS,
  LANCE_INDEX_FORMAT,
  LANCE_TABLE,
  type LanceAnnParams,
  type LanceIndexMetadata,
  type CreateLanceIndexInit,
  type LanceOptimizeResult,
} from './index-store/lance-store.js';
export { InferenceWorkerPool, type WorkerPoolOptions } from './serve/worker-pool.js';
export { RequestMetrics, type RouteMetrics } from './serve/metrics.js';
export { ServiceMetrics, type ServiceGauges } from './serve/prometheus.js';
