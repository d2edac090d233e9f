/**
 * @file The search service as a fastify app: `createSearchApp(options)` opens an index folder (for
 * writing only with `allowWrites`; see access.ts for the Host check, the write token and the origin
 * rule), starts the inference workers and returns the app, used both by `dml serve` (which calls
 * `listen`) and by the tests (`app.inject`). Closing the app waits for requests in flight, stops the
 * workers and closes the index (a final snapshot, then the lock is released).
 *
 * Endpoints (each with a fastify schema, schemas.ts; the OpenAPI document generated from them is at
 * `GET /openapi.json` and Swagger UI at `GET /docs`, see docs.ts):
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
 * Every error is a JSON {@link ErrorBody}: bad input of any kind is a 4xx (see errors.ts), never a 500.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { DmlError, invalidParameterError } from '../errors.js';
import { decodeImageSource } from '../image/decode.js';
import { rawInput } from '../image/raw-image.js';
import { DEFAULT_DEVICE, type DeviceChoice, type ProviderChoice } from '../onnx/devices.js';
import { accessPolicy, checkHost, checkWrite } from './access.js';
import { redactingLogger, type ServiceLoggerOptions } from './log-redaction.js';
import { errorBody, HttpError } from './http-errors.js';
import { checkItemId, checkItemText, checkVector, type IndexedItem, type SearchHit } from '../index-store/layout.js';
import { openIndexStore } from '../index-store/open-store.js';
import { RequestMetrics } from './metrics.js';
import { registerApiDocs } from './docs.js';
import { searchPage } from './page.js';
import { ServiceMetrics } from './prometheus.js';
import { routeSchemas } from './schemas.js';
import { InferenceWorkerPool } from './worker-pool.js';
import { DEFAULT_MAX_UPLOAD_BYTES } from './defaults.js';
import { checkPositiveInteger } from '../util/check.js';

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
  /** Largest k a request may ask for. Default 100. */
  maxK?: number;
  /** Images being embedded at once before requests are refused with 503. Default 256. */
  maxPending?: number;
  /** Journal lines after which the index takes a snapshot (hnswlib store). */
  snapshotEvery?: number;
  /** Seconds between checks for a newer table version (LanceDB store, read-only). */
  refreshSeconds?: number;
  /** The request log: false (default), true (level info), or a level and destination; tokens are censored (log-redaction.ts). */
  logger?: boolean | ServiceLoggerOptions;
  /** Open the index for writing and serve `POST /items` and `DELETE /items/:id`. Default false (read-only). */
  allowWrites?: boolean;
  /** The bearer token writes need (with `allowWrites`; at least 16 characters). */
  token?: string;
  /** Host names a request's Host (and a write's Origin) may name besides the loopback names (see access.ts). */
  allowedHosts?: string[];
}


/** Neighbours returned when a request gives no k. */
export const DEFAULT_K = 10;

const THUMBNAIL_SIZES = { min: 16, max: 1024, default: 128 };

/** Page size of `GET /items`: largest and default. */
const ITEMS_PAGE = { max: 1000, default: 100 };

/** An image read from a request, with the request's text fields (query string, then multipart fields). */
interface ImageRequest {
  bytes: Uint8Array;
  /** Names the image in error messages. */
  name: string;
  fields: Record<string, string | undefined>;
}

/** Parses an optional integer `name` in [min, max] from a query string, form field or JSON value; `fallback` when absent. */
function parseIntParam(name: string, raw: unknown, min: number, max: number, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) throw invalidParameterError(name, `an integer in [${min}, ${max}]`, raw);
  return n;
}

function optionalText(name: string, raw: unknown): string | undefined {
  return raw === undefined || raw === '' ? undefined : checkItemText(name, raw);
}

/** An uploaded image that is not empty (an empty one is refused here, with decode.ts's wording). */
function nonEmpty(bytes: Buffer, name: string): { bytes: Buffer; name: string } {
  if (bytes.length === 0) throw new DmlError('E_IMAGE', `${name}: empty file (expected encoded image data)`);
  return { bytes, name };
}

