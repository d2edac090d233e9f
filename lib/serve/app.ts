/**
 * @file The search service as a fastify app: `createSearchApp(options)` opens an index folder (for
 * writing only with `allowWrites`; see access.ts for the Host check, the write token and the origin
 * rule), starts the inference workers and returns the app, used both by `dml serve` (which calls
 * `listen`) and by the tests (`app.inject`). Closing the app stops accepting connections, waits for
 * requests in flight for at most `shutdownGraceSeconds` and then closes every connection still open
 * (a client that sent half a request's headers cannot hold the shutdown up), stops the workers and
 * closes the index (a final snapshot, then the lock is released).
 *
 * Endpoints, registered by one fastify plugin per concern (routes/search-routes.ts,
 * routes/item-routes.ts, routes/service-routes.ts; each route with a fastify schema, schemas.ts; the
 * OpenAPI document generated from them is at `GET /openapi.json` and Swagger UI at `GET /docs`, see docs.ts):
 * - `POST /search`: an image as multipart/form-data (one file; fields `k`, `label`) or as the raw body
 *   (`image/*` or `application/octet-stream`; `?k=&label=`) -> its nearest neighbours.
 * - `GET /search?id=`: the neighbours of an indexed item (the item itself left out).
 * - `POST /search/vector`: `{ "vector": [...], "k": 10, "label": "..." }` -> neighbours.
 * - `GET /items`, `POST /items` (image + `label`, optional `id`; persisted before the answer),
 *   `DELETE /items/:id`, `GET /items/:id/image` (PNG thumbnail), `GET /labels` (labels and counts).
 * - `GET /healthz`; `GET /metrics`, Prometheus text format (prometheus.ts); `GET /metrics.json`, the
 *   JSON request metrics that `GET /metrics` served before Prometheus (latency quantiles over a
 *   window, index and worker state; metrics.ts), kept at their own path for the clients that read them.
 * - `GET /openapi.json`, `GET /docs` and the page at `/` (page.ts).
 *
 * Request parameters are checked in the handlers rather than by fastify's Ajv (the validator compiler
 * accepts everything): the same `k`, `label` and `id` also come as multipart form fields, which a JSON
 * schema cannot reach, and this way every invalid value of either origin gets the same message, naming
 * the parameter, the range expected and the value received. The schemas state the same bounds.
 * Responses are serialized with the response schemas.
 *
 * Every error is a JSON {@link ErrorBody}: bad input of any kind is a 4xx (see http-errors.ts), never a 500.
 */
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { DEFAULT_DEVICE, type DeviceChoice, type ProviderChoice } from '../onnx/devices.js';
import { openIndexStore } from '../index-store/open-store.js';
import { checkPositiveInteger, checkTimerSeconds } from '../util/check.js';
import { accessPolicy, checkHost, checkWrite } from './access.js';
import { DEFAULT_K, DEFAULT_MAX_K, DEFAULT_MAX_UPLOAD_BYTES, DEFAULT_SHUTDOWN_GRACE_SECONDS, ITEMS_PAGE, THUMBNAIL_SIZES } from './defaults.js';
import { registerApiDocs } from './docs.js';
import { errorBody, HttpError } from './http-errors.js';
import { redactingLogger, type ServiceLoggerOptions } from './log-redaction.js';
import { RequestMetrics } from './metrics.js';
import { ServiceMetrics } from './prometheus.js';
import { itemRoutes } from './routes/item-routes.js';
import type { RouteAccess, RouteContext } from './routes/route-context.js';
import { searchRoutes } from './routes/search-routes.js';
import { serviceRoutes } from './routes/service-routes.js';
import { routeSchemas } from './schemas.js';
import { InferenceWorkerPool } from './worker-pool.js';

