/**
 * @file The fastify route schemas of the search service: the query string, path parameters and body
 * of every route, and its success and error responses, with descriptions. @fastify/swagger builds the
 * OpenAPI document (`GET /openapi.json`, the UI at `/docs`, see docs.ts) from them, and fastify
 * serializes the JSON responses with them (fast-json-stringify), so a field missing here would be
 * missing from the answers: the schemas list every field the handlers return.
 *
 * The request parts describe what the handlers accept, with the same bounds; app.ts checks them in the
 * handlers (see its file comment), because the same fields also arrive as multipart form fields that
 * JSON Schema cannot see, and so that every invalid value gets the one message format of errors.ts.
 *
 * Shared schemas ({@link sharedSchemas}) are added with `app.addSchema` and referenced as `Name#`;
 * the OpenAPI document lists them under `components.schemas` by their `$id`.
 */
import { MAX_ID_LENGTH } from '../index-store/layout.js';

/** Values of the running server that the schemas state (bounds and defaults). */
export interface SchemaSettings {
  /** Embedding dimension of the index (length of `vector`). */
  dim: number;
  /** Largest k a request may ask for. */
  maxK: number;
  /** k when a request gives none. */
  defaultK: number;
  /** Largest request body or uploaded file, in bytes. */
  maxUploadBytes: number;
  /** Thumbnail sizes of `GET /items/:id/image`: smallest, largest and default longest side. */
  thumbnail: { min: number; max: number; default: number };
  /** Largest page of `GET /items`. */
  maxLimit: number;
  /** Page size of `GET /items` when a request gives no limit. */
  defaultLimit: number;
}

/** A JSON schema (as fastify and @fastify/swagger take it). */
export type JsonSchema = Record<string, unknown>;

/** The fastify schema of one route. */
export interface RouteSchema {
  summary: string;
  description?: string;
  tags: string[];
  querystring?: JsonSchema;
  params?: JsonSchema;
  body?: JsonSchema;
  consumes?: string[];
  security?: Array<Record<string, string[]>>;
  response: Record<string, JsonSchema>;
}

/** Name of the bearer-token security scheme of the write routes in the OpenAPI document. */
export const WRITE_TOKEN_SCHEME = 'writeToken';

const ref = (id: string): JsonSchema => ({ $ref: `${id}#` });

/** An id or label, as `checkItemText` (index-store/layout.ts) accepts it. */
const itemText = (description: string): JsonSchema => ({
  type: 'string',
  minLength: 1,
  maxLength: MAX_ID_LENGTH,
  pattern: '^[^\\u0000-\\u001f\\u007f]*$',
  description,
});

/** The shared schemas, each with its `$id` (add them with `app.addSchema` before the routes). */
export function sharedSchemas(): JsonSchema[] {
  return [
    {
      $id: 'ErrorBody',
      type: 'object',
      description: 'The body of every error response.',
      required: ['statusCode', 'code', 'error', 'message'],
      properties: {
        statusCode: { type: 'integer', description: 'The HTTP status.' },
        code: { type: 'string', description: 'dmlkit error code (E_ARG, E_IMAGE, E_NOT_FOUND, ...) or fastify code (FST_...).' },
        error: { type: 'string', description: 'The HTTP reason phrase.' },
        message: { type: 'string', description: 'One line naming the thing, what was expected and what was received.' },
      },
    },
    {
      $id: 'Neighbour',
      type: 'object',
      description: 'One neighbour of a query.',
      required: ['id', 'label', 'score', 'image'],
      properties: {
        id: { type: 'string', description: 'Item id.' },
        label: { type: 'string', description: 'Item label.' },
        score: { type: 'number', description: 'Cosine similarity to the query (L2-normalised embeddings).' },
        image: { type: 'string', description: 'URL of the item thumbnail.' },
      },
    },
    {
      $id: 'SearchResult',
      type: 'object',
      description: 'Nearest neighbours, best first.',
      required: ['k', 'count', 'tookMs', 'neighbours'],
      properties: {
        k: { type: 'integer', description: 'The k asked for.' },
        count: { type: 'integer', description: 'Neighbours returned (fewer than k when fewer items qualify).' },
        tookMs: { type: 'number', description: 'Time spent on the request, in milliseconds.' },
        neighbours: { type: 'array', items: ref('Neighbour') },
      },
    },
    {
      $id: 'LabelCount',
      type: 'object',
      description: 'A label of the index and how many items carry it.',
      required: ['label', 'count'],
      properties: { label: { type: 'string' }, count: { type: 'integer' } },
    },
  ];
}

