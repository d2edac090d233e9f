/**
 * @file The API description of the search service: @fastify/swagger generates the OpenAPI 3.1
 * document from the route schemas (schemas.ts) and @fastify/swagger-ui serves Swagger UI at `/docs`.
 *
 * The UI's assets (swagger-ui-dist's bundle, CSS, favicons) ship inside the @fastify/swagger-ui
 * package and are served from `/docs/static/`; nothing is fetched from elsewhere (the spec validator
 * badge is off). The UI's own routes are GET only and hidden from the document; the app's hooks (Host
 * check, metrics) apply to them like to every route. "Try it out" sends requests from the page, so
 * writes still need the bearer token, which the UI asks for under "Authorize".
 *
 * Register it with {@link registerApiDocs} before any route: @fastify/swagger collects routes as they
 * are added.
 */
import { createRequire } from 'node:module';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { sharedSchemas, WRITE_TOKEN_SCHEME } from './schemas.js';

/** Where Swagger UI is served. */
export const DOCS_PREFIX = '/docs';

/**
 * Adds the shared schemas, @fastify/swagger (the document is `app.swagger()`) and Swagger UI at
 * {@link DOCS_PREFIX}.
 */
export async function registerApiDocs(app: FastifyInstance): Promise<void> {
  const { version } = createRequire(import.meta.url)('dmlkit/package.json') as { version: string };
  for (const schema of sharedSchemas()) app.addSchema(schema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'dmlkit image search',
        version,
        description:
          'Nearest-neighbour image search over an index built by `dml index build`. Scores are cosine similarities of L2-normalised embeddings. Every error is a JSON `ErrorBody`; invalid parameters are 4xx errors whose message names the parameter.',
      },
      tags: [
        { name: 'search', description: 'Nearest-neighbour queries' },
        { name: 'items', description: 'The indexed items (writes need --allow-writes and the token)' },
        { name: 'service', description: 'Health, metrics, this document and the web page' },
      ],
      components: {
        securitySchemes: { [WRITE_TOKEN_SCHEME]: { type: 'http', scheme: 'bearer', description: 'The token `dml serve --allow-writes` was started with.' } },
      },
    },
    // Shared schemas appear under components.schemas by their $id (ErrorBody, SearchResult, ...).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json['$id'] === 'string' ? json['$id'] : `def-${i}`) },
    // Keep `const` (valid in OpenAPI 3.1) rather than rewriting it to a one-value enum.
    convertConstToEnum: false,
  });
  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    uiConfig: { docExpansion: 'list', deepLinking: true },
    // No request to validator.swagger.io (false is also the default).
    validatorUrl: false,
  });
}