/** Options of {@link createSearchApp}. */
export interface SearchAppOptions {
  /** The index location (built by `dml index build`): a folder (hnswlib store) or `lance:<folder>` (LanceDB store). */
  dir: string;
  /** Inference worker threads. Default 1. */
  workers?: number;
  /** onnxruntime intra-op threads per worker. */
  threads?: number | undefined;
  /** Execution provider choice. Default `auto`. */
  device?: DeviceChoice;
  /** Called once the workers have loaded the model, with the provider they run on and the ones tried before. */
  onProvider?: (chosen: ProviderChoice) => void;
  /** Largest request body or uploaded file, in bytes. Default {@link DEFAULT_MAX_UPLOAD_BYTES}. */
  maxUploadBytes?: number;
  /** Largest width x height of an uploaded image (decompression-bomb guard); decode.ts's default when absent. */
  limitInputPixels?: number | undefined;
  /** Largest k a request may ask for. Default {@link DEFAULT_MAX_K}. */
  maxK?: number;
  /** Images being embedded at once before requests are refused with 503. Default 256. */
  maxPending?: number;
  /** Journal lines after which the index takes a snapshot (hnswlib store). */
  snapshotEvery?: number;
  /** Seconds between checks for a newer table version (LanceDB store, read-only). */
  refreshSeconds?: number;
  /** Commits after which the table's data files are compacted (LanceDB store, with `allowWrites`). */
  compactEvery?: number;
  /** The request log: false (default), true (level info), or a level and destination; tokens are censored (log-redaction.ts). */
  logger?: boolean | ServiceLoggerOptions;
  /** Open the index for writing and serve `POST /items` and `DELETE /items/:id`. Default false (read-only). */
  allowWrites?: boolean;
  /** The bearer token writes need (with `allowWrites`; at least 16 characters). */
  token?: string;
  /** Host names a request's Host (and a write's Origin) may name besides the loopback names (see access.ts). */
  allowedHosts?: string[];
  /**
   * Seconds closing the app waits for requests in flight before it closes every open connection
   * (see the file comment). Default 10 (`DEFAULT_SHUTDOWN_GRACE_SECONDS`); 0 closes them at once.
   */
  shutdownGraceSeconds?: number;
}


