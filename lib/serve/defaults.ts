/**
 * @file Defaults of the search service (app.ts), apart from its implementation so that command-line
 * help can show them without loading fastify.
 */

/** Largest request body or uploaded file the service accepts by default: 10 MiB. */
export const DEFAULT_MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
