/**
 * @file The search routes: `POST /search` (an image as multipart/form-data or the raw body),
 * `GET /search?id=` (the neighbours of an indexed item, the item itself left out) and
 * `POST /search/vector` (a vector as JSON).
 */
import type { FastifyInstance } from 'fastify';
import { invalidParameterError } from '../../errors.js';
import { checkItemText, checkVector, type SearchHit } from '../../index-store/layout.js';
import { DEFAULT_K } from '../defaults.js';
import { imageUrl, knownItem, optionalText, parseIntParam, readImageRequest } from '../route-support.js';
import type { RouteContext } from './route-context.js';

/** A search's answer: the neighbours with their thumbnails' URLs, and the time the search took. */
function searchResult(hits: SearchHit[], k: number, started: number): { k: number; count: number; tookMs: number; neighbours: Array<SearchHit & { image: string }> } {
  return {
    k,
    count: hits.length,
    tookMs: Math.round((performance.now() - started) * 1000) / 1000,
    neighbours: hits.map((hit) => ({ ...hit, image: imageUrl(hit.id) })),
  };
}

/** Registers the search routes (a fastify plugin; see the file comment). */
export async function searchRoutes(app: FastifyInstance, context: RouteContext): Promise<void> {
  const { store, embed, schemas, maxK } = context;
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
    await knownItem(store, id);
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
}
