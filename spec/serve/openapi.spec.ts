/**
 * The API description: the OpenAPI document @fastify/swagger generates from the route schemas, checked
 * against the OpenAPI 3.1 JSON schema and against the routes the app serves, and Swagger UI at /docs.
 */
import { rmSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { createSearchApp } from '../../lib/serve/app.js';
import type { ErrorBody } from '../../lib/serve/http-errors.js';
import { makeTempDir } from '../image/image-fixtures.js';
import { buildFixtureIndex, type FixtureIndex } from './fixtures.js';

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema: { type?: string; minimum?: number; maximum?: number };
}
interface Operation {
  summary?: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Record<string, unknown> }> };
  responses: Record<string, { description: string; content?: Record<string, { schema?: Record<string, unknown> }> }>;
}
interface Document {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown> }>; securitySchemes: Record<string, unknown> };
}

const ITEM = 'bag/t10k-00018.png';

/** `METHOD /path` of every route the app serves, HEAD left out, read from `printRoutes`' tree (4 characters per level). */
function servedRoutes(app: FastifyInstance): string[] {
  const prefixes: string[] = [];
  const routes: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^(.*?)[└├]── (.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = (m[1] as string).length / 4;
    const full = (depth > 0 ? (prefixes[depth - 1] as string) : '') + (m[2] as string);
    prefixes[depth] = full;
    for (const method of (m[3] ?? '').split(', ')) if (method !== '' && method !== 'HEAD') routes.push(`${method} ${full}`);
  }
  return routes;
}

