import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import sharp from 'sharp';
import { writeNpy } from '../../lib/embed/npy.js';
import { loadEmbeddingSet } from '../../lib/embed/embedding-files.js';
import { savedEmbeddingsPrefix } from '../../lib/cli/eval-run.js';
import { escapeMarkdownMarkup } from '../../lib/report/markdown.js';
import { evaluateEmbeddings } from '../../lib/eval/evaluate-embeddings.js';
import type { Report, SingleRunReport } from '../../lib/report/report.js';
import { expectValidReport } from '../helpers/report-schema.js';
import { beforeSummary, runCliCaptured } from '../helpers/run-cli.js';
import { fifoWithReader, writeTwoOutputModel } from '../helpers/special-files.js';
import { writeExternalDataModel } from '../helpers/external-data-model.js';
import { encodeModel, node, tensorValueInfo } from '../../lib/onnx/builder.js';
import { npyBytes } from '../helpers/npy-bytes.js';

const MODEL = path.resolve('models/default.onnx');


describe('dml eval', function () {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-eval-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A small ImageFolder: `perClass` images of each of the first `classes` default classes. */
  function smallFolder(classes = 4, perClass = 6): string {
    const root = path.join(dir, 'images');
    for (const cls of readdirSync('data/default').sort().slice(0, classes)) {
      mkdirSync(path.join(root, cls), { recursive: true });
      for (const f of readdirSync(path.join('data/default', cls)).sort().slice(0, perClass)) {
        copyFileSync(path.join('data/default', cls, f), path.join(root, cls, f));
      }
    }
    return root;
  }

  it('evaluates the default model on the default data: table on stdout, report.json/md/html, then a cache hit', async () => {
    const out = path.join(dir, 'run');
    const args = ['eval', MODEL, '--data', 'folder:data/default', '--out', out, '--cluster-counts', '1x,5x'];
    const first = await runCliCaptured(args);
    expect(beforeSummary(first.stderr)).to.equal('');
    // The summary names the stages' times and every file written.
    expect(first.stderr).to.match(new RegExp(`(^|\\n)dml eval: done in \\d+\\.\\ds \\(embed \\d+\\.\\ds, search \\d+\\.\\ds, k-means \\d+\\.\\ds\\); wrote ${out}/report\\.json, ${out}/report\\.md, ${out}/report\\.html\\n$`));
    expect(first.code).to.equal(0);
    expect(first.stdout).to.match(/^\| model \| R@1 \| R@2 \| R@4 \| R@8 \|/);
    // --device auto (the default) names the provider it got and why the ones before it failed; on a
    // machine without any GPU device node only that (the probes' reasons stay in report.json).
    expect(first.stdout).to.match(/\nExecution provider: default\.onnx runs on cpu \((no GPU on this machine|cuda: [^;\n]+; webgpu: [^\n]+)\)\.\n/);
    const report = JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')) as SingleRunReport;
    expectValidReport(report);
    expect(Object.keys(report.metrics.recall)).to.deep.equal(['1', '2', '4', '8']);
    const recall = Object.values(report.metrics.recall);
    for (const v of recall) expect(v).to.be.within(0, 1);
    expect(recall).to.deep.equal([...recall].sort((a, b) => a - b)); // Recall@K never decreases with K
    // PCA on pixels separates Fashion-MNIST classes far above chance (0.1).
    expect(report.metrics.precisionAt1).to.equal(report.metrics.recall['1']);
    expect(report.metrics.recall['1']).to.be.above(0.6);
    expect(report.metrics.mapAtR).to.be.within(0.2, 1);
    expect(report.metrics.nmiCurve.map((p) => p.clusters)).to.deep.equal([10, 50]);
    expect(report.metrics.nmi).to.equal(report.metrics.nmiCurve[0]!.nmi);
    expect(report.metrics.loneQueries).to.equal(0);
    expect(report.dataset).to.deep.include({ queryCount: 600, galleryCount: 600, sameSet: true });
    expect(report.model?.executionProvider).to.equal('cpu');
    expect(report.parameters.kmeans).to.deep.equal({ init: 'k-means++', roundFraction: 0.25, maxIterations: 100, tolerance: 1e-4, restarts: 1, seed: 0 });
    expect(report.definitions.recall).to.contain('hit@K');
    expect(report.versions['onnxruntime-node']).to.equal('1.30.0');
    expect(report.runs).to.have.length(1);
    expect(readFileSync(path.join(out, 'report.html'), 'utf8')).to.contain('<svg');
    const markdown = readFileSync(path.join(out, 'report.md'), 'utf8');
    // report.md starts with the table printed on stdout, its markup characters escaped (the provider note may hold some).
    const table = escapeMarkdownMarkup(first.stdout);
    expect(markdown.startsWith(table)).to.equal(true);
    // Then the AccuracyCalculator table, and each run's worst classes (Fashion-MNIST's shirt is the hardest for the PCA embedder).
    expect(markdown.slice(table.length)).to.match(
      /^\nPyTorch Metric Learning's AccuracyCalculator metrics [^\n]*:\n\n\| model \| precision_at_1 \| r_precision \| mean_average_precision_at_r \| mean_average_precision \| mean_reciprocal_rank \| NMI \| AMI \| MAP@1 \| MAP@2 \| MAP@4 \| MAP@8 \|\n[^\n]*\n\| default\.onnx \|[^\n]*\n\nWorst classes of default\.onnx \(10 of 10; values in %\):\n\n\| class \| queries \| R@1 \| R-Prec \| MAP@R \|\n\| --- \|[^\n]*\n\| shirt \| 60 \|/,
    );
    // No lone queries here, so PML's precision_at_1 is Recall@1; a query's RR is 1 when its first neighbour hits, so
    // MRR >= Recall@1; AMI <= NMI since the expected mutual information is >= 0 and I <= (H(Y) + H(C))/2.
    expect(report.metrics.accuracyCalculator.precision_at_1).to.equal(report.metrics.recall['1']);
    expect(report.metrics.mrr).to.be.within(report.metrics.recall['1']!, 1);
    expect(report.metrics.map).to.be.within(0.2, 1);
    expect(report.metrics.ami).to.be.within(0.2, report.metrics.nmi);
    expect(report.metrics.perClass).to.have.length(10);
    expect(report.metrics.perClass.reduce((n, c) => n + c.queryCount, 0)).to.equal(600);
    expect(report.dataset.embeddingCache?.hit).to.equal(false);

    const second = await runCliCaptured(args);
    expect(second.code).to.equal(0);
    const again = JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')) as SingleRunReport;
    expect(again.dataset.embeddingCache?.hit).to.equal(true);
    expect(again.metrics.recall).to.deep.equal(report.metrics.recall);
    expect(again.metrics.nmiCurve).to.deep.equal(report.metrics.nmiCurve);
  });

  it('puts several models side by side and reports HNSW recall against exact search', async () => {
    const json = path.join(dir, 'r.json');
    const other = path.join(dir, 'copy.onnx');
    copyFileSync(MODEL, other);
    const res = await runCliCaptured(['eval', MODEL, other, '--data', smallFolder(), '--index', 'hnsw', '--json', json, '--cluster-counts', '1x', '--k', '1,4']);
    expect(beforeSummary(res.stderr)).to.equal('');
    expect(res.code).to.equal(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as Report;
    expectValidReport(report);
    expect(report.runs.map((r) => r.name)).to.deep.equal(['default.onnx', 'copy.onnx']);
    // Side by side in runs only: no run's fields at the top.
    expect(report).not.to.have.any.keys('name', 'metrics', 'model', 'dataset', 'parameters');
    expect(report.runs[1]!.metrics.recall).to.deep.equal(report.runs[0]!.metrics.recall);
    expect(report.runs[1]!.examples).to.deep.equal(report.runs[0]!.examples);
    expect(report.runs[0]!.metrics.annRecall?.['4']).to.be.within(0.9, 1);
    expect(report.runs[0]!.parameters.index).to.deep.include({ kind: 'hnsw', m: 16, efConstruction: 200 });
    expect(res.stdout.split('\n').filter((l) => l.startsWith('| default.onnx') || l.startsWith('| copy.onnx'))).to.have.length(2);
    expect(res.stdout).to.contain('ANN R@4');
  });

  it('--examples n keeps n random queries (the same for every model) and n worst; --save-neighbours writes every top K as CSV', async () => {
    const json = path.join(dir, 'r.json');
    const csv = path.join(dir, 'nn', 'neighbours.csv');
    const other = path.join(dir, 'copy.onnx');
    copyFileSync(MODEL, other);
    const res = await runCliCaptured(['eval', MODEL, other, '--data', smallFolder(), '--json', json, '--cluster-counts', '1x', '--k', '1,3', '--examples', '2', '--save-neighbours', csv, '--device', 'cpu']);
    expect(beforeSummary(res.stderr)).to.equal('');
    expect(res.code).to.equal(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as Report;
    expectValidReport(report);
    const [first, second] = report.runs;
    expect(first!.examples.map((e) => e.selection)).to.deep.equal(['random', 'random', 'worst', 'worst']);
    const randomIds = (run: typeof first): string[] => run!.examples.filter((e) => e.selection === 'random').map((e) => e.query.id);
    expect(randomIds(second)).to.deep.equal(randomIds(first));
    const worst = first!.examples.filter((e) => e.selection === 'worst');
    expect(worst[0]!.averagePrecision).to.be.at.most(worst[1]!.averagePrecision);
    // 2 models x 24 queries x K = 3 rows, after the header.
    const lines = readFileSync(csv, 'utf8').trimEnd().split('\n');
    expect(lines[0]).to.equal('model,query_id,query_label,rank,neighbour_id,neighbour_label,similarity,correct');
    expect(lines).to.have.length(1 + 2 * 24 * 3);
    expect(lines.filter((l) => l.startsWith('copy.onnx,'))).to.have.length(24 * 3);
    // The CSV holds exactly the neighbours the report's examples show.
    const example = first!.examples[0]!;
    const rows = lines.filter((l) => l.startsWith(`default.onnx,${example.query.id},`));
    expect(rows).to.deep.equal(
      example.neighbours.slice(0, 3).map((n, i) => `default.onnx,${example.query.id},${example.query.label},${i + 1},${n.id},${n.label},${n.similarity.toFixed(6)},${n.correct ? 1 : 0}`),
    );
    const bad = await runCliCaptured(['eval', MODEL, '--data', smallFolder(), '--save-neighbours', path.join(dir, 'n.txt')]);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.contain('--save-neighbours');
    expect(bad.stderr).to.contain('a file name ending in .csv');
  });

  it('a model with external data: changing only model.onnx_data misses the cache and changes the reported hash', async () => {
    const models = path.join(dir, 'ext');
    mkdirSync(models);
    const model = writeExternalDataModel(models, 1);
    const images = smallFolder(2, 3);
    const run = async (): Promise<SingleRunReport> => {
      const json = path.join(dir, 'ext.json');
      const res = await runCliCaptured(['eval', model, '--data', `folder:${images}`, '--json', json, '--cluster-counts', '1x', '--k', '1', '--cache-dir', path.join(dir, 'cache'), '--device', 'cpu', '--workers', '0']);
      expect(res.code, res.stderr).to.equal(0);
      return JSON.parse(readFileSync(json, 'utf8')) as SingleRunReport;
    };
    const first = await run();
    const second = await run();
    expect([first.dataset.embeddingCache?.hit, second.dataset.embeddingCache?.hit]).to.deep.equal([false, true]);
    writeExternalDataModel(models, 2);
    const third = await run();
    expect(third.dataset.embeddingCache?.hit).to.equal(false);
    expect(third.dataset.embeddingCache?.key).not.to.equal(first.dataset.embeddingCache?.key);
    expect(third.model?.sha256).not.to.equal(first.model?.sha256);
    expect(third.model?.externalData?.[0]?.location).to.equal('model.onnx_data');
    expect(third.metrics.recall['1']).not.to.equal(undefined);
  });

  it('--save-embeddings writes <file>.npy and <file>.json that reproduce the report\'s metrics', async () => {
    const json = path.join(dir, 'r.json');
    const file = path.join(dir, 'saved', 'emb.npy');
    const res = await runCliCaptured(['eval', MODEL, '--data', `folder:${smallFolder()}`, '--json', json, '--cluster-counts', '1x', '--k', '1,4', '--save-embeddings', file, '--device', 'cpu']);
    expect(beforeSummary(res.stderr)).to.equal('');
    expect(res.code).to.equal(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as SingleRunReport;
    const { set, provenance } = await loadEmbeddingSet(path.join(dir, 'saved', 'emb'));
    expect([set.count, set.dim]).to.deep.equal([24, 64]);
    expect(new Set(set.labels).size).to.equal(4);
    set.ids.forEach((id, r) => expect(id).to.match(new RegExp(`^${set.labels[r]}/t10k-\\d{5}\\.png$`)));
    expect(provenance).to.deep.include({ modelSha256: report.model!.sha256, datasetSpec: `folder:${path.join(dir, 'images')}`, executionProvider: 'cpu' });
    expect(provenance['roles']).to.deep.equal(Array(24).fill('query+gallery'));
    for (let r = 0; r < set.count; r++) {
      const row = set.vectors.subarray(r * set.dim, (r + 1) * set.dim);
      expect(Math.hypot(...row)).to.be.closeTo(1, 1e-5);
    }
    const again = await evaluateEmbeddings(set, null, { ks: [1, 4], clusterCounts: ['1x'], clusterSet: 'union', index: { kind: 'exact', chunkSize: 512 }, kmeans: { seed: 0 } });
    expect(again.metrics.recall).to.deep.equal(report.metrics.recall);
    expect(again.metrics.mapAtR).to.equal(report.metrics.mapAtR);
    expect(again.metrics.nmi).to.equal(report.metrics.nmi);
  });

  it('--normalization device gives the host path\'s embeddings and metrics and says so in the report; a bad choice is refused', async () => {
    const run = async (where: string): Promise<{ report: SingleRunReport; vectors: Float32Array }> => {
      const json = path.join(dir, `report-${where}.json`);
      const file = path.join(dir, `${where}.npy`);
      const res = await runCliCaptured(['eval', MODEL, '--data', `folder:${smallFolder()}`, '--json', json, '--cluster-counts', '1x', '--k', '1,4', '--save-embeddings', file, '--device', 'cpu', '--normalization', where]);
      expect(beforeSummary(res.stderr)).to.equal('');
      expect(res.code).to.equal(0);
      return { report: JSON.parse(readFileSync(json, 'utf8')) as SingleRunReport, vectors: (await loadEmbeddingSet(path.join(dir, where))).set.vectors };
    };
    const host = await run('host');
    const device = await run('device');
    expect(host.report.model?.normalization).to.equal('host');
    expect(device.report.model?.normalization).to.equal('device');
    expectValidReport(device.report);
    expect(Buffer.from(device.vectors.buffer).equals(Buffer.from(host.vectors.buffer))).to.equal(true);
    expect(device.report.metrics).to.deep.equal(host.report.metrics);
    const bad = await runCliCaptured(['eval', MODEL, '--data', `folder:${smallFolder()}`, '--normalization', 'gpu']);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.contain('--normalization');
  });

  it('--save-embeddings with several models writes one pair per model; a name without .npy is refused before anything runs', async () => {
    const other = path.join(dir, 'copy.onnx');
    copyFileSync(MODEL, other);
    const data = `folder:${smallFolder(2, 3)}`;
    const res = await runCliCaptured(['eval', MODEL, other, '--data', data, '--cluster-counts', '1x', '--k', '1', '--save-embeddings', path.join(dir, 'emb.npy'), '--device', 'cpu']);
    expect(res.code).to.equal(0);
    expect(readdirSync(dir).filter((f) => f.startsWith('emb.')).sort()).to.deep.equal(['emb.copy.json', 'emb.copy.npy', 'emb.default.json', 'emb.default.npy']);
    expect(savedEmbeddingsPrefix('x/e.npy', ['a.onnx', 'a.onnx', 'b.onnx'], 1)).to.equal('x/e.a-2');
    const bad = await runCliCaptured(['eval', MODEL, '--data', data, '--save-embeddings', path.join(dir, 'emb.txt')]);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.contain('--save-embeddings');
    expect(bad.stderr).to.contain('a file name ending in .npy');
    expect(existsSync(path.join(dir, 'emb.txt'))).to.equal(false);
  });

  it('scores .npy embeddings with hand-computed values (separate gallery)', async () => {
    // Queries: q0 = (1,0) label 0, q1 = (0,1) label 1. Gallery: g0 = (1,0.1) label 1, g1 = (1,0.2) label 0, g2 = (0,1) label 1.
    // q0 ranks g0 (0.995), g1 (0.981), g2 (0): first hit at rank 2 -> R@1 = 0, R@2 = 1; R = 1 -> R-Prec 0, MAP@R 0.
    // q1 ranks g2 (1), g1 (0.196), g0 (0.0995): hit at rank 1; R = 2, top 2 = g2 (hit), g1 (miss) -> R-Prec 1/2, MAP@R (1/2)(1/1) = 1/2.
    await writeNpy(path.join(dir, 'q.npy'), new Float32Array([1, 0, 0, 1]), [2, 2]);
    await writeNpy(path.join(dir, 'ql.npy'), new Int32Array([0, 1]), [2]);
    await writeNpy(path.join(dir, 'g.npy'), new Float64Array([1, 0.1, 1, 0.2, 0, 1]), [3, 2]);
    await writeNpy(path.join(dir, 'gl.npy'), new BigInt64Array([1n, 0n, 1n]), [3]);
    const json = path.join(dir, 'r.json');
    const res = await runCliCaptured([
      'eval',
      '--query-embeddings', path.join(dir, 'q.npy'),
      '--query-labels', path.join(dir, 'ql.npy'),
      '--gallery-embeddings', path.join(dir, 'g.npy'),
      '--gallery-labels', path.join(dir, 'gl.npy'),
      '--k', '1,2', '--cluster-counts', '1x', '--json', json,
    ]);
    expect(beforeSummary(res.stderr)).to.equal('');
    expect(res.code).to.equal(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as SingleRunReport;
    expectValidReport(report);
    expect(report.metrics.recall).to.deep.equal({ '1': 0.5, '2': 1 });
    expect(report.metrics.rPrecision).to.equal(0.25);
    expect(report.metrics.mapAtR).to.equal(0.25);
    expect(report.dataset).to.deep.include({ layout: 'npy', queryCount: 2, galleryCount: 3, sameSet: false });
    // q0's one relevant item at rank 2 (RR = AP = 1/2); q1's at ranks 1 and 3 (RR 1, AP (1 + 2/3)/2 = 5/6).
    expect(report.metrics.mrr).to.equal(0.75);
    expect(report.metrics.map).to.be.closeTo(2 / 3, 1e-15);
    expect(report.parameters.fullRanking).to.equal(true);
    const skipped = path.join(dir, 'r2.json');
    const without = await runCliCaptured(['eval', '--query-embeddings', path.join(dir, 'q.npy'), '--query-labels', path.join(dir, 'ql.npy'), '--gallery-embeddings', path.join(dir, 'g.npy'), '--gallery-labels', path.join(dir, 'gl.npy'), '--k', '1,2', '--cluster-counts', '1x', '--no-full-ranking', '--json', skipped]);
    expect(without.code).to.equal(0);
    const second = JSON.parse(readFileSync(skipped, 'utf8')) as SingleRunReport;
    expectValidReport(second);
    expect(second.metrics).to.deep.include({ mrr: null, map: null, mapAtR: 0.25 });
    expect(second.parameters.fullRanking).to.equal(false);
  });

  describe('bad input: one clear line, the right exit code, and no output written', () => {
    const expectFailure = async (argv: string[], code: number, pattern: RegExp, out = path.join(dir, 'out')): Promise<void> => {
      const res = await runCliCaptured([...argv, '--out', out]);
      expect(res.code, res.stderr).to.equal(code);
      expect(res.stderr).to.match(pattern);
      expect(res.stderr.trim().split('\n')).to.have.length(1);
      expect(res.stdout).to.equal('');
      expect(existsSync(path.join(out, 'report.json'))).to.equal(false);
    };

    it('unknown layout', async () => {
      await expectFailure(['eval', MODEL, '--data', 'imagenet:/x'], 2, /^dml: .*imagenet.*folder/);
    });

    it('missing dataset path', async () => {
      await expectFailure(['eval', MODEL, '--data', `folder:${path.join(dir, 'nowhere')}`], 1, /^dml: .*nowhere/);
    });

    it('a FIFO where a file is read is refused at once, naming it (it used to block with no output): external data, --preprocessor-config, a preprocessor_config.json beside the model linked to one', async () => {
      const mkfifo = (file: string): string => {
        expect(spawnSync('mkfifo', [file]).status).to.equal(0);
        return file;
      };
      const models = path.join(dir, 'models');
      mkdirSync(models);
      const external = writeExternalDataModel(models, 1, 'external.onnx', 'weights.bin');
      rmSync(path.join(models, 'weights.bin'));
      mkfifo(path.join(models, 'weights.bin'));
      await expectFailure(['eval', external, '--data', smallFolder()], 2, /^dml: .*external\.onnx keeps weights in external data file "weights\.bin", which cannot be read: Cannot read external data file .*weights\.bin: a FIFO \(named pipe\), not a regular file\n$/);
      const pipe = mkfifo(path.join(dir, 'config-pipe'));
      await expectFailure(['eval', MODEL, '--data', smallFolder(), '--preprocessor-config', pipe], 2, new RegExp(`^dml: Cannot read preprocessor config ${pipe}: a FIFO \\(named pipe\\), not a regular file\n$`));
      const beside = path.join(dir, 'hub');
      mkdirSync(beside);
      copyFileSync(MODEL, path.join(beside, 'model.onnx'));
      symlinkSync(pipe, path.join(beside, 'preprocessor_config.json'));
      await expectFailure(['eval', path.join(beside, 'model.onnx'), '--data', smallFolder()], 2, /^dml: Cannot read preprocessor config .*preprocessor_config\.json: a FIFO \(named pipe\), not a regular file\n$/);
    });

    it('missing model', async () => {
      await expectFailure(['eval', path.join(dir, 'none.onnx'), '--data', smallFolder()], 1, /^dml: Cannot read model .*none\.onnx: no such file/);
    });

    it('labels that do not match the embeddings', async () => {
      await writeNpy(path.join(dir, 'q.npy'), new Float32Array(6).fill(1), [3, 2]);
      await writeNpy(path.join(dir, 'ql.npy'), new Int32Array([0, 1]), [2]);
      await expectFailure(
        ['eval', '--query-embeddings', path.join(dir, 'q.npy'), '--query-labels', path.join(dir, 'ql.npy')],
        1,
        /ql\.npy holds 2 labels but .*q\.npy holds 3 embeddings/,
      );
    });

    it('NaN embeddings', async () => {
      await writeNpy(path.join(dir, 'q.npy'), new Float32Array([1, 0, Number.NaN, 1]), [2, 2]);
      await writeNpy(path.join(dir, 'ql.npy'), new Int32Array([0, 1]), [2]);
      await expectFailure(
        ['eval', '--query-embeddings', path.join(dir, 'q.npy'), '--query-labels', path.join(dir, 'ql.npy')],
        1,
        /q\.npy: embedding row 1 contains NaN/,
      );
    });

    it('a .npz archive: says it is not read and what to pass instead', async () => {
      writeFileSync(path.join(dir, 'e.npz'), Buffer.from([0x50, 0x4b, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0]));
      await expectFailure(
        ['eval', '--query-embeddings', path.join(dir, 'e.npz'), '--query-labels', path.join(dir, 'e.npz')],
        1,
        new RegExp(`^dml: ${path.join(dir, 'e.npz')} is a NumPy \\.npz archive, which dmlkit does not read: save each array as its own \\.npy file \\(numpy\\.save\\('queries\\.npy', array\\)\\) and pass those\\n$`),
      );
    });

    it('K larger than the gallery', async () => {
      await expectFailure(['eval', MODEL, '--data', smallFolder(2, 3), '--k', '1,8'], 1, /K = 8 is larger than the gallery: 6 items, minus the query itself, so at most K = 5/);
    });

    it('a bad flag value', async () => {
      await expectFailure(['eval', MODEL, '--data', smallFolder(), '--k', '1,two'], 2, /--k/);
      await expectFailure(['eval', MODEL, '--data', smallFolder(), '--index', 'faiss'], 2, /Expected one of exact, hnsw for --index but received "faiss"/);
      await expectFailure(['eval', MODEL, '--data', smallFolder(), '--workers', 'all'], 2, /^dml: Expected a non-negative integer for --workers but received "all"\n$/);
    });

    it('--nmi-k, the old name of --cluster-counts, still works with a warning; both at once is a usage error', async () => {
      const npy = ['--query-embeddings', path.join(dir, 'q2.npy'), '--query-labels', path.join(dir, 'ql2.npy'), '--k', '1'];
      await writeNpy(path.join(dir, 'q2.npy'), Float32Array.from([1, 0, 0.9, 0.1, 0, 1, 0.1, 0.9]), [4, 2]);
      await writeNpy(path.join(dir, 'ql2.npy'), Int32Array.from([0, 0, 1, 1]), [4]);
      const old = await runCliCaptured(['eval', ...npy, '--nmi-k', '1x,2']);
      expect(old.code).to.equal(0);
      expect(beforeSummary(old.stderr)).to.equal('warning: --nmi-k is now called --cluster-counts; the old name will go in a later release\n');
      const current = await runCliCaptured(['eval', ...npy, '--cluster-counts', '1x,2']);
      expect(beforeSummary(current.stderr)).to.equal('');
      expect(current.stdout).to.equal(old.stdout.replace('--nmi-k', '--cluster-counts'));
      await expectFailure(['eval', ...npy, '--nmi-k', '1x', '--cluster-counts', '2x'], 2, /^dml: --nmi-k is the old name of --cluster-counts: give one of them, not both\n$/);
    });

    it('--json - writes report.json alone to stdout (the table to stderr); float16 .npy embeddings are read', async () => {
      const half = path.join(dir, 'q16.npy');
      // float16 of [1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]: the same rows as q2.npy up to rounding
      const halves = new Uint16Array([0x3c00, 0, 0x3b33, 0x2e66, 0, 0x3c00, 0x2e66, 0x3b33]);
      writeFileSync(half, npyBytes('<f2', [4, 2], new Uint8Array(halves.buffer)));
      await writeNpy(path.join(dir, 'ql16.npy'), Int32Array.from([0, 0, 1, 1]), [4]);
      const res = await runCliCaptured(['eval', '--query-embeddings', half, '--query-labels', path.join(dir, 'ql16.npy'), '--k', '1', '--cluster-counts', '1x', '--json', '-']);
      expect(res.code, res.stderr).to.equal(0);
      const report = JSON.parse(res.stdout) as SingleRunReport;
      expectValidReport(report);
      expect(report.metrics.recall).to.deep.equal({ '1': 1 });
      expect(res.stderr).to.match(/^\| model \| R@1 \|/);
      expect(res.stderr).to.match(/\ndml eval: done in \d+\.\ds \(search \d+\.\ds, k-means \d+\.\ds\); wrote report\.json to standard output\n$/);
      expect(existsSync(path.join(process.cwd(), '-'))).to.equal(false);
    });

    it('a bad flag value is the error even when the dataset is missing too (flags are checked before any I/O)', async () => {
      const nowhere = `folder:${path.join(dir, 'nowhere')}`;
      await expectFailure(['eval', MODEL, '--data', nowhere, '--device', 'tpu'], 2, /^dml: Expected one of auto, cuda, webgpu, cpu for --device but received "tpu"\n$/);
      await expectFailure(['eval', MODEL, '--data', nowhere, '--batch-size', '0'], 2, /--batch-size/);
      await expectFailure(['eval', MODEL, '--data', nowhere, '--limit-input-pixels', 'many'], 2, /--limit-input-pixels/);
      await expectFailure(['eval', MODEL, '--data', nowhere, '--size', '0'], 2, /--size/);
    });

    it('a corrupt image fails naming the file; --skip-bad-images skips and counts it', async () => {
      const root = smallFolder(3, 4);
      const cls = readdirSync(root).sort()[0] as string;
      writeFileSync(path.join(root, cls, 'broken.png'), Buffer.from('this is not a png'));
      // The same line and the same skip whether images decode in this process or in decode processes.
      const messages: string[] = [];
      for (const workers of ['0', '2']) {
        const failed = await runCliCaptured(['eval', MODEL, '--data', root, '--workers', workers]);
        expect(failed.code).to.equal(1);
        expect(failed.stderr).to.match(/^dml: \S*broken\.png: not an image in a supported format [^\n]*\n$/);
        expect(failed.stderr).to.match(/; pass --skip-bad-images to leave undecodable images out \(they are listed in the report\)\n$/);
        messages.push(failed.stderr);
        const json = path.join(dir, `r${workers}.json`);
        const res = await runCliCaptured(['eval', MODEL, '--data', root, '--skip-bad-images', '--json', json, '--cluster-counts', '1x', '--workers', workers]);
        expect(res.code, res.stderr).to.equal(0);
        const report = JSON.parse(readFileSync(json, 'utf8')) as SingleRunReport;
        expectValidReport(report);
        expect(report.dataset.skippedImages).to.have.length(1);
        expect(report.dataset.skippedImages[0]!.id).to.contain('broken.png');
        expect(report.dataset.queryCount).to.equal(12);
        expect(res.stdout).to.contain('Skipped images (--skip-bad-images): 1');
      }
      expect(messages[0]).to.equal(messages[1]);
    });

    it('a truncated image and a decompression bomb fail naming the file', async () => {
      const root = smallFolder(2, 3);
      const cls = readdirSync(root).sort()[0] as string;
      const jpeg = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#808080' } }).jpeg().toBuffer();
      writeFileSync(path.join(root, cls, 'cut.jpg'), jpeg.subarray(0, jpeg.length >> 1));
      await expectFailure(['eval', MODEL, '--data', root], 1, /cut\.jpg/);
      rmSync(path.join(root, cls, 'cut.jpg'));
      const bomb = await sharp({ create: { width: 7000, height: 7000, channels: 3, background: '#000000' } }).png({ compressionLevel: 9 }).toBuffer();
      writeFileSync(path.join(root, cls, 'bomb.png'), bomb);
      await expectFailure(['eval', MODEL, '--data', root], 1, /bomb\.png/);
    });

    it('an unwritable --out fails before any work', async function () {
      if (process.getuid?.() === 0) {
        // root ignores directory permissions; a path under a regular file is unwritable for everyone
        writeFileSync(path.join(dir, 'file'), 'x');
        await expectFailure(['eval', MODEL, '--data', smallFolder()], 1, /Cannot write --out/, path.join(dir, 'file', 'sub'));
        return;
      }
      const locked = path.join(dir, 'locked');
      mkdirSync(locked);
      chmodSync(locked, 0o500);
      await expectFailure(['eval', MODEL, '--data', smallFolder()], 1, /Cannot write --out/, path.join(locked, 'out'));
    });
  });

  describe('warnings: one line on stderr each, and the same text in report.json', () => {
    /** Runs `dml eval` with `--json`, expects success, and returns stderr and the report. */
    const evalWithReport = async (argv: string[]): Promise<{ stderr: string; report: SingleRunReport }> => {
      const json = path.join(dir, 'w.json');
      const res = await runCliCaptured([...argv, '--json', json]);
      expect(res.code, res.stderr).to.equal(0);
      const report = JSON.parse(readFileSync(json, 'utf8')) as SingleRunReport;
      expectValidReport(report);
      return { stderr: res.stderr, report };
    };
    const expectWarnings = (result: { stderr: string; report: SingleRunReport }, warnings: string[]): void => {
      expect(beforeSummary(result.stderr)).to.equal(warnings.map((w) => `warning: ${w}\n`).join(''));
      expect(result.report.warnings).to.deep.equal(warnings);
      expect(result.report.runs[0]?.warnings).to.deep.equal(warnings);
    };
    const npyArgs = async (rows: number[][], labels: Int32Array, labelShape = [labels.length]): Promise<string[]> => {
      await writeNpy(path.join(dir, 'e.npy'), Float32Array.from(rows.flat()), [rows.length, (rows[0] as number[]).length]);
      await writeNpy(path.join(dir, 'l.npy'), labels, labelShape);
      return ['eval', '--query-embeddings', path.join(dir, 'e.npy'), '--query-labels', path.join(dir, 'l.npy'), '--k', '1'];
    };
    const square = [[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]];

    it('none for an ordinary run', async () => {
      expectWarnings(await evalWithReport([...(await npyArgs(square, Int32Array.from([0, 0, 1, 1]))), '--cluster-counts', '1x,2']), []);
    });

    it('a model with several outputs and no --output-name says which it used and how to choose', async () => {
      const model = path.join(dir, 'two-outputs.onnx');
      writeTwoOutputModel(model);
      // The preprocessing is given in full, so no default is used (see the next spec).
      const argv = ['eval', model, '--data', smallFolder(), '--cluster-counts', '1x', '--device', 'cpu', '--workers', '0', '--resize', '28', '--mean', '0', '--std', '1'];
      expectWarnings(await evalWithReport(argv), [
        `${model} has 2 outputs (features, doubled); using the first, "features", as the embedding; pass --output-name <name> (option outputName) to use another`,
      ]);
      const chosen = await evalWithReport([...argv, '--output-name', 'doubled']);
      expectWarnings(chosen, []);
      expect(chosen.report.model?.outputName).to.equal('doubled');
      // An output named like an embedding is taken over the first, without a warning.
      writeFileSync(
        model,
        encodeModel({
          graphName: 'two',
          inputs: [tensorValueInfo('pixels', 'float32', ['batch', 1, 28, 28])],
          outputs: [tensorValueInfo('tokens', 'float32', ['batch', 28, 28]), tensorValueInfo('image_embeds', 'float32', ['batch', 784])],
          initializers: [],
          nodes: [node('Flatten', ['pixels'], ['image_embeds'], { axis: { i: 1 } }), node('Squeeze', ['pixels'], ['tokens'], { axes: { ints: [1] } })],
          opsetImports: [{ domain: '', version: 12 }],
        }),
      );
      const named = await evalWithReport(argv);
      expectWarnings(named, []);
      expect(named.report.model?.outputName).to.equal('image_embeds');
    });

    it('a model without preprocessing metadata or config names the defaults it used', async () => {
      const model = path.join(dir, 'bare.onnx');
      writeFileSync(
        model,
        encodeModel({
          graphName: 'bare',
          inputs: [tensorValueInfo('pixels', 'float32', ['batch', 1, 28, 28])],
          outputs: [tensorValueInfo('features', 'float32', ['batch', 784])],
          nodes: [node('Flatten', ['pixels'], ['features'], { axis: { i: 1 } })],
        }),
      );
      const result = await evalWithReport(['eval', model, '--data', smallFolder(), '--cluster-counts', '1x', '--device', 'cpu', '--workers', '0']);
      expectWarnings(result, [
        `${model} has no preprocessing metadata (dml.preprocessing) and no preprocessor_config.json; using dmlkit's defaults: shorter side resized to 32 before the centre crop, mean [0] and std [1]; pass --preprocessor-config <file> or --size/--resize/--mean/--std if the model was trained otherwise`,
      ]);
      expect(result.report.model?.preprocessingSources).to.deep.include({ resizeShorter: 'default', mean: 'default', std: 'default', height: 'model input' });
    });

    it('query labels absent from the gallery: a warning when some are, an error (exit 1, nothing written) when all are', async () => {
      const [q, g] = [path.join(dir, 'q.npy'), path.join(dir, 'g.npy')];
      await writeNpy(q, Float32Array.from(square.flat()), [4, 2]);
      await writeNpy(g, Float32Array.from(square.flat()), [4, 2]);
      await writeNpy(path.join(dir, 'gl.npy'), Int32Array.from([0, 0, 1, 1]), [4]);
      const argv = ['eval', '--query-embeddings', q, '--query-labels', path.join(dir, 'ql.npy'), '--gallery-embeddings', g, '--gallery-labels', path.join(dir, 'gl.npy'), '--k', '1', '--cluster-counts', '1x'];
      await writeNpy(path.join(dir, 'ql.npy'), Int32Array.from([0, 7, 1, 7]), [4]);
      expectWarnings(await evalWithReport(argv), ['2 of 4 queries have a label that never occurs in the gallery ("7"); they count as misses']);
      await writeNpy(path.join(dir, 'ql.npy'), Int32Array.from([10, 11, 10, 11]), [4]);
      const out = path.join(dir, 'none');
      const res = await runCliCaptured([...argv, '--out', out]);
      expect(res.code).to.equal(1);
      expect(res.stderr).to.equal('dml: none of the 4 query labels occurs among the gallery labels (queries: "10", "11"; gallery: "0", "1"); expected the query and gallery sets to share labels (string against integer labels?)\n');
      expect(existsSync(path.join(out, 'report.json'))).to.equal(false);
    });

    it('a single-class set: every retrieval metric is trivially 100', async () => {
      const result = await evalWithReport([...(await npyArgs(square, Int32Array.from([7, 7, 7, 7]))), '--cluster-counts', '1x']);
      expectWarnings(result, [
        'every item has the same label ("7"): with a single class every retrieval metric (Recall@K, R-Precision, MAP@R) is trivially 100 and NMI says nothing; evaluate on at least 2 classes',
      ]);
      expect(result.report.metrics.recall['1']).to.equal(1);
    });

    it('labels of shape (N, 1) are read, flattened, with a warning', async () => {
      const argv = await npyArgs(square, Int32Array.from([0, 0, 1, 1]), [4, 1]);
      const result = await evalWithReport([...argv, '--cluster-counts', '1x']);
      expectWarnings(result, [`${path.join(dir, 'l.npy')}: labels of shape (4, 1) were flattened to 4 labels, one per row; save them with shape (4,) to silence this`]);
      expect(result.report.metrics.recall['1']).to.equal(1);
    });

    it('cluster counts above the item count are capped, with a warning where the cap changes a result (a number asked for, NMI+)', async () => {
      const rows = Array.from({ length: 30 }, (_, i) => [Math.cos(i), Math.sin(i)]);
      const labels = Int32Array.from({ length: 30 }, (_, i) => i % 3);
      const result = await evalWithReport([...(await npyArgs(rows, labels)), '--cluster-counts', '1000,5x,30x']);
      expectWarnings(result, ['cluster count 1000 is more than the 30 items clustered: used 30 clusters instead']);
      expect(result.report.parameters.resolvedClusterCounts).to.deep.equal([3, 15, 30]);
      // The default sweep's 30x on a small set: capped and reported at the count used (NMI k=30), no warning.
      expectWarnings(await evalWithReport([...(await npyArgs(rows, labels)), '--cluster-counts', '1x,30x']), []);
      const few = rows.slice(0, 20);
      const plus = await evalWithReport([...(await npyArgs(few, labels.slice(0, 20))), '--cluster-counts', '1x,10x,30x']);
      expectWarnings(plus, ['cluster count 10x (30 clusters for 3 labels: NMI+) is more than the 20 items clustered: used 20 clusters instead']);
    });
  });

  describe('output paths are checked before the evaluation runs', () => {
    // The dataset does not exist: a check made after the evaluation would fail on it instead.
    const missingData = (): string[] => ['eval', MODEL, '--data', `folder:${path.join(dir, 'nowhere')}`];

    it('--json naming a folder fails at once, naming the path and asking for a file path', async () => {
      const folder = path.join(dir, 'reports');
      mkdirSync(folder);
      const res = await runCliCaptured([...missingData(), '--json', folder]);
      expect(res.code).to.equal(1);
      expect(res.stderr).to.equal(`dml: Cannot write --json ${folder}: ${folder} is a folder; expected a file path such as ${path.join(folder, 'report.json')}\n`);
      expect(readdirSync(folder)).to.deep.equal([]);
    });

    it('--out whose report.json is a folder fails at once the same way', async () => {
      const out = path.join(dir, 'out');
      mkdirSync(path.join(out, 'report.json'), { recursive: true });
      const res = await runCliCaptured([...missingData(), '--out', out]);
      expect(res.code).to.equal(1);
      expect(res.stderr).to.equal(`dml: Cannot write --out ${out}: ${path.join(out, 'report.json')} is a folder; expected a file path such as ${path.join(out, 'report.json', 'report.json')}\n`);
    });

    it('--json under a regular file fails at once', async () => {
      writeFileSync(path.join(dir, 'file'), 'x');
      const target = path.join(dir, 'file', 'r.json');
      const res = await runCliCaptured([...missingData(), '--json', target]);
      expect(res.code).to.equal(1);
      expect(res.stderr).to.equal(`dml: Cannot write --json ${target}: ${path.join(dir, 'file')} is not a folder\n`);
    });
  });

  describe('outputs that are not plain new files', () => {
    /** Two small .npy files (query set = gallery set) to evaluate quickly. */
    async function npyArgs(): Promise<string[]> {
      await writeNpy(path.join(dir, 'q.npy'), new Float32Array([1, 0, 0.9, 0.1, 0, 1, 0.1, 0.9]), [4, 2]);
      await writeNpy(path.join(dir, 'ql.npy'), new Int32Array([0, 0, 1, 1]), [4]);
      return ['eval', '--query-embeddings', path.join(dir, 'q.npy'), '--query-labels', path.join(dir, 'ql.npy'), '--k', '1', '--cluster-counts', '1x'];
    }

    it('--json through a symlink writes its target and keeps the link; a FIFO is streamed into and stays a FIFO', async () => {
      mkdirSync(path.join(dir, 'real'));
      symlinkSync('real/r.json', path.join(dir, 'link.json'));
      const linked = await runCliCaptured([...(await npyArgs()), '--json', path.join(dir, 'link.json')]);
      expect(linked.code, linked.stderr).to.equal(0);
      expect(lstatSync(path.join(dir, 'link.json')).isSymbolicLink()).to.equal(true);
      expectValidReport(JSON.parse(readFileSync(path.join(dir, 'real', 'r.json'), 'utf8')));
      const fifo = path.join(dir, 'pipe');
      const { read } = fifoWithReader(fifo);
      const piped = await runCliCaptured([...(await npyArgs()), '--json', fifo]);
      expect(piped.code, piped.stderr).to.equal(0);
      expectValidReport(JSON.parse(await read));
      expect(lstatSync(fifo).isFIFO()).to.equal(true);
    });

    it('--json on a full device fails with exit 1 and the device stays a device', async () => {
      const full = path.join(dir, 'full');
      expect(spawnSync('mknod', [full, 'c', '1', '7']).status, 'mknod (CI runs as root)').to.equal(0);
      const res = await runCliCaptured([...(await npyArgs()), '--json', full]);
      expect(res.code).to.equal(1);
      expect(res.stderr).to.equal(`dml: Cannot write ${full}: ENOSPC: no space left on device, write\n`);
      expect(lstatSync(full).isCharacterDevice()).to.equal(true);
    });

    it('outputs that would land on one file are refused before any work', async () => {
      const args = await npyArgs();
      const clash = await runCliCaptured(['eval', MODEL, '--data', 'folder:data/default', '--json', path.join(dir, 'x.json'), '--save-embeddings', path.join(dir, 'x.npy')]);
      expect(clash).to.deep.equal({ code: 2, stdout: '', stderr: `dml: --save-embeddings ${path.join(dir, 'x.npy')} and --json ${path.join(dir, 'x.json')} would both write ${path.join(dir, 'x.json')} (expected separate output files)\n` });
      const out = path.join(dir, 'out');
      const same = await runCliCaptured([...args, '--out', out, '--json', path.join(out, 'report.json')]);
      expect(same).to.deep.equal({ code: 2, stdout: '', stderr: `dml: --json ${path.join(out, 'report.json')} and --out ${out} would both write ${path.join(out, 'report.json')} (expected separate output files)\n` });
      expect(readdirSync(dir).sort()).to.deep.equal(['q.npy', 'ql.npy']);
    });

    it('--json - with standard output closed fails with exit 1 instead of losing the report', async () => {
      const args = (await npyArgs()).map((a) => `'${a}'`).join(' ');
      const res = spawnSync('bash', ['-c', `'${process.execPath}' --import tsx bin/dml.ts ${args} --json - >&-`], { encoding: 'utf8' });
      expect(res.status, res.stderr).to.equal(1);
      expect(res.stderr.trim().split('\n').pop()).to.equal('dml: Cannot write the report (--json -) to standard output: it was closed when dml started (give a file instead of -)');
      const devNull = spawnSync('bash', ['-c', `'${process.execPath}' --import tsx bin/dml.ts ${args} --json - > /dev/null`], { encoding: 'utf8' });
      expect(devNull.status, 'sent to /dev/null on purpose: fine').to.equal(0);
    });
  });

  it('the installed entry point exits 2 on a usage error and prints help', () => {
    const entry = ['--import', 'tsx', 'bin/dml.ts'];
    const bad = spawnSync(process.execPath, [...entry, 'eval', '--k'], { encoding: 'utf8' });
    expect(bad.status).to.equal(2);
    expect(bad.stderr).to.match(/--k/);
    const help = execFileSync(process.execPath, [...entry, 'eval', '--help'], { encoding: 'utf8' });
    expect(help).to.contain('--query-embeddings');
  });
});