/** The image of a request: the one file of a multipart body, or the raw body (see the file comment). */
async function readImageRequest(request: FastifyRequest): Promise<ImageRequest> {
  const fields: Record<string, string | undefined> = { ...(request.query as Record<string, string | undefined>) };
  if (request.isMultipart()) {
    let file: { bytes: Buffer; name: string } | undefined;
    try {
      for await (const part of request.parts()) {
        if (part.type === 'file') file = { bytes: await part.toBuffer(), name: `file ${JSON.stringify(part.filename ?? part.fieldname)}` };
        else fields[part.fieldname] = String(part.value);
      }
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode;
      if (err instanceof DmlError || (status !== undefined && status < 500)) throw err;
      throw new HttpError(400, 'E_ARG', `Malformed multipart body: ${(err as Error).message} (expected multipart/form-data holding one image file)`, { cause: err });
    }
    if (!file) throw new HttpError(400, 'E_ARG', 'Expected an image file in the multipart body (e.g. field "image") but received none');
    return { ...nonEmpty(file.bytes, file.name), fields };
  }
  const body = request.body;
  if (Buffer.isBuffer(body)) return { ...nonEmpty(body, 'request body'), fields };
  if (body === undefined || body === null) {
    throw new HttpError(400, 'E_ARG', 'Expected an image in the request body (multipart/form-data, image/* or application/octet-stream) but received no body');
  }
  throw new HttpError(415, 'E_ARG', `Expected an image (multipart/form-data, image/* or application/octet-stream) but received Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')}`);
}

/** URL of an item's thumbnail. */
function imageUrl(id: string): string {
  return `/items/${encodeURIComponent(id)}/image`;
}

function searchResult(hits: SearchHit[], k: number, started: number): { k: number; count: number; tookMs: number; neighbours: Array<SearchHit & { image: string }> } {
  return {
    k,
    count: hits.length,
    tookMs: Math.round((performance.now() - started) * 1000) / 1000,
    neighbours: hits.map((hit) => ({ ...hit, image: imageUrl(hit.id) })),
  };
}

/** A route's access class, in its fastify route `config`: `write` routes need the write check (access.ts). */
interface RouteAccess {
  write: boolean;
}

/** The config of the routes that change the index. */
const WRITE_ROUTE: RouteAccess = { write: true };