describe('serve/OpenAPI document and /docs', function () {
  this.timeout(60_000);
  let tmp: string;
  let fixture: FixtureIndex;
  let app: FastifyInstance;
  let doc: Document;
  const operation = (url: string, method: string): Operation => {
    const op = doc.paths[url]?.[method];
    expect(op, `${method.toUpperCase()} ${url} in the document`).to.not.equal(undefined);
    return op as Operation;
  };
  const parameters = (url: string, method: string): Record<string, Parameter> =>
    Object.fromEntries((operation(url, method).parameters ?? []).map((p) => [`${p.in}:${p.name}`, p]));

  before(async () => {
    tmp = makeTempDir('dml-openapi-');
    fixture = await buildFixtureIndex(tmp);
    app = await createSearchApp({ dir: fixture.dir, device: 'cpu', maxK: 50 });
    const res = await app.inject({ url: '/openapi.json' });
    expect(res.statusCode).to.equal(200);
    expect(res.headers['content-type']).to.match(/^application\/json/);
    doc = res.json<Document>();
  });
  after(async () => {
    await app?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc as unknown as Record<string, unknown>);
    expect(result.errors ?? [], JSON.stringify(result.errors)).to.deep.equal([]);
    expect(result.valid).to.equal(true);
    expect(validator.version).to.equal('3.1');
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(doc.info).to.deep.include({ title: 'dmlkit image search', version: pkg.version });
  });

  it('describes every route the app serves and no other (the UI under /docs aside)', () => {
    const described = Object.entries(doc.paths)
      .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`))
      .sort();
    expect(described).to.deep.equal(
      [
        'DELETE /items/:id',
        'GET /',
        'GET /healthz',
        'GET /items',
        'GET /items/:id/image',
        'GET /labels',
        'GET /metrics',
        'GET /metrics.json',
        'GET /openapi.json',
        'GET /search',
        'POST /items',
        'POST /search',
        'POST /search/vector',
      ].sort(),
    );
    for (const route of described) {
      const [method, url] = route.split(' ') as ['GET', string];
      expect(app.hasRoute({ method, url }), route).to.equal(true);
    }
    // The app serves these and the UI's own routes, nothing else (HEAD aside, which fastify adds).
    const served = servedRoutes(app).filter((route) => !route.split(' ')[1]?.startsWith('/docs'));
    expect(served.sort()).to.deep.equal(described);
  });

  it('is generated from the route schemas: parameters, bodies, success and error responses of every operation', () => {
    // Parameters, with the bounds of this server (maxK 50).
    expect(parameters('/search', 'get')['query:id']).to.deep.include({ required: true });
    expect(parameters('/search', 'get')['query:k']?.schema).to.deep.include({ type: 'integer', minimum: 1, maximum: 50, default: 10 });
    expect(parameters('/search', 'get')['query:label']?.schema).to.deep.include({ type: 'string', maxLength: 512 });
    expect(Object.keys(parameters('/search', 'post')).sort()).to.deep.equal(['query:k', 'query:label']);
    expect(Object.keys(parameters('/items', 'get')).sort()).to.deep.equal(['query:label', 'query:limit', 'query:offset']);
    expect(Object.keys(parameters('/items', 'post')).sort()).to.deep.equal(['query:id', 'query:label']);
    expect(parameters('/items/{id}', 'delete')['path:id']).to.deep.include({ required: true });
    expect(Object.keys(parameters('/items/{id}/image', 'get')).sort()).to.deep.equal(['path:id', 'query:size']);
    for (const p of Object.values(doc.paths).flatMap((ops) => Object.values(ops).flatMap((op) => op.parameters ?? []))) {
      expect(p.description, `description of ${p.in} parameter ${p.name}`).to.be.a('string').and.not.equal('');
    }

    // Bodies: multipart and raw images, and JSON for the vector.
    for (const [url, formFields] of [
      ['/search', ['image', 'k', 'label']],
      ['/items', ['id', 'image', 'label']],
    ] as const) {
      const content = operation(url, 'post').requestBody?.content ?? {};
      expect(Object.keys(content).sort(), url).to.deep.equal(['application/octet-stream', 'image/*', 'multipart/form-data']);
      expect(Object.keys((content['multipart/form-data']?.schema['properties'] ?? {}) as object).sort()).to.deep.equal(formFields);
      expect(content['image/*']?.schema).to.deep.include({ type: 'string', format: 'binary' });
    }
    const vector = operation('/search/vector', 'post').requestBody?.content['application/json']?.schema as { required: string[]; properties: Record<string, unknown> };
    expect(vector.required).to.deep.equal(['vector']);
    expect(vector.properties['vector']).to.deep.include({ type: 'array', minItems: 64, maxItems: 64 });

    // Every operation: a summary, a tag, a success response with content, and errors as ErrorBody (403: the Host check).
    const errorRef = { $ref: '#/components/schemas/ErrorBody' };
    for (const [url, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const name = `${method.toUpperCase()} ${url}`;
        expect(op.summary, name).to.be.a('string');
        expect(op.tags, name).to.have.length(1);
        const success = Object.entries(op.responses).filter(([status]) => status.startsWith('2'));
        expect(success, name).to.have.length(1);
        const [, ok] = success[0] as [string, Operation['responses'][string]];
        expect(ok.description, name).not.to.equal('Default Response');
        expect(Object.values(ok.content ?? {}).map((c) => c.schema), name).to.have.length(1).and.not.include(undefined);
        expect(op.responses['403']?.content?.['application/json']?.schema, name).to.deep.equal(errorRef);
      }
    }
    expect(operation('/search', 'post').responses['422']?.content?.['application/json']?.schema).to.deep.equal(errorRef);
    expect(operation('/items', 'post').responses['409']?.content?.['application/json']?.schema).to.deep.equal(errorRef);
    expect(operation('/search', 'get').responses['200']?.content?.['application/json']?.schema).to.deep.equal({ $ref: '#/components/schemas/SearchResult' });
    expect(Object.keys(operation('/items/{id}/image', 'get').responses['200']?.content ?? {})).to.deep.equal(['image/png']);
    expect(Object.keys(operation('/metrics', 'get').responses['200']?.content ?? {})).to.deep.equal(['text/plain']);
    expect(Object.keys(doc.components.schemas['ErrorBody']?.properties ?? {})).to.deep.equal(['statusCode', 'code', 'error', 'message']);
    // Writes name the bearer token.
    expect(doc.components.securitySchemes).to.have.key('writeToken');
    expect((operation('/items', 'post') as Operation & { security?: unknown }).security).to.deep.equal([{ writeToken: [] }]);
  });

  it('states the bounds the handlers enforce: out-of-range integers get a 400 naming the parameter', async () => {
    const image = readFileSync(path.join(fixture.images, ITEM));
    let checked = 0;
    for (const [url, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const p of op.parameters ?? []) {
          const { type, minimum, maximum } = p.schema;
          if (p.in !== 'query' || type !== 'integer' || minimum === undefined || maximum === undefined) continue;
          const outside = [minimum - 1, ...(maximum < Number.MAX_SAFE_INTEGER ? [maximum + 1] : [])];
          for (const value of outside) {
            const query = new URLSearchParams({ [p.name]: String(value), ...(url === '/search' && method === 'get' ? { id: ITEM } : {}) });
            const request: InjectOptions = {
              method: method.toUpperCase() as 'GET',
              url: `${url.replace('{id}', encodeURIComponent(ITEM))}?${query}`,
              ...(method === 'post' ? { headers: { 'content-type': 'image/png' }, payload: image } : {}),
            };
            const res = await app.inject(request);
            expect(res.statusCode, `${request.method} ${request.url}`).to.equal(400);
            expect(res.json<ErrorBody>().message).to.equal(`Expected an integer in [${minimum}, ${maximum}] for ${p.name} but received "${value}"`);
            checked++;
          }
        }
      }
    }
    // k of POST and GET /search (2 each), offset (1), limit (2), size (2).
    expect(checked).to.equal(9);
  });

  it('serves Swagger UI at /docs with its assets from the package, behind the Host check, read-only', async () => {
    const html = await app.inject({ url: '/docs' });
    expect(html.statusCode).to.equal(200);
    expect(html.headers['content-type']).to.equal('text/html; charset=utf-8');
    expect(html.body).to.contain('<div id="swagger-ui"></div>');
    expect(html.body, 'no external assets').not.to.match(/(src|href)="(https?:)?\/\//);
    const assets = [...html.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(assets).to.include.members(['/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js', '/docs/static/swagger-ui.css']);
    for (const asset of assets) {
      const res = await app.inject({ url: asset });
      expect(res.statusCode, asset).to.equal(200);
      if (asset.endsWith('.js')) expect(res.headers['content-type'], asset).to.match(/^(application|text)\/javascript/);
    }
    const bundle = await app.inject({ url: '/docs/static/swagger-ui-bundle.js' });
    expect(bundle.body.length).to.be.above(500_000);
    expect(bundle.body).to.contain('SwaggerUIBundle');
    // The UI reads the same generated document.
    expect((await app.inject({ url: '/docs/json' })).json()).to.deep.equal(doc);
    const initializer = (await app.inject({ url: '/docs/static/swagger-initializer.js' })).body;
    expect(initializer).to.contain('validatorUrl: null');

    const foreign = await app.inject({ url: '/docs', headers: { host: 'rebound.example' } });
    expect(foreign.statusCode).to.equal(403);
    expect(foreign.json<ErrorBody>().message).to.match(/^Host "rebound.example" is not allowed/);
    expect((await app.inject({ url: '/docs/static/swagger-ui-bundle.js', headers: { host: 'rebound.example' } })).statusCode).to.equal(403);
    // No write route under /docs: an unsafe method there matches no route, and on this read-only server
    // the write check answers it (403) before the 404 (access.ts: probing paths tells nothing).
    for (const method of ['POST', 'PUT', 'DELETE'] as const) expect((await app.inject({ method, url: '/docs' })).json<ErrorBody>(), method).to.deep.include({ statusCode: 403 });
    expect((await app.inject({ url: '/docs/static/nothing.js' })).json<ErrorBody>()).to.deep.include({ statusCode: 404, code: 'E_NOT_FOUND' });
  });
});
