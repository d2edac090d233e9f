/**
 * @file The index-store interface (lib/index-store/index-store.ts): the same cases against the
 * hnswlib store (a folder) and the LanceDB store (`lance:<folder>`, on a temp folder), both built from
 * the same fixture embeddings and opened through openIndexStore. Then what only the LanceDB store
 * does: its ANN index, read replicas that pick up a writer's commits, and optimize.
 *
 * LanceDB is an optional peer dependency: without it installed the LanceDB cases are skipped with a
 * note, except in CI (CI=true), where .ci/run installs it and a missing package fails them.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { DmlError } from '../../lib/errors.js';
import { explainMissingLancedb } from '../../lib/util/optional-deps.js';
import type { IndexStore } from '../../lib/index-store/index-store.js';
import { DEFAULT_LANCE_ANN, LanceIndexStore, type LanceAnnParams } from '../../lib/index-store/lance-store.js';
import type { NewItem } from '../../lib/index-store/layout.js';
import { openIndexStore, parseIndexLocation } from '../../lib/index-store/open-store.js';
import { normalizeRowsInPlace } from '../../lib/embed/normalize.js';
import { createSearchApp } from '../../lib/serve/app.js';
import { sha256 } from '../../lib/util/hash.js';
import { Rng } from '../../lib/util/rng.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { makeTempDir } from '../image/image-fixtures.js';
import { bruteForce, buildFixtureIndex, MODEL, rowOf, type FixtureIndex } from '../serve/fixtures.js';
import { lancedbInstalled, requireLancedb } from '../helpers/lancedb.js';

/** A unit vector of `dim` values along axis `axis`, nudged by `tilt` along the next axis. */
function axisVector(dim: number, axis: number, tilt = 0): Float32Array {
  const v = new Float32Array(dim);
  v[axis % dim] = 1;
  v[(axis + 1) % dim] = tilt;
  return v;
}

/** Builds a LanceDB index in `dir` from the fixture's embeddings and sources. */
async function buildLanceIndex(fixture: FixtureIndex, dir: string, ann: Partial<LanceAnnParams> = {}): Promise<void> {
  const hnsw = await openIndexStore(fixture.dir);
  const { set } = fixture;
  const items = await Promise.all(set.ids.map(async (id) => (await hnsw.get(id))!));
  await LanceIndexStore.create(dir, {
    modelPath: MODEL,
    metadata: { model: hnsw.metadata.model, preprocessing: hnsw.metadata.preprocessing, dataset: hnsw.metadata.dataset },
    set,
    sources: items.map((item) => item.source),
    ann: { ...DEFAULT_LANCE_ANN, ...ann },
  });
  await hnsw.close();
}

