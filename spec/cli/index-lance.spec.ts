/**
 * @file `dml index` and `dml serve` on the LanceDB store (`lance:<folder>`): build, info, add, remove
 * and optimize from the command line; kill -9 of a writer loses nothing it acknowledged; two
 * `dml serve` processes read one table while `dml index add` writes to it.
 *
 * Skipped with a note where `@lancedb/lancedb` is not installed, except in CI (CI=true), where .ci/run
 * installs it and a missing package fails the cases.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { LanceIndexStore } from '../../lib/index-store/lance-store.js';
import { exited, killAfterAcknowledged, startDml, startServer } from '../helpers/dml-process.js';
import { runCliCaptured } from '../helpers/run-cli.js';
import { writeExternalDataModel } from '../helpers/external-data-model.js';
import { readModelFiles } from '../../lib/onnx/model-files.js';
import { makeTempDir } from '../image/image-fixtures.js';
import { copyImages, MODEL } from '../serve/fixtures.js';
import { lancedbInstalled, requireLancedb } from '../helpers/lancedb.js';

describe('dml index and dml serve on lance:<folder>', function () {
  this.timeout(120_000);
  let dir: string;
  let images: string;

  before(async function () {
    requireLancedb(this, await lancedbInstalled());
  });
  beforeEach(() => {
    dir = makeTempDir('dml-index-lance-');
    images = copyImages(path.join(dir, 'images'), 3, 4);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const build = (out: string, ...extra: string[]): ReturnType<typeof runCliCaptured> =>
    runCliCaptured(['index', 'build', MODEL, `folder:${images}`, '--out', `lance:${out}`, '--no-cache', '--device', 'cpu', ...extra]);

  it("a model's external data file named like one of the index's own files stays apart from them (model/), and add keeps its weights", async () => {
    for (const [n, location] of ['lock', 'index.json', 'items.lance/_versions/1.manifest'].entries()) {
      const models = path.join(dir, 'models', String(n));
      mkdirSync(models, { recursive: true });
      const model = writeExternalDataModel(models, 5, 'model.onnx', location);
      const out = path.join(dir, `clash-${n}`);
      const built = await runCliCaptured(['index', 'build', model, `folder:${images}`, '--out', `lance:${out}`, '--no-cache', '--device', 'cpu']);
      expect(built.code, `${location}: ${built.stderr}`).to.equal(0);
      const added = await runCliCaptured(['index', 'add', `lance:${out}`, `folder:${images}`, '--skip-existing', '--device', 'cpu']);
      expect(added.code, `${location}: ${added.stderr}`).to.equal(0);
      const store = await LanceIndexStore.open(out);
      expect(store.modelPath, location).to.equal(path.join(out, 'model', 'model.onnx'));
      expect(readFileSync(path.join(out, 'model', location)), location).to.deep.equal(readFileSync(path.join(models, location)));
      expect((await readModelFiles(store.modelPath)).sha256, location).to.equal(store.metadata.model.sha256);
      expect(store.count, location).to.equal(12);
      await store.close();
    }
  });

  it('build writes a LanceDB folder with the ANN parameters; info, add, remove and optimize work on it', async () => {
    const out = path.join(dir, 'index');
    const built = await build(out, '--lance-min-rows', '10', '--lance-partitions', '1', '--lance-refine-factor', '8');
    expect(built).to.deep.equal({ code: 0, stdout: `Indexed 12 items (3 labels, 64-d, embedded on cpu) from folder:${images} into lance:${out}\n`, stderr: '' });
    expect(readdirSync(out).sort()).to.deep.equal(['index.json', 'items.lance', 'model']);
    const metadata = JSON.parse(readFileSync(path.join(out, 'index.json'), 'utf8')) as Record<string, unknown>;
    expect(metadata).to.deep.include({ format: 'dmlkit.lance-index/1', dim: 64 });
    expect(metadata['ann']).to.deep.equal({ minRows: 10, partitions: 1, m: 20, efConstruction: 300, ef: 64, nprobes: 20, refineFactor: 8 });

    const info = JSON.parse((await runCliCaptured(['index', 'info', `lance:${out}`])).stdout) as Record<string, unknown>;
    expect(info).to.deep.include({ kind: 'lance', items: 12, annIndex: 'IVF_HNSW_SQ', unindexedRows: 0 });

    const more = copyImages(path.join(dir, 'more'), 2, 3, 10);
    const added = await runCliCaptured(['index', 'add', `lance:${out}`, `folder:${more}`, '--batch-size', '2', '--device', 'cpu']);
    expect(added.code, added.stderr).to.equal(0);
    const ids = added.stdout.trim().split('\n').map((l) => l.replace(/^added /, ''));
    expect(ids).to.have.length(6);
    expect(added.stderr).to.equal(`Added 6 items (embedded on cpu); index lance:${out} holds 18\n`);
    const removed = await runCliCaptured(['index', 'remove', `lance:${out}`, ids[0] as string]);
    expect(removed).to.deep.equal({ code: 0, stdout: `removed ${ids[0]}\n`, stderr: '' });
    const unknown = await runCliCaptured(['index', 'remove', `lance:${out}`, 'nope']);
    expect(unknown).to.deep.equal({ code: 1, stdout: '', stderr: 'dml: No item with id "nope" in the index\n' });

    const optimized = await runCliCaptured(['index', 'optimize', `lance:${out}`]);
    expect(optimized.code, optimized.stderr).to.equal(0);
    expect(JSON.parse(optimized.stdout)).to.deep.include({ items: 17, indexBuilt: false, unindexedRows: 0 });
    const rebuilt = await runCliCaptured(['index', 'optimize', `lance:${out}`, '--rebuild-ann']);
    expect(rebuilt.code, rebuilt.stderr).to.equal(0);
    expect(JSON.parse(rebuilt.stdout)).to.deep.include({ items: 17, indexBuilt: true, unindexedRows: 0 });
    const hnsw = await runCliCaptured(['index', 'optimize', path.join(dir, 'elsewhere'), '--rebuild-ann']);
    expect(hnsw).to.deep.equal({
      code: 2,
      stdout: '',
      stderr: `dml: Expected a lance:<folder> index (an hnswlib index has no separate ANN index; build a new one to rebuild it) for --rebuild-ann but received "${path.join(dir, 'elsewhere')}"\n`,
    });
    const store = await LanceIndexStore.open(out);
    expect(store.count).to.equal(17);
    expect(await store.get(ids[0] as string)).to.equal(undefined);
    expect((await store.get(ids[1] as string))?.source).to.deep.equal({ kind: 'file', path: path.join(more, ids[1] as string) });
    await store.close();

    const bad = await runCliCaptured(['index', 'build', MODEL, `folder:${images}`, '--out', `lance:${path.join(dir, 'bad')}`, '--lance-nprobes', '0']);
    expect(bad).to.deep.equal({ code: 2, stdout: '', stderr: 'dml: Expected a positive integer for --lance-nprobes but received "0"\n' });
    expect(existsSync(path.join(dir, 'bad'))).to.equal(false);
  });

  it('crash test: kill -9 during `dml index add lance:` leaves a table holding every acknowledged item', async () => {
    const out = path.join(dir, 'index');
    expect((await build(out)).code).to.equal(0);
    let expected = 12;
    for (const [round, killAfter] of [[0, 3], [1, 25]] as const) {
      const base = expected;
      const more = copyImages(path.join(dir, `more-${round}`), 10, 6, 10 + round * 6);
      const acknowledged: string[] = [];
      const child = startDml(['index', 'add', `lance:${out}`, `folder:${more}`, '--batch-size', '2', '--device', 'cpu']);
      expect(await killAfterAcknowledged(child, killAfter, acknowledged), `round ${round}: the run was killed before it finished`).to.equal(null);
      const store = await LanceIndexStore.open(out);
      for (const id of acknowledged) expect((await store.get(id))?.source, `round ${round}: ${id}`).to.deep.equal({ kind: 'file', path: path.join(more, id) });
      expect(store.count).to.be.at.least(expected + acknowledged.length);
      expect(store.count).to.be.at.most(expected + acknowledged.length + 2);
      for (const id of acknowledged) expect((await store.search(await store.vector(id), { k: 1 }))[0]?.id).to.equal(id);
      expected = store.count;
      await store.close();
      // The killed writer's lock is taken over; re-running with --skip-existing finishes the add.
      const finished = await runCliCaptured(['index', 'add', `lance:${out}`, `folder:${more}`, '--skip-existing', '--device', 'cpu']);
      expect(finished.code, finished.stderr).to.equal(0);
      const whole = await LanceIndexStore.open(out);
      expect(whole.count).to.equal(base + 60);
      expected = whole.count;
      await whole.close();
    }
  });

  it('read replicas: two dml serve processes answer from one table while dml index add writes to it', async () => {
    const out = path.join(dir, 'index');
    expect((await build(out)).code).to.equal(0);
    const servers = [0, 1].map(() => startServer(`lance:${out}`, ['--refresh-seconds', '0.5']));
    try {
      const replicas = await Promise.all(servers.map(async (server) => ({ url: await server.url })));
      const more = copyImages(path.join(dir, 'more'), 2, 2, 20);
      const writer = startDml(['index', 'add', `lance:${out}`, `folder:${more}`, '--batch-size', '1', '--device', 'cpu']);
      // Every reader query during the writes succeeds.
      let writing = true;
      const writerDone = new Promise<number | null>((resolve) => writer.on('close', (code) => resolve(code)));
      void writerDone.then(() => (writing = false));
      let queries = 0;
      while (writing) {
        for (const { url } of replicas) {
          const res = await fetch(`${url}/items?limit=1`);
          expect(res.status).to.equal(200);
          queries++;
        }
      }
      expect(await writerDone).to.equal(0);
      expect(queries).to.be.above(0);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      for (const { url } of replicas) {
        const health = (await (await fetch(`${url}/healthz`)).json()) as { items: number };
        expect(health.items).to.equal(16);
        const id = `${readdirSync(more).sort()[0]}/${readdirSync(path.join(more, readdirSync(more).sort()[0] as string)).sort()[0]}`;
        const hits = (await (await fetch(`${url}/search?id=${encodeURIComponent(id)}&k=1`)).json()) as { neighbours: unknown[] };
        expect(hits.neighbours).to.have.length(1);
        const item = await fetch(`${url}/items/${encodeURIComponent(id)}/image`);
        expect(item.status).to.equal(200);
      }
    } finally {
      for (const { child } of servers) child.kill('SIGTERM');
      await Promise.all(servers.map(({ child }) => exited(child)));
    }
  });
});