/** Methods that never change anything. */
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Opens the index, starts the workers and builds the app (see the file comment). */
export async function createSearchApp(options: SearchAppOptions): Promise<FastifyInstance> {
  const maxUploadBytes = options.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES;
  const maxK = options.maxK ?? 100;
  checkPositiveInteger('maxUploadBytes', maxUploadBytes);
  checkPositiveInteger('maxK', maxK);
  const access = accessPolicy(options);
  const store = await openIndexStore(options.dir, {
    writable: access.allowWrites,
    ...(options.snapshotEvery !== undefined ? { snapshotEvery: options.snapshotEvery } : {}),
    ...(options.refreshSeconds !== undefined ? { refreshSeconds: options.refreshSeconds } : {}),
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
  app.addHook('onClose', async () => {
    await pool.close();
    await store.close();
  });
  await registerApiDocs(app);

  const knownItem = async (id: string): Promise<IndexedItem> => {
    const item = await store.get(id);
    if (item === undefined) throw new DmlError('E_NOT_FOUND', `No item with id ${JSON.stringify(id)} in the index`);
    return item;
  };

  app.post('/search', { schema: schemas.searchImage }, async (request) => {
    const started = performance.now();
    const { bytes, name, fields } = await readImageRequest(request);
    const k = parseIntParam('k', fields['k'], 1, maxK, DEFAULT_K);
    const label = optionalText('label', fields['label']);
    const vector = await embed(bytes, name);
    return searchResult(await store.search(vector, { k, label }), k, started);
  });

  app.get('/search', { schema: schemas.searchById }, async (request) => {
    const started = performance.now();
    const query = request.query as Record<string, string | undefined>;
    const id = checkItemText('id', query['id']);
    const k = parseIntParam('k', query['k'], 1, maxK, DEFAULT_K);
    const label = optionalText('label', query['label']);
    await knownItem(id);
    return searchResult(await store.search(await store.vector(id), { k, label, excludeId: id }), k, started);
  });

  app.post('/search/vector', { schema: schemas.searchVector }, async (request) => {
    const started = performance.now();
    const body = request.body as { vector?: unknown; k?: unknown; label?: unknown } | undefined;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw invalidParameterError('the request body', 'a JSON object such as {"vector": [...], "k": 10}', body);
    }
    const raw = body.vector;
    if (!Array.isArray(raw) || raw.length !== store.dim) throw invalidParameterError('vector', `an array of ${store.dim} numbers (the index's dimension)`, raw);
    const bad = raw.findIndex((v) => typeof v !== 'number');
    if (bad >= 0) throw invalidParameterError(`vector[${bad}]`, 'a number', raw[bad]);
    const vector = checkVector('vector', Float32Array.from(raw as number[]), store.dim);
    const k = parseIntParam('k', body.k, 1, maxK, DEFAULT_K);
    return searchResult(await store.search(vector, { k, label: optionalText('label', body.label) }), k, started);
  });

  app.get('/items', { schema: schemas.listItems }, async (request) => {
    const query = request.query as Record<string, string | undefined>;
    const offset = parseIntParam('offset', query['offset'], 0, Number.MAX_SAFE_INTEGER, 0);
    const limit = parseIntParam('limit', query['limit'], 1, ITEMS_PAGE.max, ITEMS_PAGE.default);
    const { total, items } = await store.list({ offset, limit, label: optionalText('label', query['label']) });
    return {
      total,
      offset,
      items: items.map(({ id, label }) => ({ id, label, image: imageUrl(id) })),
      labels: await store.labelCounts(),
    };
  });

  app.get('/labels', { schema: schemas.listLabels }, async () => {
    const labels = await store.labelCounts();
    return { total: labels.length, labels };
  });

  app.post('/items', { schema: schemas.addItem, config: WRITE_ROUTE }, async (request, reply) => {
    const { bytes, name, fields } = await readImageRequest(request);
    const label = checkItemText('label', fields['label']);
    const id = fields['id'] === undefined || fields['id'] === '' ? randomUUID() : checkItemId('id', fields['id']);
    const conflict = (): HttpError => new HttpError(409, 'E_ARG', `An item with id ${JSON.stringify(id)} is already in the index (expected a new id)`);
    if ((await store.get(id)) !== undefined) throw conflict();
    const vector = await embed(bytes, name);
    try {
      await store.add([{ id, label, vector, image: bytes }]);
    } catch (err) {
      // Another request added the same id while this image was being embedded.
      throw (await store.get(id)) !== undefined ? conflict() : err;
    }
    return reply.status(201).send({ id, label, image: imageUrl(id), count: store.count });
  });

  app.delete('/items/:id', { schema: schemas.removeItem, config: WRITE_ROUTE }, async (request) => {
    const { id } = request.params as { id: string };
    await knownItem(id);
    await store.remove([id]);
    return { id, removed: true, count: store.count };
  });

  app.get('/items/:id/image', { schema: schemas.itemImage }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const size = parseIntParam('size', (request.query as Record<string, string | undefined>)['size'], THUMBNAIL_SIZES.min, THUMBNAIL_SIZES.max, THUMBNAIL_SIZES.default);
    const raw = await decodeImageSource(store.resolveSource(await knownItem(id)), { channels: 3, limitInputPixels: options.limitInputPixels });
    const png = await rawInput(raw).resize(size, size, { fit: 'inside', withoutEnlargement: true }).png().toBuffer();
    return reply.type('image/png').header('cache-control', 'private, max-age=60').send(png);
  });

  app.get('/healthz', { schema: schemas.healthz }, async () => ({
    status: 'ok',
    items: store.count,
    workers: pool.size,
    pending: pool.pending,
    generation: store.generation,
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

  return app;
}
