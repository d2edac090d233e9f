/**
 * @file Defaults of the search service (app.ts) and its index store (index-store.ts), apart from the
 * implementations so that command-line help can show them without loading fastify or hnswlib.
 */

/** Largest request body or uploaded file the service accepts by default: 10 MiB. */
export const DEFAULT_MAX_UPLOAD_BYTES = 10 * 1024 * 1024;

/** Journal lines after which a writable index takes a snapshot by itself. */
export const DEFAULT_SNAPSHOT_EVERY = 1000;