describe('index-store interface: the same cases against both stores', function () {
  this.timeout(60_000);
  let tmp: string;
  let fixture: FixtureIndex;
  let lance: boolean;
  let copies = 0;

  before(async () => {
    tmp = makeTempDir('dml-index-iface-');
    fixture = await buildFixtureIndex(tmp);
    lance = await lancedbInstalled();
    if (lance) await buildLanceIndex(fixture, path.join(tmp, 'lance-index'));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  const kinds = [
    { kind: 'hnsw', source: (): string => fixture.dir, location: (dir: string): string => dir },
    { kind: 'lance', source: (): string => path.join(tmp, 'lance-index'), location: (dir: string): string => `lance:${dir}` },
  ] as const;

  for (const { kind, source, location } of kinds) {
    describe(`${kind} store`, () => {
      /** Location of a fresh copy of the fixture index, for tests that change it. */
      let copy: string;
      beforeEach(function () {
        if (kind === 'lance') requireLancedb(this, lance);
        const dir = path.join(tmp, `copy-${copies++}`);
        spawnSync('cp', ['-r', source(), dir]);
        copy = location(dir);
      });

      it('reports its model, dimension, items, labels and pages of items', async () => {
        const store: IndexStore = await openIndexStore(copy);
        expect(store.kind).to.equal(kind);
        expect(store.writable).to.equal(false);
        expect(store.count).to.equal(24);
        expect(store.dim).to.equal(64);
        expect(store.metadata.model.sha256).to.equal(sha256(readFileSync(MODEL)));
        expect(sha256(readFileSync(store.modelPath))).to.equal(store.metadata.model.sha256);
        expect(store.metadata.preprocessing).to.deep.include({ height: 28, width: 28, channels: 1, layout: 'NCHW' });
        const item = await store.get('bag/t10k-00018.png');
        expect(item).to.deep.equal({ id: 'bag/t10k-00018.png', label: 'bag', source: { kind: 'file', path: path.join(fixture.images, 'bag', 't10k-00018.png') } });
        expect(await store.get('no such id')).to.equal(undefined);
        expect(await store.existing(['no such id', 'bag/t10k-00018.png', "it's"])).to.deep.equal(new Set(['bag/t10k-00018.png']));
        expect(await store.existing(fixture.set.ids)).to.deep.equal(new Set(fixture.set.ids));
        expect(await store.labelCounts()).to.deep.equal(['ankle_boot', 'bag', 'coat', 'dress'].map((label) => ({ label, count: 6 })));
        const page = await store.list({ offset: 5, limit: 2 });
        expect(page.total).to.equal(24);
        expect(page.items.map((i) => i.id)).to.deep.equal(fixture.set.ids.slice(5, 7));
        const coats = await store.list({ label: 'coat' });
        expect(coats.total).to.equal(6);
        expect(coats.items.map((i) => i.label)).to.deep.equal(Array(6).fill('coat'));
        expect(await store.pendingChanges()).to.equal(kind === 'hnsw' ? 0 : 24);
        expect(await store.info()).to.deep.include({ kind, items: 24, dim: 64 });
        await store.close();
      });

      it('finds exactly the brute-force neighbours of every item, with and without a label filter', async () => {
        const store = await openIndexStore(copy);
        const { set } = fixture;
        for (let row = 0; row < set.count; row++) {
          const query = rowOf(set, row);
          const id = set.ids[row] as string;
          for (const options of [{}, { label: 'dress' }]) {
            const got = await store.search(query, { k: 5, excludeId: id, ...options });
            const want = bruteForce(set, query, 5, { exclude: row, ...options });
            expect(got.map((h) => h.id), `${id} ${JSON.stringify(options)}`).to.deep.equal(want.map((h) => h.id));
            got.forEach((hit, j) => expect(hit.score).to.be.closeTo((want[j] as { score: number }).score, 1e-5));
          }
          expect((await store.search(query, { k: 1 }))[0]?.id).to.equal(id);
          (await store.vector(id)).forEach((v, j) => expect(v).to.be.closeTo(query[j] as number, 1e-6));
        }
        expect(await store.search(rowOf(set, 0), { k: 100 })).to.have.length(24);
        expect(await store.search(rowOf(set, 0), { k: 3, label: "no such label's" })).to.deep.equal([]);
        await store.close();
      });

      it('persists additions and removals: reopened, the index holds exactly the new items', async () => {
        const store = await openIndexStore(copy, { writable: true });
        expect(store.writable).to.equal(true);
        const [a, b] = fixture.set.ids as [string, string];
        const added: NewItem[] = [
          { id: "new/one's", label: 'axis', vector: axisVector(64, 0), image: new Uint8Array([1, 2, 3]) },
          { id: 'new/two', label: 'axis', vector: axisVector(64, 0, 0.1), image: { kind: 'file', path: '/elsewhere/two.png' } },
        ];
        const before = store.generation;
        await store.add(added);
        await store.remove([a, b]);
        expect(store.count).to.equal(24);
        expect(store.generation).to.be.at.least(before);
        expect((await store.search(axisVector(64, 0), { k: 2 })).map((h) => h.id)).to.deep.equal(["new/one's", 'new/two']);
        await store.close();

        const again = await openIndexStore(copy);
        expect(again.count).to.equal(24);
        expect(await again.get(a)).to.equal(undefined);
        expect((await again.get('new/two'))?.source).to.deep.equal({ kind: 'file', path: '/elsewhere/two.png' });
        const upload = (await again.get("new/one's"))!;
        expect(upload.source).to.deep.equal({ kind: 'file', path: `uploads/${sha256(new Uint8Array([1, 2, 3]))}` });
        expect(again.resolveSource(upload)).to.deep.equal({ kind: 'file', path: path.join(again.dir, 'uploads', sha256(new Uint8Array([1, 2, 3]))) });
        const hits = await again.search(axisVector(64, 0), { k: 2 });
        expect(hits.map((h) => h.id)).to.deep.equal(["new/one's", 'new/two']);
        expect(hits[0]?.score).to.be.closeTo(1, 1e-6);
        expect(hits[1]?.score).to.be.closeTo(1 / Math.sqrt(1.01), 1e-6);
        const row = 5;
        const want = bruteForce(fixture.set, rowOf(fixture.set, row), 30, { exclude: row }).filter((h) => h.id !== a && h.id !== b).slice(0, 4);
        expect((await again.search(rowOf(fixture.set, row), { k: 4, excludeId: fixture.set.ids[row] as string })).map((h) => h.id)).to.deep.equal(want.map((h) => h.id));
        await again.close();

        // optimize folds the changes in, and the uploaded bytes go once no item uses them.
        const writer = await openIndexStore(copy, { writable: true });
        await writer.remove(["new/one's"]);
        const done = await writer.optimize();
        expect(done).to.be.an('object');
        expect(await writer.pendingChanges()).to.equal(kind === 'hnsw' ? 0 : 23);
        await writer.close();
        expect(readdirSync(path.join(parseIndexLocation(copy).dir, 'uploads'))).to.deep.equal([]);
      });

      it('rejects duplicate and malformed items, unknown ids, bad queries and writes to a read-only store, changing nothing', async () => {
        const reader = await openIndexStore(copy);
        await expectDmlError(reader.remove(['bag/t10k-00018.png']), 'E_ARG', /^Index .* was opened read-only$/);
        await expectDmlError(reader.add([{ id: 'x', label: 'x', vector: axisVector(64, 0), image: { kind: 'file', path: '/a.png' } }]), 'E_ARG', /^Index .* was opened read-only$/);
        await reader.close();
        const store = await openIndexStore(copy, { writable: true });
        const item = (id: string, vector = axisVector(64, 0)): NewItem => ({ id, label: 'x', vector, image: { kind: 'file', path: '/a.png' } });
        await expectDmlError(store.add([item('bag/t10k-00018.png')]), 'E_ARG', 'Expected an id not already in the index for id but received "bag/t10k-00018.png"');
        await expectDmlError(store.add([item('a'), item('a')]), 'E_ARG', 'Expected an id not given twice for items[1].id but received "a"');
        await expectDmlError(store.add([item('a', new Float32Array(3))]), 'E_ARG', "Expected a Float32Array of 64 values (the index's dimension) for items[0].vector but received Float32Array of length 3");
        await expectDmlError(store.add([item('a', new Float32Array(64))]), 'E_ARG', 'Expected a vector with a non-zero norm for items[0].vector but received "all zeros"');
        await expectDmlError(store.remove(['bag/t10k-00018.png', 'nope']), 'E_NOT_FOUND', 'No item with id "nope" in the index');
        await expectDmlError(async () => store.search(new Float32Array(64).fill(Number.NaN), { k: 1 }), 'E_ARG', 'Expected finite values for query but received NaN');
        await expectDmlError(async () => store.search(axisVector(64, 0), { k: 0 }), 'E_ARG', 'Expected a positive integer for k but received 0');
        await expectDmlError(async () => store.vector('nope'), 'E_NOT_FOUND', 'No item with id "nope" in the index');
        await expectDmlError(
          store.optimize({ rebuildAnn: true }),
          'E_ARG',
          kind === 'hnsw'
            ? 'Expected false for an hnswlib index (its graph is the index; build a new index to rebuild it) for rebuildAnn but received true'
            : 'Expected a table of at least minRows (50000) rows for rebuildAnn but received "24 rows"',
        );
        expect(store.count).to.equal(24);
        expect(await store.get('bag/t10k-00018.png')).not.to.equal(undefined);
        await store.close();
        await expectDmlError(openIndexStore(location(path.join(tmp, 'nothing'))), 'E_NOT_FOUND', /^No search index at .*nothing \(index\.json is missing\)$/);
      });

      it('serves searches over HTTP through the interface (dml serve)', async () => {
        const app = await createSearchApp({ dir: copy, device: 'cpu' });
        try {
          const { set } = fixture;
          const id = set.ids[3] as string;
          const byId = (await app.inject({ url: `/search?id=${encodeURIComponent(id)}&k=3` })).json<{ neighbours: Array<{ id: string }> }>();
          expect(byId.neighbours.map((n) => n.id)).to.deep.equal(bruteForce(set, rowOf(set, 3), 3, { exclude: 3 }).map((h) => h.id));
          const health = (await app.inject({ url: '/healthz' })).json<{ items: number; dataFiles: number | null }>();
          expect(health.items).to.equal(24);
          // The data files a search reads: the LanceDB table's one fragment; none for the in-memory hnswlib graph.
          expect(health.dataFiles).to.equal(kind === 'lance' ? 1 : null);
          const labels = (await app.inject({ url: '/labels' })).json<{ total: number }>();
          expect(labels.total).to.equal(4);
          const metrics = await app.inject({ url: '/metrics' });
          expect(metrics.body).to.match(/^dmlkit_index_labels 4$/m);
        } finally {
          await app.close();
        }
      });

      it('takes writes over HTTP through the interface (dml serve --allow-writes)', async () => {
        const token = 'a-token-of-sixteen-chars';
        const app = await createSearchApp({ dir: copy, device: 'cpu', allowWrites: true, token });
        const authorization = `Bearer ${token}`;
        const image = readFileSync(path.join(fixture.images, 'bag', 't10k-00018.png'));
        try {
          const added = await app.inject({ method: 'POST', url: '/items?label=uploaded&id=up/1', headers: { 'content-type': 'image/png', authorization }, payload: image });
          expect(added.statusCode, added.body).to.equal(201);
          expect(added.json()).to.deep.include({ id: 'up/1', count: 25 });
          const taken = await app.inject({ method: 'POST', url: '/items?label=uploaded&id=up/1', headers: { 'content-type': 'image/png', authorization }, payload: image });
          expect(taken.statusCode).to.equal(409);
          // The upload is an exact copy of an indexed image: the two are each other's nearest neighbours.
          const hits = (await app.inject({ url: `/search?id=${encodeURIComponent('up/1')}&k=1` })).json<{ neighbours: Array<{ id: string; score: number }> }>();
          expect(hits.neighbours[0]?.id).to.equal('bag/t10k-00018.png');
          expect(hits.neighbours[0]?.score).to.be.closeTo(1, 1e-5);
          expect((await app.inject({ url: `/items/${encodeURIComponent('up/1')}/image` })).statusCode).to.equal(200);
          const removed = await app.inject({ method: 'DELETE', url: `/items/${encodeURIComponent('bag/t10k-00018.png')}`, headers: { authorization } });
          expect(removed.json()).to.deep.equal({ id: 'bag/t10k-00018.png', removed: true, count: 24 });
          expect((await app.inject({ url: `/items/${encodeURIComponent('bag/t10k-00018.png')}/image` })).statusCode).to.equal(404);
        } finally {
          await app.close();
        }
        const reopened = await openIndexStore(copy);
        expect(reopened.count).to.equal(24);
        expect((await reopened.get('up/1'))?.label).to.equal('uploaded');
        await reopened.close();
      });
    });
  }

  describe('lance store only', () => {
    beforeEach(function () {
      requireLancedb(this, lance);
    });

    it('builds the IVF_HNSW_SQ index at minRows and still finds the exact neighbours (refine), new rows before optimize included', async () => {
      const dir = path.join(tmp, 'lance-ann');
      await buildLanceIndex(fixture, dir, { minRows: 10, partitions: 1 });
      const writer = await LanceIndexStore.open(dir, { writable: true });
      expect(await writer.info()).to.deep.include({ annIndex: 'IVF_HNSW_SQ', unindexedRows: 0 });
      const { set } = fixture;
      for (let row = 0; row < set.count; row += 5) {
        const want = bruteForce(set, rowOf(set, row), 5, { exclude: row });
        expect((await writer.search(rowOf(set, row), { k: 5, excludeId: set.ids[row] as string })).map((h) => h.id)).to.deep.equal(want.map((h) => h.id));
      }
      await writer.add([{ id: 'fresh', label: 'axis', vector: axisVector(64, 7), image: { kind: 'file', path: '/f.png' } }]);
      expect(await writer.pendingChanges()).to.equal(1);
      expect((await writer.search(axisVector(64, 7), { k: 1 }))[0]?.id).to.equal('fresh');
      const done = await writer.optimize();
      expect(done).to.deep.include({ indexBuilt: false, unindexedRows: 0 });
      expect((await writer.search(axisVector(64, 7), { k: 1 }))[0]?.id).to.equal('fresh');
      // Without the added row, so that the table holds exactly the fixture's rows again.
      await writer.remove(['fresh']);
      const rebuilt = await writer.optimize({ rebuildAnn: true });
      expect(rebuilt).to.deep.include({ indexBuilt: true, unindexedRows: 0 });
      for (let row = 1; row < set.count; row += 5) {
        const want = bruteForce(set, rowOf(set, row), 5, { exclude: row });
        expect((await writer.search(rowOf(set, row), { k: 5, excludeId: set.ids[row] as string })).map((h) => h.id)).to.deep.equal(want.map((h) => h.id));
      }
      await writer.close();
    });

    it('concurrent searches, coalesced into shared LanceDB queries, each get exactly what a lone search returns', async () => {
      const dir = path.join(tmp, 'lance-batched');
      await buildLanceIndex(fixture, dir, { minRows: 10, partitions: 1 });
      const store = await LanceIndexStore.open(dir);
      const { set } = fixture;
      // Per row: an unfiltered k=5 search (these share queries), and one with its own k, label and excludeId.
      const searches = set.ids.flatMap((id, row) => [
        { query: rowOf(set, row), options: { k: 5 } },
        {
          query: rowOf(set, row),
          options: { k: 1 + (row % 4), label: row % 3 === 0 ? (set.labels[(row + 7) % set.count] as string) : undefined, excludeId: row % 2 === 0 ? id : undefined },
        },
      ]);
      const alone = [];
      for (const { query, options } of searches) alone.push(await store.search(query, options));
      expect(alone.filter((hits) => hits.length > 1)).to.have.length.above(searches.length / 2);
      for (let round = 0; round < 2; round++) {
        expect(await Promise.all(searches.map(({ query, options }) => store.search(query, options)))).to.deep.equal(alone);
      }
      await store.close();
    });

    it('a build written in several chunks leaves one data file: compacted, the chunks\' files removed', async function () {
      this.timeout(120_000);
      const dir = path.join(tmp, 'lance-chunks');
      const hnsw = await openIndexStore(fixture.dir);
      const count = 45_000; // three chunks of the build (BUILD_CHUNK rows each)
      const dim = 8;
      const rng = new Rng(3);
      const vectors = Float32Array.from({ length: count * dim }, () => rng.nextGaussian());
      normalizeRowsInPlace(vectors, count, dim, 'vectors');
      const ids = Array.from({ length: count }, (_, i) => `c${i}`);
      await LanceIndexStore.create(dir, {
        modelPath: MODEL,
        metadata: { model: hnsw.metadata.model, preprocessing: hnsw.metadata.preprocessing, dataset: hnsw.metadata.dataset },
        set: { vectors, count, dim, ids, labels: ids.map((_, i) => `l${i % 3}`) },
        sources: ids.map((id) => ({ kind: 'file', path: `/${id}.png` })),
        ann: DEFAULT_LANCE_ANN,
      });
      await hnsw.close();
      expect(readdirSync(path.join(dir, 'items.lance', 'data'))).to.have.length(1);
      const store = await LanceIndexStore.open(dir);
      expect(store.count).to.equal(count);
      expect(await store.list({ offset: 44_998, limit: 5 })).to.deep.equal({
        total: count,
        items: [44_998, 44_999].map((i) => ({ id: `c${i}`, label: `l${i % 3}`, source: { kind: 'file', path: `/c${i}.png` } })),
      });
      expect((await store.search(vectors.slice(dim * 30_001, dim * 30_002), { k: 1 }))[0]?.id).to.equal('c30001');
      await store.close();
    });

    it('a writer compacts its data files after compactEvery commits, after a pause in writes and when it closes; info counts them', async () => {
      const dir = path.join(tmp, 'lance-compact');
      await buildLanceIndex(fixture, dir);
      const writer = await LanceIndexStore.open(dir, { writable: true, compactEvery: 3, compactIdleSeconds: 0.5 });
      const add = (i: number): Promise<void> => writer.add([{ id: `w${i}`, label: 'axis', vector: axisVector(64, i, 0.5), image: { kind: 'file', path: `/${i}.png` } }]);
      expect(await writer.dataFiles()).to.equal(1);
      // Each commit is a data file of its own until the third, which compacts them (before the next write runs).
      const files: number[] = [];
      for (let i = 0; i < 5; i++) {
        await add(i);
        files.push(await writer.dataFiles());
      }
      // LanceDB merges the new commits' files but keeps the build's indexed fragment apart: 2 after a compaction.
      expect(files).to.deep.equal([2, 3, 4, 3, 4]);
      expect(await writer.info()).to.deep.include({ dataFiles: 4, uncompactedCommits: 2, items: 29 });
      // No write for compactIdleSeconds: the two commits are compacted.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(await writer.info()).to.deep.include({ dataFiles: 2, uncompactedCommits: 0 });
      // Closing compacts what is left (7 files without compaction).
      await add(5);
      await writer.close();
      const reader = await LanceIndexStore.open(dir);
      expect([reader.count, await reader.dataFiles()]).to.deep.equal([30, 2]);
      expect((await reader.search(axisVector(64, 4, 0.5), { k: 1 }))[0]?.id).to.equal('w4');
      await reader.close();
    });

    it('optimize creates the ANN index once additions cross minRows', async () => {
      const dir = path.join(tmp, 'lance-grow');
      await buildLanceIndex(fixture, dir, { minRows: 30, partitions: 1 });
      const writer = await LanceIndexStore.open(dir, { writable: true });
      expect(await writer.info()).to.deep.include({ annIndex: null });
      await writer.add(Array.from({ length: 6 }, (_, i) => ({ id: `g${i}`, label: 'axis', vector: axisVector(64, i, 0.5), image: { kind: 'file', path: `/${i}.png` } })));
      const done = await writer.optimize();
      expect(done).to.deep.include({ indexBuilt: true, unindexedRows: 0 });
      expect(await writer.info()).to.deep.include({ annIndex: 'IVF_HNSW_SQ', items: 30 });
      expect((await writer.search(axisVector(64, 2, 0.5), { k: 1 }))[0]?.id).to.equal('g2');
      await writer.close();
    });

    it('read replicas: read-only stores pick up a writer\'s commits after their refresh interval; one writer at a time', async () => {
      const dir = path.join(tmp, 'lance-replicas');
      await buildLanceIndex(fixture, dir);
      const readers = await Promise.all([0, 1].map(() => LanceIndexStore.open(dir, { refreshSeconds: 0.2 })));
      const writer = await LanceIndexStore.open(dir, { writable: true });
      await expectDmlError(LanceIndexStore.open(dir, { writable: true }), 'E_IO', new RegExp(`^Index .* is in use by process ${process.pid} on `));
      await writer.add([{ id: 'late', label: 'axis', vector: axisVector(64, 9), image: { kind: 'file', path: '/late.png' } }]);
      await writer.remove([fixture.set.ids[0] as string]);
      await new Promise((resolve) => setTimeout(resolve, 600));
      for (const reader of readers) {
        await reader.refresh();
        expect(reader.count).to.equal(24);
        expect(reader.generation).to.equal(writer.generation);
        expect((await reader.search(axisVector(64, 9), { k: 1 }))[0]?.id).to.equal('late');
        expect(await reader.get(fixture.set.ids[0] as string)).to.equal(undefined);
        expect(await reader.labelCounts()).to.deep.include({ label: 'axis', count: 1 });
        await reader.close();
      }
      await writer.close();
    });

    it('names the package to install when LanceDB is missing, and refuses bad locations and parameters', async () => {
      const missing = Object.assign(new Error("Cannot find package '@lancedb/lancedb' imported from /x/lance-store.js"), { code: 'ERR_MODULE_NOT_FOUND' });
      const explained = explainMissingLancedb(missing, 'Index lance:/data/idx') as DmlError;
      expect(explained).to.be.instanceOf(DmlError);
      expect(explained.code).to.equal('E_NOT_FOUND');
      expect(explained.message).to.equal('Index lance:/data/idx needs LanceDB, an optional peer dependency of dmlkit that is not installed: npm install @lancedb/lancedb@0.37.1 apache-arrow@18.1.0');
      const other = new Error('disk full');
      expect(explainMissingLancedb(other, 'x')).to.equal(other);
      expect(() => parseIndexLocation('lance:', '--out')).to.throw('Expected a folder after lance: for --out but received "lance:"');
      const range = 'a number of seconds in (0, 2147483.647] (the longest delay a Node timer holds)';
      await expectDmlError(LanceIndexStore.open(path.join(tmp, 'lance-index'), { refreshSeconds: 0 }), 'E_ARG', `Expected ${range} for refreshSeconds but received 0`);
      // Above 2^31 - 1 ms a Node timer fires after 1 ms: a refresh every millisecond.
      await expectDmlError(LanceIndexStore.open(path.join(tmp, 'lance-index'), { refreshSeconds: 2147484 }), 'E_ARG', `Expected ${range} for refreshSeconds but received 2147484`);
      await expectDmlError(openIndexStore(`lance:${fixture.dir}`), 'E_DATASET', /index\.json: expected a dmlkit\.lance-index\/1 file with a dim, ANN parameters and a table location/);
      await expectDmlError(buildLanceIndex(fixture, path.join(tmp, 'bad-ann'), { refineFactor: 0 }), 'E_ARG', 'Expected a positive integer for ann.refineFactor but received 0');
    });
  });
});