/** Reasons given for each error status in the document. */
const ERROR_REASONS: Readonly<Record<number, string>> = {
  400: 'Bad parameter or malformed body (the message names the parameter).',
  401: 'A write without the bearer token the server was started with.',
  403: 'Host header not allowed; or a write to a read-only server, or a cross-origin write.',
  404: 'No such item.',
  409: 'The id is already in the index.',
  413: 'Body or file larger than the upload limit, or more than one file.',
  415: 'Unsupported Content-Type.',
  422: 'Not a decodable image: not an image, empty, truncated, or more pixels than the limit (decompression bomb).',
  503: 'Busy (too many images being embedded) or shutting down.',
};

/** Error responses for `statuses`, plus 403 (the Host check applies to every route). */
function errors(...statuses: number[]): Record<string, JsonSchema> {
  return Object.fromEntries([...new Set([403, ...statuses])].sort((a, b) => a - b).map((s) => [String(s), { description: ERROR_REASONS[s], ...ref('ErrorBody') }]));
}

/** The schemas of every route of app.ts, keyed by route. */
export function routeSchemas(settings: SchemaSettings) {
  const k: JsonSchema = { type: 'integer', minimum: 1, maximum: settings.maxK, default: settings.defaultK, description: `Neighbours to return (default ${settings.defaultK}).` };
  const label = itemText('Only consider items with this label.');
  const searchResponses = { 200: { description: 'Nearest neighbours, best first.', ...ref('SearchResult') } };
  const idParams: JsonSchema = { type: 'object', required: ['id'], properties: { id: itemText('Item id (URL-encoded: ids may contain slashes).') } };
  const binary = (description: string): { schema: JsonSchema } => ({ schema: { type: 'string', format: 'binary', description } });
  /** A multipart form with one image file and `fields`, or the image as the raw body. */
  const imageBody = (fields: Record<string, JsonSchema>, required: string[]): JsonSchema => {
    const image = `An encoded image (JPEG, PNG, WebP, GIF, TIFF, AVIF, ...) of at most ${settings.maxUploadBytes} bytes.`;
    return {
      content: {
        'multipart/form-data': {
          schema: {
            type: 'object',
            required: ['image', ...required],
            description: 'One image file (any field name) and the text fields, which take precedence over the query string.',
            properties: { image: { type: 'string', format: 'binary', description: image }, ...fields },
          },
        },
        'image/*': binary(`${image} Parameters in the query string.`),
        'application/octet-stream': binary(`${image} Parameters in the query string.`),
      },
    };
  };
  const html = (description: string): JsonSchema => ({ description, content: { 'text/html': { schema: { type: 'string' } } } });

  return {
    searchImage: {
      summary: 'Neighbours of an uploaded image',
      description: 'The image as the one file of a multipart/form-data body (fields `k`, `label`) or as the raw body (`image/*` or `application/octet-stream`; `?k=&label=`).',
      tags: ['search'],
      querystring: { type: 'object', properties: { k, label } },
      body: imageBody({ k, label }, []),
      response: { ...searchResponses, ...errors(400, 413, 415, 422, 503) },
    },
    searchById: {
      summary: 'Neighbours of an indexed item',
      description: 'The item itself is left out of its neighbours.',
      tags: ['search'],
      querystring: { type: 'object', required: ['id'], properties: { id: itemText('Id of the indexed item.'), k, label } },
      response: { ...searchResponses, ...errors(400, 404) },
    },
    searchVector: {
      summary: 'Neighbours of an embedding',
      tags: ['search'],
      body: {
        type: 'object',
        required: ['vector'],
        properties: {
          vector: {
            type: 'array',
            items: { type: 'number' },
            minItems: settings.dim,
            maxItems: settings.dim,
            description: `The query embedding: ${settings.dim} finite numbers, not all zero (need not be normalised).`,
          },
          k,
          label,
        },
      },
      response: { ...searchResponses, ...errors(400, 413, 415) },
    },
    listItems: {
      summary: 'Indexed items in insertion order, and the label counts',
      tags: ['items'],
      querystring: {
        type: 'object',
        properties: {
          offset: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0, description: 'Items to skip.' },
          limit: { type: 'integer', minimum: 1, maximum: settings.maxLimit, default: settings.defaultLimit, description: 'Items to return.' },
          label: itemText('Only list items with this label.'),
        },
      },
      response: {
        200: {
          description: 'A page of items.',
          type: 'object',
          required: ['total', 'offset', 'items', 'labels'],
          properties: {
            total: { type: 'integer', description: 'Items in the index (with the label, when filtered).' },
            offset: { type: 'integer' },
            items: {
              type: 'array',
              items: {
                type: 'object',
                required: ['id', 'label', 'image'],
                properties: { id: { type: 'string' }, label: { type: 'string' }, image: { type: 'string', description: 'URL of the thumbnail.' } },
              },
            },
            labels: { type: 'array', items: ref('LabelCount'), description: 'Every label of the index with its item count.' },
          },
        },
        ...errors(400),
      },
    },
    listLabels: {
      summary: 'The distinct labels of the index with their item counts',
      description: 'Labels in code-unit order; each is a valid `label` filter of the search routes.',
      tags: ['items'],
      response: {
        200: {
          description: 'The labels.',
          type: 'object',
          required: ['total', 'labels'],
          properties: {
            total: { type: 'integer', description: 'Distinct labels.' },
            labels: { type: 'array', items: ref('LabelCount') },
          },
        },
        ...errors(),
      },
    },
    addItem: {
      summary: 'Add an image with a label',
      description: 'Needs a server started with --allow-writes and `Authorization: Bearer <token>`. Written to disk before the answer.',
      tags: ['items'],
      security: [{ [WRITE_TOKEN_SCHEME]: [] }],
      querystring: {
        type: 'object',
        properties: {
          label: itemText('Label of the new item (or a form field).'),
          id: itemText('Id of the new item (or a form field); a random UUID by default.'),
        },
      },
      body: imageBody({ label: itemText('Label of the new item.'), id: itemText('Id of the new item; a random UUID by default.') }, ['label']),
      response: {
        201: {
          description: 'Added.',
          type: 'object',
          required: ['id', 'label', 'image', 'count'],
          properties: {
            id: { type: 'string' },
            label: { type: 'string' },
            image: { type: 'string', description: 'URL of the thumbnail.' },
            count: { type: 'integer', description: 'Items in the index now.' },
          },
        },
        ...errors(400, 401, 409, 413, 415, 422, 503),
      },
    },
    removeItem: {
      summary: 'Remove an item',
      description: 'Needs a server started with --allow-writes and `Authorization: Bearer <token>`. Written to disk before the answer.',
      tags: ['items'],
      security: [{ [WRITE_TOKEN_SCHEME]: [] }],
      params: idParams,
      response: {
        200: {
          description: 'Removed.',
          type: 'object',
          required: ['id', 'removed', 'count'],
          properties: { id: { type: 'string' }, removed: { type: 'boolean', const: true }, count: { type: 'integer', description: 'Items in the index now.' } },
        },
        ...errors(401, 404),
      },
    },
    itemImage: {
      summary: 'PNG thumbnail of an item',
      tags: ['items'],
      params: idParams,
      querystring: {
        type: 'object',
        properties: {
          size: {
            type: 'integer',
            minimum: settings.thumbnail.min,
            maximum: settings.thumbnail.max,
            default: settings.thumbnail.default,
            description: 'Longest side in pixels (never enlarged).',
          },
        },
      },
      response: { 200: { description: 'The thumbnail.', content: { 'image/png': binary('PNG image') } }, ...errors(400, 404, 422) },
    },
    healthz: {
      summary: 'Liveness: item count, workers and the execution provider they run on',
      tags: ['service'],
      response: {
        200: {
          description: 'Serving.',
          type: 'object',
          required: ['status', 'items', 'workers', 'pending', 'generation', 'dataFiles', 'provider'],
          properties: {
            status: { type: 'string', const: 'ok' },
            items: { type: 'integer', description: 'Items in the index.' },
            workers: { type: 'integer', description: 'Inference worker threads.' },
            pending: { type: 'integer', description: 'Images being embedded.' },
            generation: { type: 'integer', description: 'Version of the index this server sees: the snapshot generation (hnswlib store) or the table version (LanceDB store).' },
            dataFiles: {
              type: ['integer', 'null'],
              description: 'LanceDB store: the data files (fragments) of the table version this server sees, each read by a search without the ANN index; the writer compacts them. Null for the hnswlib store, which searches in memory.',
            },
            provider: { type: ['string', 'null'], description: 'Execution provider of the workers.' },
          },
        },
        ...errors(503),
      },
    },
    metrics: {
      summary: 'Prometheus metrics',
      description: 'Text exposition format 0.0.4: requests by route and status, latency histograms per route, embedding time, index size, images pending, and process metrics (see metrics.ts).',
      tags: ['service'],
      response: { 200: { description: 'Prometheus text format.', content: { 'text/plain': { schema: { type: 'string' } } } }, ...errors() },
    },
    metricsJson: {
      summary: 'Request metrics as JSON',
      description: 'Request counts per route and status, latency quantiles over the latest 4096 requests of each route, index and worker state.',
      tags: ['service'],
      response: {
        200: {
          description: 'Metrics.',
          type: 'object',
          required: ['uptimeSeconds', 'requests', 'routes', 'index', 'inference'],
          properties: {
            uptimeSeconds: { type: 'number', description: 'Seconds since the server started.' },
            requests: { type: 'integer', description: 'Requests answered since the start.' },
            routes: {
              type: 'object',
              description: 'Per route (`"POST /search"`, `"GET (no route)"` for unknown paths).',
              additionalProperties: {
                type: 'object',
                required: ['count', 'statuses', 'latencyMs'],
                properties: {
                  count: { type: 'integer', description: 'Requests answered since the start.' },
                  statuses: { type: 'object', additionalProperties: { type: 'integer' }, description: 'Requests per HTTP status, e.g. `{"200": 10, "422": 1}`.' },
                  latencyMs: {
                    type: 'object',
                    description: 'Latency in milliseconds over the latest requests of the route (nearest-rank quantiles), and the window size.',
                    required: ['p50', 'p90', 'p99', 'max', 'mean', 'window'],
                    properties: {
                      p50: { type: 'number' },
                      p90: { type: 'number' },
                      p99: { type: 'number' },
                      max: { type: 'number' },
                      mean: { type: 'number' },
                      window: { type: 'integer' },
                    },
                  },
                },
              },
            },
            index: {
              type: 'object',
              required: ['items', 'labels', 'dim', 'generation', 'journalLines'],
              properties: {
                items: { type: 'integer' },
                labels: { type: 'integer', description: 'Distinct labels.' },
                dim: { type: 'integer', description: 'Embedding dimension.' },
                generation: { type: 'integer', description: 'Snapshot generation (hnswlib store) or table version (LanceDB store).' },
                journalLines: { type: 'integer', description: 'Changes not folded in yet: journal lines since the snapshot (hnswlib store) or rows outside the ANN index (LanceDB store).' },
              },
            },
            inference: {
              type: 'object',
              required: ['workers', 'pending', 'provider'],
              properties: { workers: { type: 'integer' }, pending: { type: 'integer' }, provider: { type: ['string', 'null'] } },
            },
          },
        },
        ...errors(),
      },
    },
    openapi: {
      summary: 'This document (OpenAPI 3.1)',
      tags: ['service'],
      response: { 200: { description: 'OpenAPI 3.1 document.', type: 'object', additionalProperties: true }, ...errors() },
    },
    page: {
      summary: 'Web page: upload an image or pick a gallery item, filter by label, see the neighbours',
      tags: ['service'],
      response: { 200: html('The page (self-contained HTML).'), ...errors() },
    },
  } satisfies Record<string, RouteSchema>;
}
