/**
 * @file Defaults of the search service (app.ts and its routes), apart from its implementation so that command-line
 * help can show them without loading fastify.
 */

/** Largest request body or uploaded file the service accepts by default: 10 MiB. */
export const DEFAULT_MAX_UPLOAD_BYTES = 10 * 1024 * 1024;

/** Neighbours returned when a request gives no k. */
export const DEFAULT_K = 10;

/** Largest k a request may ask for, unless the service is told otherwise. */
export const DEFAULT_MAX_K = 100;

/** Thumbnail sizes of `GET /items/:id/image`: smallest, largest and default edge in pixels. */
export const THUMBNAIL_SIZES = { min: 16, max: 1024, default: 128 } as const;

/** Page size of `GET /items`: largest and default. */
export const ITEMS_PAGE = { max: 1000, default: 100 } as const;

/**
 * Seconds a shutting-down service waits for the requests in flight before it closes every connection
 * still open (one that sent half a request's headers included), so that shutdown always ends.
 */
export const DEFAULT_SHUTDOWN_GRACE_SECONDS = 10;
