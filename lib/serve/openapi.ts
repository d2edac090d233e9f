/**
 * @file The OpenAPI 3.1 description of the search service (`GET /openapi.json`), written by hand to
 * match app.ts; the app spec checks that every route the app serves is described here and back.
 */

/** Values of the running server that the description states. */
export interface OpenApiSettings {
  /** Embedding dimension of the index (length of `vector`). */
  dim: number;
  maxK: number;
  defaultK: number;
  maxUploadBytes: number;
}

const ref = (name: string): { $ref: string } => ({ $ref: `#/components/schemas/${name}` });

function errorResponses(...statuses: number[]): Record<string, unknown> {
  const reasons: Record<number, string> = {
    400: 'Bad parameter or malformed body',
    404: 'No such item or route',
    409: 'The id is already in the index',
    413: 'Body or file larger than the upload limit',
    415: 'Unsupported Content-Type',
    422: 'Not a decodable image: not an image, truncated, or more pixels than the limit (decompression bomb)',
    503: 'Busy (too many images being embedded) or shutting down',
  };
  return Object.fromEntries(
    statuses.map((s) => [String(s), { description: reasons[s] ?? 'Error', content: { 'application/json': { schema: ref('Error') } } }]),
  );
}

/** The OpenAPI document. */
export function openApiDocument(settings: OpenApiSettings): Record<string, unknown> {
  const k = {
    name: 'k',
    in: 'query',
    description: `Neighbours to return (default ${settings.defaultK}).`,
    schema: { type: 'integer', minimum: 1, maximum: settings.maxK, default: settings.defaultK },
  };
  const label = { name: 'label', in: 'query', description: 'Only return items with this label.', schema: { type: 'string' } };
  const idPath = { name: 'id', in: 'path', required: true, description: 'Item id (URL-encoded; ids may contain slashes).', schema: { type: 'string' } };
  const imageBody = (fields: Record<string, unknown>, required: string[]): Record<string, unknown> => ({
    required: true,
    description: `An encoded image (JPEG, PNG, WebP, GIF, TIFF, AVIF, ...) of at most ${settings.maxUploadBytes} bytes: as the one file of a multipart form, or as the raw body.`,
    content: {
      'multipart/form-data': {
        schema: { type: 'object', required: ['image', ...required], properties: { image: { type: 'string', format: 'binary' }, ...fields } },
      },
      'image/*': { schema: { type: 'string', format: 'binary' } },
      'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
    },
  });
  const searchResponses = {
    '200': { description: 'Nearest neighbours, best first', content: { 'application/json': { schema: ref('SearchResult') } } },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'dmlkit image search',
      version: '1',
      description:
        'Nearest-neighbour image search over an index built by `dml index build`. Scores are cosine similarities of L2-normalised embeddings. Every error is a JSON Error object.',
    },
    paths: {
      '/search': {
        post: {
          summary: 'Neighbours of an uploaded image',
          parameters: [k, label],
          requestBody: imageBody({ k: { type: 'integer' }, label: { type: 'string' } }, []),
          responses: { ...searchResponses, ...errorResponses(400, 413, 415, 422, 503) },
        },
        get: {
          summary: 'Neighbours of an indexed item (the item itself left out)',
          parameters: [{ name: 'id', in: 'query', required: true, schema: { type: 'string' } }, k, label],
          responses: { ...searchResponses, ...errorResponses(400, 404) },
        },
      },
      '/search/vector': {
        post: {
          summary: 'Neighbours of an embedding',
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['vector'],
                  properties: {
                    vector: { type: 'array', items: { type: 'number' }, minItems: settings.dim, maxItems: settings.dim, description: 'Need not be normalised; not all zero.' },
                    k: { type: 'integer', minimum: 1, maximum: settings.maxK, default: settings.defaultK },
                    label: { type: 'string' },
                  },
                },
              },
            },
          },
          responses: { ...searchResponses, ...errorResponses(400, 413, 415) },
        },
      },
      '/items': {
        get: {
          summary: 'Indexed items, in insertion order, and the label counts',
          parameters: [
            { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
            label,
          ],
          responses: { '200': { description: 'A page of items', content: { 'application/json': { schema: ref('ItemList') } } }, ...errorResponses(400) },
        },
        post: {
          summary: 'Add an image with a label; written to disk before the answer',
          parameters: [
            { name: 'label', in: 'query', description: 'Label (or a form field)', schema: { type: 'string' } },
            { name: 'id', in: 'query', description: 'Id (or a form field); a random UUID by default', schema: { type: 'string' } },
          ],
          requestBody: imageBody({ label: { type: 'string' }, id: { type: 'string' } }, ['label']),
          responses: {
            '201': { description: 'Added', content: { 'application/json': { schema: ref('Added') } } },
            ...errorResponses(400, 409, 413, 415, 422, 503),
          },
        },
      },
      '/items/{id}': {
        delete: {
          summary: 'Remove an item; written to disk before the answer',
          parameters: [idPath],
          responses: { '200': { description: 'Removed', content: { 'application/json': { schema: ref('Removed') } } }, ...errorResponses(404) },
        },
      },
      '/items/{id}/image': {
        get: {
          summary: 'PNG thumbnail of an item',
          parameters: [idPath, { name: 'size', in: 'query', description: 'Longest side in pixels (never enlarged)', schema: { type: 'integer', minimum: 16, maximum: 1024, default: 128 } }],
          responses: { '200': { description: 'PNG image', content: { 'image/png': {} } }, ...errorResponses(400, 404, 422) },
        },
      },
      '/healthz': {
        get: {
          summary: 'Liveness: item count, workers and the execution provider they run on',
          responses: { '200': { description: 'Serving', content: { 'application/json': { schema: { type: 'object' } } } }, ...errorResponses(503) },
        },
      },
      '/metrics': {
        get: {
          summary: 'Request counts per route and status, latency quantiles over the latest 4096 requests per route, index and worker state',
          responses: { '200': { description: 'Metrics', content: { 'application/json': { schema: { type: 'object' } } } } },
        },
      },
      '/openapi.json': { get: { summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1' } } } },
      '/': { get: { summary: 'Web page: upload an image or pick a gallery item, see its neighbours', responses: { '200': { description: 'HTML', content: { 'text/html': {} } } } } },
    },
    components: {
      schemas: {
        Neighbour: {
          type: 'object',
          required: ['id', 'label', 'score', 'image'],
          properties: {
            id: { type: 'string' },
            label: { type: 'string' },
            score: { type: 'number', description: 'Cosine similarity' },
            image: { type: 'string', description: 'Thumbnail URL' },
          },
        },
        SearchResult: {
          type: 'object',
          required: ['k', 'count', 'tookMs', 'neighbours'],
          properties: {
            k: { type: 'integer' },
            count: { type: 'integer', description: 'Neighbours returned (fewer than k when fewer items qualify)' },
            tookMs: { type: 'number' },
            neighbours: { type: 'array', items: ref('Neighbour') },
          },
        },
        ItemList: {
          type: 'object',
          properties: {
            total: { type: 'integer' },
            offset: { type: 'integer' },
            items: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, label: { type: 'string' }, image: { type: 'string' } } } },
            labels: { type: 'array', items: { type: 'object', properties: { label: { type: 'string' }, count: { type: 'integer' } } } },
          },
        },
        Added: { type: 'object', properties: { id: { type: 'string' }, label: { type: 'string' }, image: { type: 'string' }, count: { type: 'integer' } } },
        Removed: { type: 'object', properties: { id: { type: 'string' }, removed: { const: true }, count: { type: 'integer' } } },
        Error: {
          type: 'object',
          required: ['statusCode', 'code', 'error', 'message'],
          properties: {
            statusCode: { type: 'integer' },
            code: { type: 'string', description: 'dmlkit error code (E_ARG, E_IMAGE, E_NOT_FOUND, ...) or fastify code (FST_...)' },
            error: { type: 'string' },
            message: { type: 'string' },
          },
        },
      },
    },
  };
}
