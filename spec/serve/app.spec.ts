import { spawnSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import sharp from 'sharp';
import { createSearchApp, type SearchAppOptions } from '../../lib/serve/app.js';
import type { ErrorBody } from '../../lib/serve/http-errors.js';
import { SearchIndexStore } from '../../lib/index-store/hnsw-store.js';
import { encodeBombPng, makeTempDir } from '../image/image-fixtures.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { rawRequest } from '../helpers/raw-http.js';
import { bruteForce, buildFixtureIndex, rowOf, type ExpectedHit, type FixtureIndex } from './fixtures.js';

interface SearchBody {
  k: number;
  count: number;
  tookMs: number;
  neighbours: Array<ExpectedHit & { image: string }>;
}

const UPLOAD_LIMIT = 100_000;
const QUERY_ID = 'bag/t10k-00018.png';

/** A multipart body holding `fields` and, unless `file` is null, one file. */
function form(fields: Record<string, string>, file: { bytes: Uint8Array; name?: string } | null = null, extraFiles = 0): FormData {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  if (file) body.append('image', new Blob([file.bytes]), file.name ?? 'upload.png');
  for (let i = 0; i < extraFiles; i++) body.append(`extra${i}`, new Blob([new Uint8Array(4)]), `extra${i}.png`);
  return body;
}

function expectNeighbours(res: LightMyRequestResponse, want: ExpectedHit[]): SearchBody {
  expect(res.statusCode, res.body).to.equal(200);
  const body = res.json<SearchBody>();
  expect(body.neighbours.map((n) => n.id)).to.deep.equal(want.map((w) => w.id));
  body.neighbours.forEach((n, j) => {
    expect(n.label).to.equal(want[j]?.label);
    expect(n.score).to.be.closeTo(want[j]?.score as number, 1e-5);
    expect(n.image).to.equal(`/items/${encodeURIComponent(n.id)}/image`);
  });
  expect(body.count).to.equal(want.length);
  expect(body.tookMs).to.be.a('number');
  return body;
}

function expectError(res: LightMyRequestResponse, status: number, code: string, message: string | RegExp): void {
  expect(res.statusCode, res.body).to.equal(status);
  expect(res.headers['content-type']).to.match(/^application\/json/);
  const body = res.json<ErrorBody>();
  expect(body.statusCode).to.equal(status);
  expect(body.code).to.equal(code);
  if (typeof message === 'string') expect(body.message).to.equal(message);
  else expect(body.message).to.match(message);
}

const TOKEN = 'a-test-token-of-32-characters-xx';

describe('serve/createSearchApp', function () {
  this.timeout(60_000);
  let tmp: string;
  let fixture: FixtureIndex;
  let copies = 0;
  const png = (id: string): Buffer => readFileSync(path.join(fixture.images, id));
  const row = (id: string): number => fixture.set.ids.indexOf(id);

  before(async () => {
    tmp = makeTempDir('dml-app-');
    fixture = await buildFixtureIndex(tmp);
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  /**
   * An app over a fresh copy of the fixture index, writable with {@link TOKEN}; its `inject` sends the
   * token, so the specs of the routes need not (the access rules have their own specs below).
   */
  async function startApp(options: Partial<SearchAppOptions> = {}): Promise<{ app: FastifyInstance; dir: string }> {
    const dir = path.join(tmp, `copy-${copies++}`);
    spawnSync('cp', ['-r', fixture.dir, dir]);
    const app = await createSearchApp({ dir, device: 'cpu', maxUploadBytes: UPLOAD_LIMIT, maxK: 50, allowWrites: true, token: TOKEN, ...options });
    const inject = app.inject.bind(app) as (opts: InjectOptions) => Promise<LightMyRequestResponse>;
    (app as unknown as { inject: typeof inject }).inject = (opts) => inject({ ...opts, headers: { authorization: `Bearer ${TOKEN}`, ...opts.headers } });
    return { app, dir };
  }

  describe('searching', () => {
    let app: FastifyInstance;
    before(async () => ({ app } = await startApp()));
    after(() => app.close());

    it('POST /search with raw image bytes: the brute-force neighbours of the upload, the image itself first', async () => {
      const want = bruteForce(fixture.set, rowOf(fixture.set, row(QUERY_ID)), 5);
      const res = await app.inject({ method: 'POST', url: '/search?k=5', headers: { 'content-type': 'image/png' }, payload: png(QUERY_ID) });
      const body = expectNeighbours(res, want);
      expect(body.k).to.equal(5);
      expect(body.neighbours[0]?.id).to.equal(QUERY_ID);
      expect(body.neighbours[0]?.score).to.be.closeTo(1, 1e-6);
    });

    it('POST /search with a multipart upload, k and a label filter as form fields', async () => {
      const query = 'coat/t10k-00006.png';
      const want = bruteForce(fixture.set, rowOf(fixture.set, row(query)), 3, { label: 'dress' });
      const res = await app.inject({ method: 'POST', url: '/search', payload: form({ k: '3', label: 'dress' }, { bytes: png(query) }) });
      expectNeighbours(res, want);
      const octet = await app.inject({ method: 'POST', url: '/search?label=dress&k=3', headers: { 'content-type': 'application/octet-stream' }, payload: png(query) });
      expectNeighbours(octet, want);
      const defaultK = await app.inject({ method: 'POST', url: '/search', payload: form({}, { bytes: png(query) }) });
      expect(defaultK.json<SearchBody>()).to.deep.include({ k: 10, count: 10 });
    });

    it('GET /search?id=: the neighbours of an indexed item, the item itself left out', async () => {
      for (const id of [QUERY_ID, 'ankle_boot/t10k-00000.png', 'dress/t10k-00013.png']) {
        const r = row(id);
        const res = await app.inject({ url: `/search?id=${encodeURIComponent(id)}&k=4` });
        expectNeighbours(res, bruteForce(fixture.set, rowOf(fixture.set, r), 4, { exclude: r }));
      }
      const filtered = await app.inject({ url: `/search?id=${encodeURIComponent(QUERY_ID)}&k=50&label=bag` });
      expectNeighbours(filtered, bruteForce(fixture.set, rowOf(fixture.set, row(QUERY_ID)), 50, { exclude: row(QUERY_ID), label: 'bag' }));
      expect(filtered.json<SearchBody>().count).to.equal(5);
    });

    it('POST /search/vector: the neighbours of a raw (unnormalised) embedding', async () => {
      const vector = Array.from(rowOf(fixture.set, 7), (v) => v * 3);
      const res = await app.inject({ method: 'POST', url: '/search/vector', payload: { vector, k: 6 } });
      expectNeighbours(res, bruteForce(fixture.set, rowOf(fixture.set, 7), 6));
      const filtered = await app.inject({ method: 'POST', url: '/search/vector', payload: { vector, k: '2', label: 'coat' } });
      expectNeighbours(filtered, bruteForce(fixture.set, rowOf(fixture.set, 7), 2, { label: 'coat' }));
    });

    it('GET /items pages through the items with their thumbnails and label counts', async () => {
      const res = await app.inject({ url: '/items?offset=4&limit=3' });
      expect(res.statusCode).to.equal(200);
      const body = res.json<{ total: number; offset: number; items: Array<{ id: string; label: string; image: string }>; labels: unknown }>();
      expect(body.total).to.equal(24);
      expect(body.offset).to.equal(4);
      expect(body.items.map((i) => i.id)).to.deep.equal(fixture.set.ids.slice(4, 7));
      expect(body.items[0]?.image).to.equal(`/items/${encodeURIComponent(fixture.set.ids[4] as string)}/image`);
      expect(body.labels).to.deep.equal(['ankle_boot', 'bag', 'coat', 'dress'].map((label) => ({ label, count: 6 })));
      const coats = (await app.inject({ url: '/items?label=coat' })).json<{ total: number }>();
      expect(coats.total).to.equal(6);
    });

    it('GET /items/:id/image: a PNG thumbnail of the gallery image (ids with slashes URL-encoded)', async () => {
      const res = await app.inject({ url: `/items/${encodeURIComponent(QUERY_ID)}/image` });
      expect(res.statusCode).to.equal(200);
      expect(res.headers['content-type']).to.equal('image/png');
      const meta = await sharp(res.rawPayload).metadata();
      expect([meta.format, meta.width, meta.height]).to.deep.equal(['png', 28, 28]);
      const { data } = await sharp(res.rawPayload).greyscale().raw().toBuffer({ resolveWithObject: true });
      const { data: original } = await sharp(png(QUERY_ID)).greyscale().raw().toBuffer({ resolveWithObject: true });
      expect(data.equals(original)).to.equal(true);
      const small = await app.inject({ url: `/items/${encodeURIComponent(QUERY_ID)}/image?size=16` });
      expect((await sharp(small.rawPayload).metadata()).width).to.equal(16);
    });

    it('GET /healthz, GET /metrics.json (counts and latency quantiles per route), GET /labels and the page', async () => {
      const health = await app.inject({ url: '/healthz' });
      expect(health.json()).to.deep.equal({ status: 'ok', items: 24, workers: 1, pending: 0, generation: 1, dataFiles: null, provider: 'cpu' });
      const metrics = (await app.inject({ url: '/metrics.json' })).json<{
        requests: number;
        routes: Record<string, { count: number; statuses: Record<string, number>; latencyMs: Record<string, number> }>;
        index: { items: number; dim: number };
      }>();
      const search = metrics.routes['POST /search'];
      expect(search?.count).to.equal(4);
      expect(search?.statuses).to.deep.equal({ '200': 4 });
      expect(search?.latencyMs['p50']).to.be.above(0);
      expect(search?.latencyMs['p99']).to.be.at.least(search?.latencyMs['p50'] as number);
      expect(metrics.routes['GET /healthz']?.count).to.equal(1);
      expect(metrics.index).to.deep.equal({ items: 24, labels: 4, dim: 64, generation: 1, journalLines: 0 });

      const labels = await app.inject({ url: '/labels' });
      expect(labels.statusCode).to.equal(200);
      expect(labels.json()).to.deep.equal({ total: 4, labels: ['ankle_boot', 'bag', 'coat', 'dress'].map((label) => ({ label, count: 6 })) });

      const page = await app.inject({ url: '/' });
      expect(page.statusCode).to.equal(200);
      expect(page.headers['content-type']).to.equal('text/html; charset=utf-8');
      expect(page.body).to.contain('<input id="file" name="image" type="file" accept="image/*">');
      expect(page.body, 'no external assets').not.to.match(/(src|href)="(https?:)?\/\//);
    });
  });

  describe('access: Host check, read-only by default, token and same-origin writes', () => {
    it('a server without allowWrites is read-only: writes get 403 naming --allow-writes, reads work, no lock is taken', async () => {
      const dir = path.join(tmp, `copy-${copies++}`);
      spawnSync('cp', ['-r', fixture.dir, dir]);
      const app = await createSearchApp({ dir, device: 'cpu' });
      try {
        expect((await app.inject({ url: '/healthz' })).statusCode).to.equal(200);
        const message = 'This server is read-only (start dml serve with --allow-writes and a token to add or remove items)';
        expectError(await app.inject({ method: 'POST', url: '/items?label=x', headers: { 'content-type': 'image/png' }, payload: png(QUERY_ID) }), 403, 'E_FORBIDDEN', message);
        expectError(await app.inject({ method: 'DELETE', url: `/items/${encodeURIComponent(QUERY_ID)}` }), 403, 'E_FORBIDDEN', message);
        expect(existsSync(path.join(dir, 'lock'))).to.equal(false);
      } finally {
        await app.close();
      }
    });

    it('writes need the bearer token; cross-origin writes and foreign Host headers are refused', async () => {
      const dir = path.join(tmp, `copy-${copies++}`);
      spawnSync('cp', ['-r', fixture.dir, dir]);
      const app = await createSearchApp({ dir, device: 'cpu', allowWrites: true, token: TOKEN, allowedHosts: ['search.example'] });
      try {
        const add = (headers: Record<string, string>): Promise<LightMyRequestResponse> =>
          app.inject({ method: 'POST', url: '/items?label=x', headers: { 'content-type': 'image/png', ...headers }, payload: png(QUERY_ID) });
        const unauthorised = 'A write needs the header Authorization: Bearer <token> with the token the server was started with';
        expectError(await add({}), 401, 'E_ARG', unauthorised);
        expectError(await add({ authorization: `Bearer ${TOKEN}x` }), 401, 'E_ARG', unauthorised);
        expectError(await add({ authorization: TOKEN }), 401, 'E_ARG', unauthorised);
        expectError(await add({ authorization: `Bearer ${TOKEN}`, origin: 'http://evil.example' }), 403, 'E_FORBIDDEN', 'Cross-origin write from "http://evil.example" refused');
        expect((await add({ authorization: `Bearer ${TOKEN}`, origin: 'http://localhost:8080' })).statusCode).to.equal(201);
        expect((await add({ authorization: `Bearer ${TOKEN}` })).statusCode).to.equal(201);
        expectError(
          await app.inject({ url: '/healthz', headers: { host: 'rebound.example:8080' } }),
          403,
          'E_FORBIDDEN',
          'Host "rebound.example:8080" is not allowed (allowed: localhost, 127.0.0.1, ::1, search.example; start dml serve with --allowed-host to add one)',
        );
        expect((await app.inject({ url: '/healthz', headers: { host: 'Search.Example:8080' } })).statusCode).to.equal(200);
        expect((await app.inject({ url: '/healthz', headers: { host: '[::1]:8080' } })).statusCode).to.equal(200);
      } finally {
        await app.close();
      }
      await expectDmlError(createSearchApp({ dir, device: 'cpu', allowWrites: true, token: 'short' }), 'E_ARG', /token/);
    });

    it('never logs the token: Authorization, a write\'s query string and credential-like parameters of any name are censored at every level', async () => {
      const dir = path.join(tmp, `copy-${copies++}`);
      spawnSync('cp', ['-r', fixture.dir, dir]);
      for (const level of ['trace', 'info']) {
        const lines: string[] = [];
        const app = await createSearchApp({ dir, device: 'cpu', allowWrites: true, token: TOKEN, logger: { level, stream: { write: (line: string) => lines.push(line) } } });
        try {
          const image = png('coat/t10k-00006.png');
          const multipart = await app.inject({ method: 'POST', url: `/items?token=${TOKEN}&x=1`, headers: { authorization: `Bearer ${TOKEN}` }, payload: form({ label: 'l', id: `logged-${level}` }, { bytes: image }) });
          expect(multipart.statusCode, multipart.body).to.equal(201);
          await app.inject({ url: `/healthz?access_token=${TOKEN}`, headers: { authorization: `Bearer ${TOKEN}` } });
          await app.inject({ url: `/search?Token=${encodeURIComponent(TOKEN)}&id=nope` });
          // Refused writes with the token under other names (issue 38): the query of a write is never logged.
          for (const query of [`auth=${TOKEN}`, `apikey=${TOKEN}`, `bearer=${TOKEN}`, `Authorization=Bearer%20${TOKEN}`, `label=x;token=${TOKEN}`]) {
            expect((await app.inject({ method: 'POST', url: `/items?${query}`, payload: form({ label: 'l' }, { bytes: image }) })).statusCode).to.equal(401);
          }
          expect((await app.inject({ method: 'DELETE', url: `/items/x;token=${TOKEN}` })).statusCode).to.equal(401);
          await app.inject({ url: `/labels?apikey=${TOKEN}&k=3;auth=${TOKEN}` });
        } finally {
          await app.close();
        }
        const log = lines.join('');
        expect(log, level).to.include('"url":"/items?[redacted]"');
        expect(log, level).to.include('"url":"/items/x;[redacted]"');
        expect(log, level).to.include('"url":"/healthz?access_token=[redacted]"');
        expect(log, level).to.include('"url":"/labels?apikey=[redacted]&k=3;auth=[redacted]"');
        expect(log, level).not.to.include(TOKEN);
        if (level === 'trace') expect(log).to.include('"authorization":"[redacted]"');
      }
    });

    it('the write check runs on the matched route: encoded, doubled, absolute-form and other path spellings of a write get 401/403 and change nothing', async () => {
      const dir = path.join(tmp, `copy-${copies++}`);
      spawnSync('cp', ['-r', fixture.dir, dir]);
      const app = await createSearchApp({ dir, device: 'cpu', allowWrites: true, token: TOKEN });
      await app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = app.server.address() as AddressInfo;
      const image = png('coat/t10k-00006.png');
      // Each spelling a router might take for POST /items or DELETE /items/:id (each delete aims at an item of its own).
      const addTargets = ['/%69tems', '/it%65ms', '/%69%74%65%6d%73', '//items', '/items/', `http://127.0.0.1:${port}/items`, `http://127.0.0.1:${port}/%69tems`, '/items;x=1', '/ITEMS', '/Items', '/./items', '/x/../items', '/items?', '/items#x', '/items%3Flabel=y'];
      const deleteTargets = [
        (id: string) => `/%69tems/${id}`,
        (id: string) => `/items/${id.replace(/^./, (c) => `%${c.charCodeAt(0).toString(16)}`)}`,
        (id: string) => `//items/${id}`,
        (id: string) => `/items/${id}/`,
        (id: string) => `http://127.0.0.1:${port}/items/${id}`,
        (id: string) => `/items/${id};x=1`,
        (id: string) => `/ITEMS/${id}`,
        (id: string) => `/./items/${id}`,
        (id: string) => `/it%65ms/${id}`,
      ];
      let victims = 0;
      try {
        const sent: Array<{ target: string; status: number; origin: string | undefined }> = [];
        for (const origin of [undefined, 'http://evil.example']) {
          for (const target of addTargets) {
            const query = target.includes('?') || target.includes('#') ? '' : '?label=x';
            const res = await rawRequest(port, 'POST', `${target}${query}`, { 'content-type': 'image/png', ...(origin ? { origin } : {}) }, image);
            sent.push({ target: `POST ${target}`, status: res.status, origin });
          }
          for (const spell of deleteTargets) {
            const target = spell(encodeURIComponent(fixture.set.ids[victims++] as string));
            const res = await rawRequest(port, 'DELETE', target, origin ? { origin } : {});
            sent.push({ target: `DELETE ${target}`, status: res.status, origin });
          }
        }
        // With the token but from another origin: refused as well.
        for (const target of ['/%69tems', `http://127.0.0.1:${port}/items`]) {
          const res = await rawRequest(port, 'POST', `${target}?label=x`, { 'content-type': 'image/png', authorization: `Bearer ${TOKEN}`, origin: 'http://evil.example' }, image);
          sent.push({ target: `POST ${target} (token)`, status: res.status, origin: 'http://evil.example' });
        }
        const accepted = sent.filter((r) => r.status !== 401 && r.status !== 403);
        expect(accepted, JSON.stringify(accepted)).to.deep.equal([]);
        const health = (await app.inject({ url: '/healthz' })).json<{ items: number; generation: number }>();
        expect(health).to.deep.include({ items: 24, generation: 1 });
      } finally {
        await app.close();
      }
    });
  });

  describe('changing the index', () => {
    it('POST /items adds an image (persisted before the answer), DELETE /items/:id removes one', async () => {
      const { app, dir } = await startApp();
      const image = png('coat/t10k-00006.png');
      const added = await app.inject({ method: 'POST', url: '/items', payload: form({ label: 'my coat', id: 'mine/1' }, { bytes: image }) });
      expect(added.statusCode, added.body).to.equal(201);
      expect(added.json()).to.deep.equal({ id: 'mine/1', label: 'my coat', image: '/items/mine%2F1/image', count: 25 });
      // On disk before the answer: a reader that opens the folder now sees it (from the journal).
      const reader = await SearchIndexStore.open(dir);
      expect(reader.get('mine/1')?.label).to.equal('my coat');
      await reader.close();

      const raw = await app.inject({ method: 'POST', url: '/items?label=plain', headers: { 'content-type': 'image/png' }, payload: png('dress/t10k-00013.png') });
      expect(raw.statusCode).to.equal(201);
      const generated = raw.json<{ id: string }>().id;
      expect(generated).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

      const search = await app.inject({ method: 'POST', url: '/search?k=2', headers: { 'content-type': 'image/png' }, payload: image });
      expect(search.json<SearchBody>().neighbours.map((n) => n.id).sort()).to.deep.equal(['coat/t10k-00006.png', 'mine/1']);
      const thumb = await app.inject({ url: '/items/mine%2F1/image' });
      expect(thumb.statusCode).to.equal(200);
      expect((await sharp(thumb.rawPayload).metadata()).width).to.equal(28);

      const removed = await app.inject({ method: 'DELETE', url: `/items/${encodeURIComponent('coat/t10k-00006.png')}` });
      expect(removed.json()).to.deep.equal({ id: 'coat/t10k-00006.png', removed: true, count: 25 });
      const after = await app.inject({ method: 'POST', url: '/search?k=1', headers: { 'content-type': 'image/png' }, payload: image });
      expect(after.json<SearchBody>().neighbours.map((n) => n.id)).to.deep.equal(['mine/1']);
      expectError(await app.inject({ url: `/search?id=${encodeURIComponent('coat/t10k-00006.png')}` }), 404, 'E_NOT_FOUND', 'No item with id "coat/t10k-00006.png" in the index');
      await app.close();

      const reopened = await SearchIndexStore.open(dir);
      expect(reopened.count).to.equal(25);
      expect(reopened.generation).to.equal(2);
      expect(reopened.get(generated)?.label).to.equal('plain');
      expect(reopened.get('coat/t10k-00006.png')).to.equal(undefined);
      await reopened.close();
    });

    it('keeps answering searches while items are added and removed concurrently', async () => {
      const { app } = await startApp({ snapshotEvery: 3 });
      const query = png(QUERY_ID);
      const searches = Array.from({ length: 30 }, () => app.inject({ method: 'POST', url: '/search?k=3', headers: { 'content-type': 'image/png' }, payload: query }));
      const adds = Array.from({ length: 8 }, (_, i) =>
        app.inject({ method: 'POST', url: `/items?label=new&id=n${i}`, headers: { 'content-type': 'image/png' }, payload: png(fixture.set.ids[i + 6] as string) }),
      );
      const removes = fixture.set.ids.slice(18, 22).map((id) => app.inject({ method: 'DELETE', url: `/items/${encodeURIComponent(id)}` }));
      const byId = Array.from({ length: 10 }, () => app.inject({ url: `/search?id=${encodeURIComponent(QUERY_ID)}&k=2` }));
      const results = await Promise.all([...searches, ...adds, ...removes, ...byId]);
      results.forEach((res) => expect(res.statusCode, res.body).to.be.oneOf([200, 201]));
      for (const res of results.slice(0, searches.length)) expect(res.json<SearchBody>().neighbours[0]?.id).to.equal(QUERY_ID);
      const health = (await app.inject({ url: '/healthz' })).json<{ items: number; generation: number }>();
      expect(health.items).to.equal(24 + 8 - 4);
      expect(health.generation).to.be.above(1);
      await app.close();
    });

    it('a writable server refuses an index another writer holds; a read-only one opens it alongside', async () => {
      const { app, dir } = await startApp();
      try {
        let error: unknown;
        await createSearchApp({ dir, device: 'cpu', allowWrites: true, token: TOKEN }).catch((err: unknown) => (error = err));
        expect((error as Error).message).to.match(new RegExp(`^Index .* is in use by process ${process.pid} on `));
        const reader = await createSearchApp({ dir, device: 'cpu' });
        expect((await reader.inject({ url: '/healthz' })).json<{ items: number }>().items).to.equal(24);
        await reader.close();
      } finally {
        await app.close();
      }
    });
  });

  describe('bad input: a 4xx JSON error naming the problem, never a 500, and the server keeps serving', () => {
    let app: FastifyInstance;
    before(async () => ({ app } = await startApp()));
    after(() => app.close());
    const post = (url: string, payload: string | Buffer | FormData, contentType?: string): Promise<LightMyRequestResponse> =>
      app.inject({ method: 'POST', url, payload, ...(contentType !== undefined ? { headers: { 'content-type': contentType } } : {}) });

    it('rejects images that cannot be decoded: not an image, truncated, empty, a decompression bomb', async () => {
      expectError(await post('/search', Buffer.from('definitely not an image'), 'image/png'), 422, 'E_IMAGE', /^request body: not an image in a supported format \(expected JPEG, PNG, /);
      expectError(await post('/search', form({}, { bytes: Buffer.from('%PDF-1.4'), name: 'doc.pdf' })), 422, 'E_IMAGE', /^file "doc\.pdf": not an image in a supported format/);
      const jpeg = await sharp(png(QUERY_ID)).resize(200, 200).jpeg().toBuffer();
      expectError(await post('/search', jpeg.subarray(0, jpeg.length >> 1), 'image/jpeg'), 422, 'E_IMAGE', /^request body: truncated image data, .*premature end of JPEG image \(expected a complete image file\)$/);
      expectError(await post('/search', png(QUERY_ID).subarray(0, 100), 'image/png'), 422, 'E_IMAGE', 'request body: corrupt image data, vipspng: libpng read error (expected a decodable image file)');
      const bomb = encodeBombPng(12_000, 12_000);
      expect(bomb.length).to.be.below(UPLOAD_LIMIT);
      expectError(await post('/search', form({}, { bytes: bomb, name: 'bomb.png' })), 422, 'E_IMAGE', 'file "bomb.png": too many pixels, 12000x12000 = 144000000 (expected at most limitInputPixels = 40000000 pixels)');
      expectError(await post('/items?label=x', bomb, 'image/png'), 422, 'E_IMAGE', /^request body: too many pixels/);
      expectError(await post('/search', form({}, { bytes: new Uint8Array(0) })), 422, 'E_IMAGE', 'file "upload.png": empty file (expected encoded image data)');
      expectError(await post('/search', Buffer.alloc(0), 'image/png'), 422, 'E_IMAGE', 'request body: empty file (expected encoded image data)');
    });

    it('rejects bodies over the size limit, a wrong Content-Type, and malformed or empty multipart bodies', async () => {
      const big = Buffer.alloc(UPLOAD_LIMIT + 1);
      expectError(await post('/search', big, 'image/png'), 413, 'FST_ERR_CTP_BODY_TOO_LARGE', `Request body is too large (expected at most ${UPLOAD_LIMIT} bytes)`);
      expectError(await post('/search', form({}, { bytes: big })), 413, 'FST_REQ_FILE_TOO_LARGE', `Uploaded file is too large (expected at most ${UPLOAD_LIMIT} bytes)`);
      expectError(await post('/search', form({}, { bytes: png(QUERY_ID) }, 1)), 413, 'FST_FILES_LIMIT', 'Too many files in the multipart body (expected one image file)');
      expectError(await post('/search', 'hello', 'text/plain'), 415, 'FST_ERR_CTP_INVALID_MEDIA_TYPE', 'Expected multipart/form-data, image/* or application/octet-stream (application/json for /search/vector) but received Content-Type "text/plain"');
      expectError(await post('/search', '{"vector": []}', 'application/json'), 415, 'E_ARG', 'Expected an image (multipart/form-data, image/* or application/octet-stream) but received Content-Type "application/json"');
      expectError(await app.inject({ method: 'POST', url: '/search' }), 400, 'E_ARG', 'Expected an image in the request body (multipart/form-data, image/* or application/octet-stream) but received no body');
      expectError(await post('/search', form({ k: '3' })), 400, 'E_ARG', 'Expected an image file in the multipart body (e.g. field "image") but received none');
      const cut = '--xx\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n\r\nabc';
      expectError(await post('/search', cut, 'multipart/form-data; boundary=xx'), 400, 'E_ARG', 'Malformed multipart body: Unexpected end of multipart data (expected multipart/form-data holding one image file)');
    });

    it('rejects bad parameters: k, label, id, size, offset', async () => {
      const image = png(QUERY_ID);
      for (const k of ['0', '51', 'abc', '2.5', '-1']) {
        expectError(await post(`/search?k=${k}`, image, 'image/png'), 400, 'E_ARG', `Expected an integer in [1, 50] for k but received "${k}"`);
      }
      expectError(await post('/search', form({ k: '99' }, { bytes: image })), 400, 'E_ARG', 'Expected an integer in [1, 50] for k but received "99"');
      expectError(await post('/search?label=%0A', image, 'image/png'), 400, 'E_ARG', 'Expected a non-empty string of at most 512 characters without control characters for label but received "\\n"');
      expectError(await app.inject({ url: '/search' }), 400, 'E_ARG', 'Expected a non-empty string of at most 512 characters without control characters for id but received undefined');
      expectError(await app.inject({ url: '/search?id=nope' }), 404, 'E_NOT_FOUND', 'No item with id "nope" in the index');
      expectError(await app.inject({ url: `/items/${encodeURIComponent(QUERY_ID)}/image?size=2000` }), 400, 'E_ARG', 'Expected an integer in [16, 1024] for size but received "2000"');
      expectError(await app.inject({ url: '/items/nope/image' }), 404, 'E_NOT_FOUND', 'No item with id "nope" in the index');
      expectError(await app.inject({ url: '/items?offset=-3' }), 400, 'E_ARG', `Expected an integer in [0, ${Number.MAX_SAFE_INTEGER}] for offset but received "-3"`);
      expectError(await app.inject({ url: '/items?limit=0' }), 400, 'E_ARG', 'Expected an integer in [1, 1000] for limit but received "0"');
    });

    it('rejects bad vectors and JSON bodies on POST /search/vector', async () => {
      const vector = (v: unknown): Promise<LightMyRequestResponse> => app.inject({ method: 'POST', url: '/search/vector', payload: { vector: v } });
      expectError(await vector([1, 2, 3]), 400, 'E_ARG', "Expected an array of 64 numbers (the index's dimension) for vector but received array of length 3");
      expectError(await vector(undefined), 400, 'E_ARG', "Expected an array of 64 numbers (the index's dimension) for vector but received undefined");
      expectError(await vector([...Array(63).fill(0), 'x']), 400, 'E_ARG', 'Expected a number for vector[63] but received "x"');
      expectError(await vector(Array(64).fill(0)), 400, 'E_ARG', 'Expected a vector with a non-zero norm for vector but received "all zeros"');
      expectError(await vector(Array(64).fill(1e39)), 400, 'E_ARG', 'Expected finite values for vector but received Infinity');
      expectError(await post('/search/vector', '[1, 2]', 'application/json'), 400, 'E_ARG', 'Expected a JSON object such as {"vector": [...], "k": 10} for the request body but received array of length 2');
      expectError(await post('/search/vector', '{"vector": [1,', 'application/json'), 400, 'FST_ERR_CTP_INVALID_JSON_BODY', "Body is not valid JSON but content-type is set to 'application/json'");
      expectError(await app.inject({ method: 'POST', url: '/search/vector', payload: { vector: Array(64).fill(1), k: 0 } }), 400, 'E_ARG', 'Expected an integer in [1, 50] for k but received 0');
    });

    it('rejects adds without a label or with a taken id, and removals of unknown ids; unknown routes are 404', async () => {
      const image = png(QUERY_ID);
      expectError(await post('/items', image, 'image/png'), 400, 'E_ARG', 'Expected a non-empty string of at most 512 characters without control characters for label but received undefined');
      expectError(await post('/items', form({ label: 'x', id: QUERY_ID }, { bytes: image })), 409, 'E_ARG', `An item with id "${QUERY_ID}" is already in the index (expected a new id)`);
      for (const id of ['.', '..']) {
        expectError(await post('/items', form({ label: 'x', id }, { bytes: image })), 400, 'E_ARG', `Expected an id other than "." and ".." (a URL path cannot carry them unchanged) for id but received "${id}"`);
      }
      expectError(await app.inject({ method: 'DELETE', url: '/items/nope' }), 404, 'E_NOT_FOUND', 'No item with id "nope" in the index');
      expectError(await app.inject({ url: '/nothing/here?x=1' }), 404, 'E_NOT_FOUND', 'No route GET /nothing/here (see GET /docs, or GET /openapi.json)');
      expectError(await app.inject({ method: 'PUT', url: '/items/x' }), 404, 'E_NOT_FOUND', 'No route PUT /items/x (see GET /docs, or GET /openapi.json)');
    });

    it('is still healthy afterwards, and no request got a 5xx', async () => {
      expect((await app.inject({ url: '/healthz' })).statusCode).to.equal(200);
      const metrics = (await app.inject({ url: '/metrics.json' })).json<{ routes: Record<string, { statuses: Record<string, number> }>; index: { items: number } }>();
      const statuses = Object.values(metrics.routes).flatMap((r) => Object.keys(r.statuses).map(Number));
      expect(statuses.filter((s) => s >= 500)).to.deep.equal([]);
      expect(statuses.filter((s) => s >= 400).length).to.be.above(5);
      expect(metrics.index.items).to.equal(24);
    });
  });
});