/** Methods that never change anything. */
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Opens the index, starts the workers and builds the app (see the file comment). */
export async function createSearchApp(options: SearchAppOptions): Promise<FastifyInstance> {
  const maxUploadBytes = options.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES;
  const maxK = options.maxK ?? DEFAULT_MAX_K;
  checkPositiveInteger('maxUploadBytes', maxUploadBytes);
  checkPositiveInteger('maxK', maxK);
  const shutdownGraceSeconds = checkTimerSeconds('shutdownGraceSeconds', options.shutdownGraceSeconds ?? DEFAULT_SHUTDOWN_GRACE_SECONDS, true);
  const access = accessPolicy(options);
  const store = await openIndexStore(options.dir, {
    writable: access.allowWrites,
    ...(options.snapshotEvery !== undefined ? { snapshotEvery: options.snapshotEvery } : {}),
    ...(options.refreshSeconds !== undefined ? { refreshSeconds: options.refreshSeconds } : {}),
    ...(options.compactEvery !== undefined ? { compactEvery: options.compactEvery } : {}),
  });
  // requestTimeout: a client that trickles its body (slowloris) is cut off after a minute.
  const app = Fastify({ logger: redactingLogger(options.logger), bodyLimit: maxUploadBytes, requestTimeout: 60_000 });
  let pool: InferenceWorkerPool;
  try {
    const { metadata } = store;
    pool = await InferenceWorkerPool.start({
      modelPath: store.modelPath,
      modelSha256: metadata.model.sha256,
      preprocessing: metadata.preprocessing,
      outputName: metadata.model.outputName,
      ...(metadata.model.pooling !== undefined ? { pooling: metadata.model.pooling } : {}),
      device: options.device ?? DEFAULT_DEVICE,
      threads: options.threads,
      limitInputPixels: options.limitInputPixels,
      ...(options.workers !== undefined ? { workers: options.workers } : {}),
      ...(options.maxPending !== undefined ? { maxPending: options.maxPending } : {}),
      onWorkerError: (err) => app.log.error({ err }, 'inference worker stopped'),
    });
  } catch (err) {
    await store.close();
    throw err;
  }
  const chosen = pool.provider;
  if (chosen !== undefined) options.onProvider?.(chosen);
  const metrics = new RequestMetrics();
  const prometheus = new ServiceMetrics({
    items: () => store.count,
    labels: async () => (await store.labelCounts()).length,
    pending: () => pool.pending,
    workers: () => pool.size,
  });
  const embed = (bytes: Uint8Array, name: string): Promise<Float32Array> => prometheus.timeEmbedding(() => pool.embed(bytes, name));
  const schemas = routeSchemas({
    dim: store.dim,
    maxK,
    defaultK: DEFAULT_K,
    maxUploadBytes,
    thumbnail: THUMBNAIL_SIZES,
    maxLimit: ITEMS_PAGE.max,
    defaultLimit: ITEMS_PAGE.default,
  });

  // The handlers check the request parameters (see the file comment); the schemas document them.
  app.setValidatorCompiler(() => () => true);
  await app.register(multipart, { limits: { fileSize: maxUploadBytes, files: 1, fields: 3, parts: 4, fieldSize: 1024 } });
  app.removeContentTypeParser('text/plain');
  const rawBody = (_request: FastifyRequest, body: Buffer, done: (err: null, body: Buffer) => void): void => done(null, body);
  app.addContentTypeParser(/^image\//, { parseAs: 'buffer' }, rawBody);
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, rawBody);
  app.setErrorHandler((err, request, reply) => {
    const body = errorBody(err, { uploadLimitBytes: maxUploadBytes, contentType: request.headers['content-type'] });
    if (body.statusCode >= 500) request.log.error({ err }, 'request failed');
    return reply.status(body.statusCode).send(body);
  });
  app.setNotFoundHandler((request, reply) => {
    const missing = new HttpError(404, 'E_NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]} (see GET /docs, or GET /openapi.json)`);
    const body = errorBody(missing, { uploadLimitBytes: maxUploadBytes, contentType: request.headers['content-type'] });
    return reply.status(404).send(body);
  });
  // Hooks before any plugin with routes (Swagger UI), so that its routes get them too.
  app.addHook('onRequest', async (request) => {
    checkHost(access, request.headers.host);
    // The write check follows the route the router matched (however its path was spelled), never the
    // raw URL; a request with an unsafe method that matched no route is held to the same check, so that
    // probing spellings of a write path tells nothing without the token.
    const config = request.routeOptions.config as Partial<RouteAccess> | undefined;
    if (config?.write === true || (request.is404 && !SAFE_METHODS.has(request.method))) checkWrite(access, request.headers);
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url;
    metrics.record(`${request.method} ${route ?? '(no route)'}`, reply.statusCode, reply.elapsedTime);
    prometheus.recordRequest(request.method, route, reply.statusCode, reply.elapsedTime);
  });
  // Closing: the server stops accepting and closes its idle connections; after the grace period the
  // rest go too, since Node stops enforcing its header and request timeouts once the server is closing.
  let grace: NodeJS.Timeout | undefined;
  app.addHook('preClose', async () => {
    grace = setTimeout(() => app.server.closeAllConnections(), shutdownGraceSeconds * 1000);
    grace.unref();
  });
  app.addHook('onClose', async () => {
    clearTimeout(grace);
    await pool.close();
    await store.close();
  });
  await registerApiDocs(app);

  const context: RouteContext = { store, pool, provider: chosen, embed, schemas, maxK, limitInputPixels: options.limitInputPixels, metrics, prometheus };
  await app.register(searchRoutes, context);
  await app.register(itemRoutes, context);
  await app.register(serviceRoutes, context);
  return app;
}
