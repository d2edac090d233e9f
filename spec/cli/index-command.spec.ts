import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { SearchIndexStore } from '../../lib/index-store/hnsw-store.js';
import { sha256 } from '../../lib/util/hash.js';
import { runCliCaptured } from '../helpers/run-cli.js';
import { writeTwoOutputModel } from '../helpers/special-files.js';
import { writeExternalDataModel } from '../helpers/external-data-model.js';
import { readModelFiles } from '../../lib/onnx/model-files.js';
import { createSearchApp } from '../../lib/serve/app.js';
import { makeTempDir } from '../image/image-fixtures.js';
import { copyImages, MODEL } from '../serve/fixtures.js';
import { killAfterAcknowledged } from '../helpers/dml-process.js';

describe('dml index', function () {
  this.timeout(60_000);
  let dir: string;
  let images: string;
  beforeEach(() => {
    dir = makeTempDir('dml-index-cli-');
    images = copyImages(path.join(dir, 'images'), 3, 4);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const build = (out: string, ...extra: string[]): ReturnType<typeof runCliCaptured> =>
    runCliCaptured(['index', 'build', MODEL, `folder:${images}`, '--out', out, '--cache-dir', path.join(dir, 'cache'), ...extra]);

  it('build embeds a dataset (through the cache) into an index folder that records model, preprocessing and HNSW parameters', async () => {
    const out = path.join(dir, 'index');
    const first = await build(out, '--hnsw-m', '8', '--hnsw-ef', '32', '--seed', '7');
    expect(first).to.deep.equal({ code: 0, stdout: `Indexed 12 items (3 labels, 64-d, embedded on cpu) from folder:${images} into ${out}\n`, stderr: '' });
    const metadata = JSON.parse(readFileSync(path.join(out, 'index.json'), 'utf8')) as Record<string, unknown>;
    expect(metadata).to.deep.include({ format: 'dmlkit.search-index/1', dim: 64, generation: 1 });
    expect(metadata['hnsw']).to.deep.equal({ space: 'cosine', m: 8, efConstruction: 200, ef: 32, seed: 7 });
    expect(metadata['model']).to.deep.equal({ sha256: sha256(readFileSync(MODEL)), source: MODEL, outputName: 'embedding' });
    expect(metadata['preprocessing']).to.deep.equal({ height: 28, width: 28, resizeShorter: 28, channels: 1, layout: 'NCHW', mean: [0], std: [1] });
    expect(readdirSync(out).sort()).to.deep.equal(['gen-1', 'index.json', 'model']);
    expect(readdirSync(path.join(dir, 'cache'))).to.have.length(2);

    const second = await build(path.join(dir, 'again'));
    expect(second.stdout).to.equal(`Indexed 12 items (3 labels, 64-d, embeddings from the cache) from folder:${images} into ${path.join(dir, 'again')}\n`);

    const info = await runCliCaptured(['index', 'info', out]);
    expect(info.code).to.equal(0);
    const parsed = JSON.parse(info.stdout) as { items: number; labels: unknown[]; generation: number; journalLines: number };
    expect(parsed).to.deep.include({ items: 12, generation: 1, journalLines: 0 });
    expect(parsed.labels).to.have.length(3);
  });

  it('build copies a model\'s external data files into the index, and the index folder serves alone', async () => {
    const models = path.join(dir, 'models');
    mkdirSync(models);
    const model = writeExternalDataModel(models, 5);
    const out = path.join(dir, 'external');
    const built = await runCliCaptured(['index', 'build', model, `folder:${images}`, '--out', out]);
    expect(built.code, built.stderr).to.equal(0);
    expect(readdirSync(out).sort()).to.deep.equal(['gen-1', 'index.json', 'model']);
    expect(readdirSync(path.join(out, 'model')).sort()).to.deep.equal(['model.onnx', 'model.onnx_data']);
    expect(readFileSync(path.join(out, 'model', 'model.onnx_data'))).to.deep.equal(readFileSync(path.join(models, 'model.onnx_data')));
    const metadata = JSON.parse(readFileSync(path.join(out, 'index.json'), 'utf8')) as { model: { sha256: string } };
    expect(metadata.model.sha256).to.equal((await readModelFiles(model)).sha256);
    rmSync(models, { recursive: true });
    const app = await createSearchApp({ dir: out, device: 'cpu', maxUploadBytes: 1 << 20, maxK: 10, allowWrites: false });
    try {
      const id = readdirSync(images).sort()[0] as string;
      const file = readdirSync(path.join(images, id)).sort()[0] as string;
      const res = await app.inject({ method: 'POST', url: '/search?k=1', headers: { 'content-type': 'image/png' }, payload: readFileSync(path.join(images, id, file)) });
      expect(res.statusCode, res.body).to.equal(200);
      expect((JSON.parse(res.body) as { neighbours: Array<{ id: string }> }).neighbours[0]?.id).to.equal(`${id}/${file}`);
    } finally {
      await app.close();
    }
  });

  it("a model's external data file named like one of the index's own files stays apart from them: build, add and serve keep its weights", async () => {
    const models = path.join(dir, 'models');
    for (const [n, location] of ['lock', 'index.json', 'journal-1.jsonl', 'gen-1/items.json', 'gen-1/hnsw.bin', 'uploads/x', '.x.tmp'].entries()) {
      mkdirSync(path.join(models, String(n)), { recursive: true });
      const model = writeExternalDataModel(path.join(models, String(n)), 5, 'model.onnx', location);
      const weights = readFileSync(path.join(models, String(n), location));
      const out = path.join(dir, `clash-${n}`);
      const built = await runCliCaptured(['index', 'build', model, `folder:${images}`, '--out', out, '--no-cache']);
      expect(built.code, `${location}: ${built.stderr}`).to.equal(0);
      // A writable open (dml index add, dml serve --allow-writes) takes the lock and folds the journal.
      const added = await runCliCaptured(['index', 'add', out, `folder:${images}`, '--skip-existing']);
      expect(added.code, `${location}: ${added.stderr}`).to.equal(0);
      const store = await SearchIndexStore.open(out);
      expect(store.modelPath, location).to.equal(path.join(out, 'model', 'model.onnx'));
      expect(readFileSync(path.join(out, 'model', location)), location).to.deep.equal(weights);
      expect((await readModelFiles(store.modelPath)).sha256, location).to.equal(store.metadata.model.sha256);
      expect(store.count, location).to.equal(12);
      await store.close();
    }
  });

  it('an index written before the model folder (model.onnx at the top) still opens and serves; one whose model data met an index file is refused, naming it', async () => {
    const out = path.join(dir, 'legacy');
    expect((await build(out)).code).to.equal(0);
    renameSync(path.join(out, 'model', 'model.onnx'), path.join(out, 'model.onnx'));
    rmSync(path.join(out, 'model'), { recursive: true });
    const store = await SearchIndexStore.open(out, { writable: true });
    expect(store.modelPath).to.equal(path.join(out, 'model.onnx'));
    await store.close();
    const app = await createSearchApp({ dir: out, device: 'cpu' });
    try {
      const id = readdirSync(images).sort()[0] as string;
      const file = readdirSync(path.join(images, id)).sort()[0] as string;
      const res = await app.inject({ method: 'POST', url: '/search?k=1', headers: { 'content-type': 'image/png' }, payload: readFileSync(path.join(images, id, file)) });
      expect(res.statusCode, res.body).to.equal(200);
    } finally {
      await app.close();
    }

    // The old layout with a data file named lock: its weights sat where the lock goes.
    writeExternalDataModel(out, 5, 'model.onnx', 'lock');
    const weights = readFileSync(path.join(out, 'lock'));
    const refused = await runCliCaptured(['index', 'add', out, `folder:${images}`, '--skip-existing']);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.equal(
      `dml: Index ${out} was written by an older dmlkit that kept the model's external data file "lock" beside the index's own files, where it met one of them; build the index again (dml index build now keeps the model in model/)\n`,
    );
    expect(readFileSync(path.join(out, 'lock'))).to.deep.equal(weights);
  });

  it('build takes the preprocessing overrides of dml eval, records them, and add embeds with them', async () => {
    const out = path.join(dir, 'normalised');
    expect((await build(out, '--mean', '0.5', '--std', '0.25')).code).to.equal(0);
    const metadata = JSON.parse(readFileSync(path.join(out, 'index.json'), 'utf8')) as Record<string, unknown>;
    expect(metadata['preprocessing']).to.deep.equal({ height: 28, width: 28, resizeShorter: 28, channels: 1, layout: 'NCHW', mean: [0.5], std: [0.25] });
    // the same images indexed with the default preprocessing give other vectors
    const plain = path.join(dir, 'plain');
    expect((await build(plain)).code).to.equal(0);
    const [a, b] = [await SearchIndexStore.open(out), await SearchIndexStore.open(plain)];
    const id = (a.list({ limit: 1 }).items[0] as { id: string }).id;
    expect(Array.from(a.vector(id))).not.to.deep.equal(Array.from(b.vector(id)));
    await Promise.all([a.close(), b.close()]);
    const more = copyImages(path.join(dir, 'more'), 1, 2, 20);
    const added = await runCliCaptured(['index', 'add', out, `folder:${more}`]);
    expect(added.code, added.stderr).to.equal(0);
    const bad = await runCliCaptured(['index', 'build', MODEL, `folder:${images}`, '--out', path.join(dir, 'bad'), '--layout', 'CHWN']);
    expect(bad).to.deep.include({ code: 2, stdout: '' });
    expect(bad.stderr).to.match(/^dml: Expected one of .*NCHW.*NHWC.* for --layout but received "CHWN"\n$/);
    expect(existsSync(path.join(dir, 'bad'))).to.equal(false);
  });

  it('build and add with --workers 2 (decode processes) store the same vectors as with --workers 0', async () => {
    const more = copyImages(path.join(dir, 'more'), 2, 3, 10);
    const stores: SearchIndexStore[] = [];
    for (const workers of ['2', '0']) {
      const out = path.join(dir, `index-${workers}`);
      expect((await build(out, '--no-cache', '--workers', workers)).code).to.equal(0);
      const added = await runCliCaptured(['index', 'add', out, `folder:${more}`, '--batch-size', '2', '--workers', workers]);
      expect(added.code, added.stderr).to.equal(0);
      expect(added.stdout.trim().split('\n')).to.have.length(6);
      stores.push(await SearchIndexStore.open(out));
    }
    const [pooled, local] = stores as [SearchIndexStore, SearchIndexStore];
    expect(pooled.count).to.equal(18);
    for (const { id } of local.list({ limit: 18 }).items) expect(Array.from(pooled.vector(id)), id).to.deep.equal(Array.from(local.vector(id)));
    await Promise.all(stores.map((store) => store.close()));
  });

  it('build warns which output it uses when the model has several and no --output-name is given; --workers above 2 per core is capped with a warning', async () => {
    const model = path.join(dir, 'two-outputs.onnx');
    writeTwoOutputModel(model);
    const many = 3 * availableParallelism();
    // The preprocessing is given in full, so no default-preprocessing warning joins the two.
    const res = await runCliCaptured(['index', 'build', model, `folder:${images}`, '--out', path.join(dir, 'two'), '--no-cache', '--device', 'cpu', '--workers', String(many), '--resize', '28', '--mean', '0', '--std', '1']);
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stderr.split('\n').filter((l) => l.startsWith('warning: '))).to.deep.equal([
      `warning: --workers ${many} is more than 2 per core on this machine's ${availableParallelism()} cores: using ${2 * availableParallelism()}`,
      `warning: ${model} has 2 outputs (features, doubled); using the first, "features", as the embedding; pass --output-name <name> (option outputName) to use another`,
    ]);
  });

  it('add and remove change the index, print one line per item, and leave it unchanged when they fail', async () => {
    const out = path.join(dir, 'index');
    expect((await build(out, '--no-cache')).code).to.equal(0);
    expect(existsSync(path.join(dir, 'cache'))).to.equal(false);
    const more = copyImages(path.join(dir, 'more'), 2, 3, 10);
    const added = await runCliCaptured(['index', 'add', out, `folder:${more}`, '--batch-size', '2']);
    expect(added.code, added.stderr).to.equal(0);
    const ids = added.stdout.trim().split('\n').map((l) => l.replace(/^added /, ''));
    expect(ids).to.have.length(6);
    expect(added.stderr).to.equal(`Added 6 items (embedded on cpu); index ${out} holds 18\n`);

    const again = await runCliCaptured(['index', 'add', out, `folder:${more}`]);
    expect(again.code).to.equal(2);
    expect(again.stderr).to.match(/^dml: 6 item ids are already in index .*: "ankle_boot\/t10k-\d+\.png", .*, \.\.\. \(expected new ids; --skip-existing leaves them out\)\n$/);

    const removed = await runCliCaptured(['index', 'remove', out, ids[0] as string, ids[1] as string]);
    expect(removed).to.deep.equal({ code: 0, stdout: `removed ${ids[0]}\nremoved ${ids[1]}\n`, stderr: '' });
    const unknown = await runCliCaptured(['index', 'remove', out, ids[2] as string, 'nope']);
    expect(unknown).to.deep.equal({ code: 1, stdout: '', stderr: 'dml: No item with id "nope" in the index\n' });

    const store = await SearchIndexStore.open(out);
    expect(store.count).to.equal(16);
    expect(store.get(ids[0] as string)).to.equal(undefined);
    expect(store.get(ids[2] as string)?.source).to.deep.equal({ kind: 'file', path: path.join(more, ids[2] as string) });
    // build = 1, the add's final snapshot = 2, the remove's = 3; the failed commands wrote nothing.
    expect(store.generation).to.equal(3);
    await store.close();
    expect(readdirSync(out).sort()).to.deep.equal(['gen-3', 'index.json', 'model']);
  });

  it('fails with one line, the right exit code and nothing written on bad input', async () => {
    const out = path.join(dir, 'taken');
    mkdirSync(out);
    writeFileSync(path.join(out, 'x'), '');
    const cases: Array<[string[], number, RegExp]> = [
      [['index', 'build', MODEL, `folder:${images}`, '--out', out], 2, /^dml: Expected a new or empty folder for --out but received ".*taken"\n$/],
      [['index', 'build', MODEL, `folder:${images}`, '--out', path.join(dir, 'o1'), '--hnsw-m', 'x'], 2, /^dml: Expected a positive integer for --hnsw-m but received "x"\n$/],
      [['index', 'build', MODEL, `folder:${images}`, '--out', path.join(dir, 'o1'), '--workers', '-1'], 2, /^dml: Expected a non-negative integer for --workers but received "-1"\n$/],
      [['index', 'add', path.join(dir, 'o4'), `folder:${images}`, '--workers', '1.5'], 2, /^dml: Expected a non-negative integer for --workers but received "1.5"\n$/],
      [['index', 'build', path.join(dir, 'none.onnx'), `folder:${images}`, '--out', path.join(dir, 'o2'), '--no-cache'], 1, /^dml: Cannot read model .*none\.onnx: no such file\n$/],
      [['index', 'build', MODEL, path.join(dir, 'nothing'), '--out', path.join(dir, 'o3')], 1, /^dml: Dataset path .*nothing does not exist/],
      [['index', 'add', path.join(dir, 'o4'), `folder:${images}`], 1, /^dml: No search index at .*o4 \(index\.json is missing\)\n$/],
      [['index', 'remove', path.join(dir, 'o5'), 'a'], 1, /^dml: No search index at .*o5/],
      // A model path that is a device (it used to be read until memory ran out), absurd parallelism, a batch that cannot be held.
      [['index', 'build', '/dev/zero', `folder:${images}`, '--out', path.join(dir, 'o6'), '--no-cache'], 2, /^dml: Cannot read model \/dev\/zero: a character device, not a regular file\n$/],
      [['index', 'build', MODEL, `folder:${images}`, '--out', path.join(dir, 'o7'), '--workers', '100000'], 2, new RegExp(`^dml: Expected an integer in \\[0, ${16 * availableParallelism()}\\] \\(at most 16 per core; this machine has ${availableParallelism()}\\) for --workers but received "100000"\n$`)],
      [['index', 'build', MODEL, `folder:${images}`, '--out', path.join(dir, 'o8'), '--threads', '100000'], 2, /^dml: Expected an integer in \[1, \d+\] \(at most 16 per core; this machine has \d+\) for --threads but received "100000"\n$/],
      [['index', 'build', MODEL, `folder:${images}`, '--out', path.join(dir, 'o9'), '--batch-size', '1000000000', '--no-cache'], 2, /^dml: Expected a batch whose float32 input fits in memory: at most \d+ images of 28x28x1 \(\d+ MiB, a quarter of this machine's memory or 4 GiB\) for batchSize but received "1000000000 \(\d+ MiB\)"\n$/],
    ];
    for (const [argv, code, stderr] of cases) {
      const res = await runCliCaptured(argv);
      expect(res.code, res.stderr).to.equal(code);
      expect(res.stderr).to.match(stderr);
      expect(res.stdout).to.equal('');
    }
    expect(readdirSync(dir).sort()).to.deep.equal(['images', 'taken']);
  });

  it('crash test: kill -9 during `dml index add` leaves a loadable index holding every acknowledged item', async function () {
    this.timeout(120_000);
    const out = path.join(dir, 'index');
    expect((await build(out, '--no-cache')).code).to.equal(0);
    let expected = 12;
    // Three runs killed at different points; --snapshot-every 3 makes snapshots (folder renames) frequent.
    for (const [round, killAfter] of [[0, 3], [1, 25], [2, 60]] as const) {
      const base = expected;
      const more = copyImages(path.join(dir, `more-${round}`), 10, 8, 10 + round * 8);
      const child = spawn(process.execPath, ['--import', 'tsx', 'bin/dml.ts', 'index', 'add', out, `folder:${more}`, '--batch-size', '2', '--snapshot-every', '3', '--device', 'cpu']);
      const acknowledged: string[] = [];
      const code = await killAfterAcknowledged(child, killAfter, acknowledged);
      expect(code, `round ${round}: the run was killed before it finished`).to.equal(null);
      const store = await SearchIndexStore.open(out);
      for (const id of acknowledged) expect(store.get(id)?.source, `round ${round}: ${id}`).to.deep.equal({ kind: 'file', path: path.join(more, id) });
      expect(store.count).to.be.at.least(expected + acknowledged.length);
      // Items added beyond the acknowledged ones were committed but not yet printed: at most one batch.
      expect(store.count).to.be.at.most(expected + acknowledged.length + 2);
      for (const id of acknowledged) expect(store.search(store.vector(id), { k: 1 })[0]?.id).to.equal(id);
      expected = store.count;
      await store.close();
      // The lock of the killed process is taken over by the next writer.
      const writer = await SearchIndexStore.open(out, { writable: true });
      await writer.close();
      // Re-running the interrupted add with --skip-existing finishes it: every item once.
      const finished = await runCliCaptured(['index', 'add', out, `folder:${more}`, '--batch-size', '4', '--skip-existing', '--device', 'cpu']);
      expect(finished.code, finished.stderr).to.equal(0);
      expect(finished.stderr).to.match(/^warning: skipped \d+ items? already in index /);
      const whole = await SearchIndexStore.open(out);
      const folderIds = readdirSync(more, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.relative(more, path.join(e.parentPath, e.name)));
      expect(folderIds).to.have.length(80);
      for (const id of folderIds) expect(whole.get(id)?.source, `round ${round}: ${id} after --skip-existing`).to.deep.equal({ kind: 'file', path: path.join(more, id) });
      expect(whole.count).to.equal(base + 80);
      expected = whole.count;
      await whole.close();
    }
  });
});
