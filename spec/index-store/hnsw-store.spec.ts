import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { NewItem } from '../../lib/index-store/layout.js';
import { SearchIndexStore } from '../../lib/index-store/hnsw-store.js';
import { sha256 } from '../../lib/util/hash.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { makeTempDir } from '../image/image-fixtures.js';
import { bruteForce, buildFixtureIndex, MODEL, rowOf, type FixtureIndex } from '../serve/fixtures.js';

/** A unit vector of `dim` values along axis `axis`, nudged by `tilt` along the next axis. */
function axisVector(dim: number, axis: number, tilt = 0): Float32Array {
  const v = new Float32Array(dim);
  v[axis % dim] = 1;
  v[(axis + 1) % dim] = tilt;
  return v;
}

describe('index-store/SearchIndexStore (the hnswlib store)', function () {
  this.timeout(60_000);
  let tmp: string;
  let fixture: FixtureIndex;
  /** A fresh copy of the fixture index for tests that change it. */
  let dir: string;
  let copies = 0;

  before(async () => {
    tmp = makeTempDir('dml-index-store-');
    fixture = await buildFixtureIndex(tmp);
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));
  beforeEach(() => {
    dir = path.join(tmp, `copy-${copies++}`);
    spawnSync('cp', ['-r', fixture.dir, dir]);
  });

  it('records the model, preprocessing, HNSW parameters and every item with its source', async () => {
    const store = await SearchIndexStore.open(fixture.dir);
    expect(store.count).to.equal(24);
    expect(store.dim).to.equal(64);
    expect(store.generation).to.equal(1);
    const { metadata } = store;
    expect(metadata.model.sha256).to.equal(sha256(readFileSync(MODEL)));
    expect(sha256(readFileSync(store.modelPath))).to.equal(metadata.model.sha256);
    expect(metadata.model.outputName).to.equal('embedding');
    expect(metadata.preprocessing).to.deep.include({ height: 28, width: 28, channels: 1, layout: 'NCHW' });
    expect(metadata.hnsw).to.deep.equal({ space: 'cosine', m: 16, efConstruction: 200, ef: 64, seed: 0 });
    const item = store.get('bag/t10k-00018.png');
    expect(item).to.deep.equal({ id: 'bag/t10k-00018.png', label: 'bag', source: { kind: 'file', path: path.join(fixture.images, 'bag', 't10k-00018.png') } });
    expect(store.labelCounts()).to.deep.equal(['ankle_boot', 'bag', 'coat', 'dress'].map((label) => ({ label, count: 6 })));
    expect(store.list({ offset: 5, limit: 2 })).to.deep.equal({ total: 24, items: [store.get(fixture.set.ids[5] as string), store.get(fixture.set.ids[6] as string)] });
    expect(store.list({ label: 'coat' }).items.map((i) => i.label)).to.deep.equal(Array(6).fill('coat'));
    await store.close();
  });

  it('finds exactly the brute-force neighbours of every item, with and without a label filter', async () => {
    const store = await SearchIndexStore.open(fixture.dir);
    const { set } = fixture;
    for (let row = 0; row < set.count; row++) {
      const query = rowOf(set, row);
      const id = set.ids[row] as string;
      for (const options of [{}, { label: 'dress' }]) {
        const got = store.search(query, { k: 5, excludeId: id, ...options });
        const want = bruteForce(set, query, 5, { exclude: row, ...options });
        expect(got.map((h) => h.id), `${id} ${JSON.stringify(options)}`).to.deep.equal(want.map((h) => h.id));
        got.forEach((hit, j) => expect(hit.score).to.be.closeTo((want[j] as { score: number }).score, 1e-5));
      }
      expect(store.search(query, { k: 1 })[0]?.id).to.equal(id);
      // hnswlib's cosine space normalises again what is already normalised: equal up to rounding.
      store.vector(id).forEach((v, j) => expect(v).to.be.closeTo(query[j] as number, 1e-6));
    }
    expect(store.search(rowOf(set, 0), { k: 100 })).to.have.length(24);
    expect(store.search(rowOf(set, 0), { k: 3, label: 'no such label' })).to.deep.equal([]);
    await store.close();
  });

  it('persists additions and removals: reopened, the index holds exactly the new items', async () => {
    const store = await SearchIndexStore.open(dir, { writable: true });
    const [a, b] = fixture.set.ids as [string, string];
    const added: NewItem[] = [
      { id: 'new/one', label: 'axis', vector: axisVector(64, 0), image: new Uint8Array([1, 2, 3]) },
      { id: 'new/two', label: 'axis', vector: axisVector(64, 0, 0.1), image: { kind: 'file', path: '/elsewhere/two.png' } },
    ];
    await store.add(added);
    await store.remove([a, b]);
    expect(store.count).to.equal(24);
    expect(store.journalLines).to.equal(2);
    expect(store.search(axisVector(64, 0), { k: 2 }).map((h) => h.id)).to.deep.equal(['new/one', 'new/two']);
    await store.close();

    const again = await SearchIndexStore.open(dir);
    expect(again.generation).to.equal(2);
    expect(again.journalLines).to.equal(0);
    expect(readdirSync(dir).sort()).to.deep.equal(['gen-2', 'index.json', 'model', 'uploads']);
    expect(again.get(a)).to.equal(undefined);
    expect(again.get('new/two')?.source).to.deep.equal({ kind: 'file', path: '/elsewhere/two.png' });
    const upload = again.get('new/one')?.source;
    expect(upload).to.deep.equal({ kind: 'file', path: `uploads/${sha256(new Uint8Array([1, 2, 3]))}` });
    expect(again.resolveSource(again.get('new/one')!)).to.deep.equal({ kind: 'file', path: path.join(dir, 'uploads', sha256(new Uint8Array([1, 2, 3]))) });
    const hits = again.search(axisVector(64, 0), { k: 2 });
    expect(hits.map((h) => h.id)).to.deep.equal(['new/one', 'new/two']);
    expect(hits[0]?.score).to.be.closeTo(1, 1e-6);
    expect(hits[1]?.score).to.be.closeTo(1 / Math.sqrt(1.01), 1e-6);
    // The remaining fixture items still have their exact neighbours (the removed ones left out).
    const row = 5;
    const want = bruteForce(fixture.set, rowOf(fixture.set, row), 30, { exclude: row }).filter((h) => h.id !== a && h.id !== b).slice(0, 4);
    expect(again.search(rowOf(fixture.set, row), { k: 4, excludeId: fixture.set.ids[row] as string }).map((h) => h.id)).to.deep.equal(want.map((h) => h.id));
    await again.close();

    // Removing the uploaded item removes its stored bytes at the next snapshot.
    const third = await SearchIndexStore.open(dir, { writable: true });
    await third.remove(['new/one']);
    await third.close();
    expect(readdirSync(path.join(dir, 'uploads'))).to.deep.equal([]);
  });

  it('reuses the graph slots of removed items instead of growing the graph', async () => {
    const store = await SearchIndexStore.open(dir, { writable: true });
    const size = (): number => readFileSync(path.join(dir, `gen-${store.generation}`, 'hnsw.bin')).length;
    const before = size();
    for (let round = 0; round < 3; round++) {
      const ids = fixture.set.ids.slice(round * 4, round * 4 + 4);
      const removed = ids.map((id) => ({ id, vector: store.vector(id), label: store.get(id)!.label }));
      await store.remove(ids);
      await store.add(removed.map(({ id, vector, label }) => ({ id: `${id}#${round}`, label, vector, image: new Uint8Array([round]) })));
      await store.snapshot();
      expect(size()).to.equal(before);
    }
    expect(store.count).to.equal(24);
    await store.close();
  });

  it('replays the journal after a crash and ignores (then cuts off) a torn last line', async () => {
    const store = await SearchIndexStore.open(dir, { writable: true });
    await store.add([{ id: 'kept', label: 'axis', vector: axisVector(64, 3), image: { kind: 'file', path: '/x.png' } }]);
    // The process "dies" here: no close, so the journal is not folded in and the lock stays.
    const journal = path.join(dir, 'journal-1.jsonl');
    const complete = readFileSync(journal).length;
    appendFileSync(journal, '{"ops":[{"op":"add","id":"torn"');

    const reader = await SearchIndexStore.open(dir);
    expect(reader.get('kept')?.label).to.equal('axis');
    expect(reader.get('torn')).to.equal(undefined);
    expect(reader.search(axisVector(64, 3), { k: 1 })[0]?.id).to.equal('kept');

    await expectDmlError(SearchIndexStore.open(dir, { writable: true }), 'E_IO', new RegExp(`^Index .* is in use by process ${process.pid} on `));
    rmSync(path.join(dir, 'lock'));
    const writer = await SearchIndexStore.open(dir, { writable: true, snapshotEvery: 100 });
    await writer.add([{ id: 'after', label: 'axis', vector: axisVector(64, 4), image: { kind: 'file', path: '/y.png' } }]);
    const lines = readFileSync(journal, 'utf8').split('\n');
    expect(lines).to.have.length(3);
    expect(readFileSync(journal).subarray(0, complete).toString()).to.equal(lines[0] + '\n');
    expect(lines.slice(0, 2).map((l) => (JSON.parse(l) as { ops: Array<{ id: string }> }).ops[0]?.id)).to.deep.equal(['kept', 'after']);
    await writer.close();
    await reader.close();
  });

  it('takes over the lock of a process that is gone, and tidies leftovers of an interrupted snapshot', async () => {
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    writeFileSync(path.join(dir, 'lock'), JSON.stringify({ pid: Number(dead), host: (await import('node:os')).hostname() }));
    mkdirSync(path.join(dir, 'gen-2'));
    writeFileSync(path.join(dir, 'journal-2.jsonl'), 'garbage');
    mkdirSync(path.join(dir, '.gen-2.123.abcd.tmp'));
    const store = await SearchIndexStore.open(dir, { writable: true });
    expect(readdirSync(dir).sort()).to.deep.equal(['gen-1', 'index.json', 'lock', 'model']);
    expect(JSON.parse(readFileSync(path.join(dir, 'lock'), 'utf8'))).to.include({ pid: process.pid });
    expect(store.count).to.equal(24);
    await store.close();
    expect(existsSync(path.join(dir, 'lock'))).to.equal(false);
  });

  it('takes a snapshot by itself every snapshotEvery journal lines', async () => {
    const store = await SearchIndexStore.open(dir, { writable: true, snapshotEvery: 2 });
    for (let i = 0; i < 5; i++) await store.add([{ id: `s${i}`, label: 'axis', vector: axisVector(64, i), image: { kind: 'file', path: `/${i}.png` } }]);
    expect(store.generation).to.equal(3);
    expect(store.journalLines).to.equal(1);
    await store.close();
    const reader = await SearchIndexStore.open(dir);
    expect(reader.count).to.equal(29);
    await reader.close();
  });

  describe('bad input: a DmlError, and the index unchanged', () => {
    it('rejects folders without an index, a non-empty build target and read-only writes', async () => {
      await expectDmlError(SearchIndexStore.open(path.join(tmp, 'nothing')), 'E_NOT_FOUND', /^No search index at .*nothing \(index\.json is missing\)$/);
      await expectDmlError(
        SearchIndexStore.create(dir, { modelPath: MODEL, metadata: {} as never, set: fixture.set, sources: [], hnsw: { m: 16, efConstruction: 200, ef: 64, seed: 0 } }),
        'E_ARG',
        /^Expected 24 image sources \(one per embedding\) for sources but received array of length 0$/,
      );
      await expectDmlError(
        SearchIndexStore.create(dir, {
          modelPath: MODEL,
          metadata: {} as never,
          set: fixture.set,
          sources: fixture.set.ids.map(() => ({ kind: 'file', path: '/a.png' })),
          hnsw: { m: 16, efConstruction: 200, ef: 64, seed: 0 },
        }),
        'E_ARG',
        /^Expected a new or empty folder for dir but received ".*copy-\d+"$/,
      );
      const reader = await SearchIndexStore.open(dir);
      await expectDmlError(reader.remove(['bag/t10k-00018.png']), 'E_ARG', /^Index .* was opened read-only$/);
      await reader.close();
    });

    it('rejects duplicate and malformed items, unknown ids and bad queries', async () => {
      const store = await SearchIndexStore.open(dir, { writable: true });
      const item = (id: string, vector = axisVector(64, 0)): NewItem => ({ id, label: 'x', vector, image: { kind: 'file', path: '/a.png' } });
      await expectDmlError(store.add([item('bag/t10k-00018.png')]), 'E_ARG', 'Expected an id not already in the index for id but received "bag/t10k-00018.png"');
      await expectDmlError(store.add([item('a'), item('a')]), 'E_ARG', 'Expected an id not given twice for items[1].id but received "a"');
      await expectDmlError(store.add([item('a', new Float32Array(3))]), 'E_ARG', "Expected a Float32Array of 64 values (the index's dimension) for items[0].vector but received Float32Array of length 3");
      await expectDmlError(store.add([item('a', new Float32Array(64))]), 'E_ARG', 'Expected a vector with a non-zero norm for items[0].vector but received "all zeros"');
      await expectDmlError(store.add([item('a\nb')]), 'E_ARG', /^Expected a non-empty string of at most 512 characters without control characters for items\[0\]\.id/);
      await expectDmlError(store.remove(['bag/t10k-00018.png', 'nope']), 'E_NOT_FOUND', 'No item with id "nope" in the index');
      expect(() => store.search(new Float32Array(64).fill(Number.NaN), { k: 1 })).to.throw('Expected finite values for query but received NaN');
      expect(() => store.search(axisVector(64, 0), { k: 0 })).to.throw('Expected a positive integer for k but received 0');
      expect(store.count).to.equal(24);
      expect(store.journalLines).to.equal(0);
      await store.close();
      expect(readdirSync(dir).sort()).to.deep.equal(['gen-1', 'index.json', 'model']);
    });

    it('reports a corrupt journal line that is not the last one', async () => {
      writeFileSync(path.join(dir, 'journal-1.jsonl'), '{"ops":[{"op":"remove","id":"bag/t10k-00018.png"}]}\nnot json\n{"ops":[]}\n');
      await expectDmlError(SearchIndexStore.open(dir), 'E_DATASET', /journal-1\.jsonl line 2 is corrupt: /);
      writeFileSync(path.join(dir, 'journal-1.jsonl'), '{"ops":[{"op":"remove","id":"nope"}]}\n');
      await expectDmlError(SearchIndexStore.open(dir), 'E_DATASET', /journal-1\.jsonl line 1, change 1: cannot remove item "nope"$/);
    });
  });
});
