/**
 * @file The evaluation report's diagnostic views (lib/report/diagnostic-views.ts) and class names:
 * the best value per column, the models table (dimension, file size, images/s), class names read from
 * `--class-names` files and from the datasets that have them (Fashion-MNIST, Cars196's MAT-file); then
 * a real `dml eval` of the default model on the embedded images written as a Fashion-MNIST IDX folder,
 * its page opened in headless Chromium (skipped only without /usr/bin/chromium): Recall@1 bars worst
 * first under the class names, the confusions table, the similarity histograms, the models table, and
 * beside a second model the best values marked; `--class-names` through the CLI on .npy embeddings.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import sharp from 'sharp';
import type { Browser } from 'playwright-core';
import { readClassNames } from '../../lib/data/class-names.js';
import { openDataset } from '../../lib/data/open-dataset.js';
import { FASHION_MNIST_CLASSES } from '../../lib/data/layouts/idx.js';
import { writeNpy } from '../../lib/embed/npy.js';
import type { RunReport } from '../../lib/eval/run-report.js';
import { classLabel } from '../../lib/report/class-label.js';
import { confusionsTable, modelsTable } from '../../lib/report/diagnostic-views.js';
import { bestCells } from '../../lib/report/html.js';
import { reportNotes } from '../../lib/report/markdown.js';
import { buildReport, type Report } from '../../lib/report/report.js';
import { reportHtml } from '../../lib/report/sections.js';
import { launchChromiumOrSkip, openOffline } from '../helpers/chromium.js';
import { runCliCaptured } from '../helpers/run-cli.js';
import { makeTempDir } from '../image/image-fixtures.js';

/** An IDX file: magic (0, 0, 8 = uint8, rank), big-endian dimensions, the bytes. */
function idxFile(dims: number[], data: Uint8Array): Buffer {
  const header = Buffer.alloc(4 + 4 * dims.length);
  header.writeUInt8(8, 2);
  header.writeUInt8(dims.length, 3);
  dims.forEach((d, i) => header.writeUInt32BE(d, 4 + 4 * i));
  return Buffer.concat([header, Buffer.from(data)]);
}

/** data/default (600 Fashion-MNIST test images in class folders) written as a Fashion-MNIST IDX folder (one training image). */
async function defaultImagesAsIdx(dir: string): Promise<void> {
  const folderOf = (name: string): string => name.toLowerCase().replace('/', '_').replace(' ', '_');
  const pixels: Buffer[] = [];
  const labels: number[] = [];
  FASHION_MNIST_CLASSES.forEach((name, label) => {
    for (const file of readdirSync(path.join('data/default', folderOf(name))).sort()) {
      labels.push(label);
      pixels.push(sharp(path.join('data/default', folderOf(name), file)).greyscale().raw().toBuffer() as unknown as Buffer);
    }
  });
  const images = await Promise.all(pixels as unknown as Array<Promise<Buffer>>);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 't10k-images-idx3-ubyte'), idxFile([images.length, 28, 28], Buffer.concat(images)));
  writeFileSync(path.join(dir, 't10k-labels-idx1-ubyte'), idxFile([labels.length], Uint8Array.from(labels)));
  writeFileSync(path.join(dir, 'train-images-idx3-ubyte'), idxFile([1, 28, 28], images[0] as Buffer));
  writeFileSync(path.join(dir, 'train-labels-idx1-ubyte'), idxFile([1], Uint8Array.from([0])));
}

describe('the evaluation report\'s diagnostic views', function () {
  this.timeout(120_000);
  let tmp: string;
  before(() => {
    tmp = makeTempDir('dml-diagnostic-views-');
  });
  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('marks the largest number of each column (none when all equal, n/a never), except the columns it is told to skip', () => {
    const table = { header: ['model', 'R@1', 'MAP@R', 'lone q', 'NMI'], rows: [['a', '50.00', 'n/a', '3', '40.00'], ['b', '75.00', '20.00', '5', '40.00'], ['c', '75.00', '10.00', '1', '40.00']] };
    expect([...bestCells(table, ['lone q']).entries()].map(([c, rows]) => [c, [...rows]])).to.deep.equal([[1, [1, 2]], [2, [1]]]);
  });

  it('names labels by their classes: --class-names lists and JSON, Fashion-MNIST and Cars196 their own', async () => {
    const labels = new Set(['0', '1', '2', '7']);
    writeFileSync(path.join(tmp, 'names.txt'), '\uFEFFzero\none\r\ntwo\n\n');
    expect(await readClassNames(path.join(tmp, 'names.txt'), labels)).to.deep.equal({ 0: 'zero', 1: 'one', 2: 'two' });
    writeFileSync(path.join(tmp, 'names.json'), JSON.stringify({ 7: 'seven', 9: 'nine' }));
    expect(await readClassNames(path.join(tmp, 'names.json'), labels)).to.deep.equal({ 7: 'seven' });
    writeFileSync(path.join(tmp, 'bad.json'), JSON.stringify(['zero']));
    await readClassNames(path.join(tmp, 'bad.json'), labels).then(
      () => expect.fail('accepted'),
      (err: Error) => expect(err.message).to.equal(`--class-names ${path.join(tmp, 'bad.json')}: expected a JSON object of label -> class name strings, e.g. {"0": "T-shirt/top"}`),
    );
    await readClassNames(path.join(tmp, 'names.txt'), new Set(['bag', 'coat'])).then(
      () => expect.fail('accepted'),
      (err: Error) => expect(err.message).to.equal(`--class-names ${path.join(tmp, 'names.txt')} names labels 0, 1, 2, but none of the dataset's labels ("bag", "coat") is among them`),
    );
    const fashion = await openDataset('fashion-mnist:spec/fixtures/datasets/idx', { warn: () => undefined });
    expect(fashion.classNames?.['9']).to.equal('Ankle boot');
    expect((await openDataset('idx:spec/fixtures/datasets/idx', { warn: () => undefined })).classNames).to.equal(undefined);
    expect((await openDataset('cars196:spec/fixtures/datasets/cars196/mat')).classNames?.['2']).to.equal('Acura RL Sedan 2012');
    expect(classLabel({ dataset: { classNames: { 1: 'Trouser' } } } as unknown as RunReport, '1')).to.equal('Trouser (1)');
    expect(classLabel({ dataset: {} } as unknown as RunReport, '1')).to.equal('1');
  });

  it('--class-names on .npy embeddings: the per-class table and the confusions under the names', async () => {
    await writeNpy(path.join(tmp, 'q.npy'), Float32Array.from([1, 0, 0.9, 0.1, 0, 1, 0.1, 0.9, 0.7, 0.7]), [5, 2]);
    await writeNpy(path.join(tmp, 'ql.npy'), Int32Array.from([0, 0, 1, 1, 0]), [5]);
    writeFileSync(path.join(tmp, 'two.txt'), 'cat\ndog\n');
    const out = path.join(tmp, 'npy-eval');
    const res = await runCliCaptured(['--quiet', 'eval', '--query-embeddings', path.join(tmp, 'q.npy'), '--query-labels', path.join(tmp, 'ql.npy'), '--k', '1,2', '--cluster-counts', '1x', '--class-names', path.join(tmp, 'two.txt'), '--out', out]);
    expect(res.code, res.stderr).to.equal(0);
    const report = JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')) as Report;
    expect(report.runs[0]?.dataset.classNames).to.deep.equal({ 0: 'cat', 1: 'dog' });
    const markdown = readFileSync(path.join(out, 'report.md'), 'utf8');
    expect(markdown).to.match(/\| cat \(0\) \| 3 \|/);
    expect(markdown).to.match(/\| (cat \(0\) \| dog \(1\)|dog \(1\) \| cat \(0\)) \| [\d.]+ \|/);
  });

  describe('of a real evaluation, in headless Chromium', () => {
    let browser: Browser;
    before(async function () {
      browser = await launchChromiumOrSkip(this);
    });
    after(async () => browser?.close());

    it('per-class Recall@1 bars worst first under class names, confusions, similarity histograms, the models table; best values marked beside a second model', async () => {
      const data = path.join(tmp, 'fashion');
      await defaultImagesAsIdx(data);
      const out = path.join(tmp, 'eval');
      const res = await runCliCaptured(['--quiet', 'eval', 'models/default.onnx', '--data', `fashion-mnist:${data}`, '--cluster-counts', '1x', '--workers', '0', '--out', out]);
      expect(res.code, res.stderr).to.equal(0);
      const report = JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')) as Report;
      const run = report.runs[0] as RunReport;
      expect(run.dataset.classNames?.['0']).to.equal('T-shirt/top');
      expect(run.dataset.embeddedCount).to.equal(600);
      expect(run.model?.fileBytes).to.equal(statSync('models/default.onnx').size);
      expect(run.diagnostics?.similarities.mode).to.equal('all'); // 600 x 600 x 64 multiply-adds
      const models = modelsTable(report);
      expect(models.rows[0]?.slice(0, 4)).to.deep.equal(['default.onnx', '64', (statSync('models/default.onnx').size / 1e6).toFixed(2), '600']);
      expect(Number(models.rows[0]?.[5])).to.be.closeTo(600 / (run.timings.embedSeconds as number), 0.1);

      const { page, requests } = await openOffline(browser, path.join(out, 'report.html'));
      // Ten classes, one bar each, worst Recall@1 first, each labelled with its class name.
      const bars = (await page.evaluate(`[...document.querySelectorAll('[data-chart="per-class-recall"] rect.bar')].map((r) => Number(r.dataset.value))`)) as number[];
      expect(bars).to.have.length(10);
      expect(bars).to.deep.equal([...bars].sort((a, b) => a - b));
      const worst = [...run.metrics.perClass].sort((a, b) => a.recallAt1 - b.recallAt1 || (a.label < b.label ? -1 : 1))[0]!;
      expect(bars[0]).to.equal(worst.recallAt1);
      expect(await page.evaluate(`document.querySelector('[data-chart="per-class-recall"] .bar-label').lastChild.textContent`)).to.equal(classLabel(run, worst.label));
      // Confusions: the pairs of the report, most frequent first, under class names.
      const confusions = page.locator('.confusions tbody tr');
      expect(await confusions.count()).to.equal(Math.min(10, run.diagnostics!.confusions.length));
      const top = run.diagnostics!.confusions[0]!;
      expect(await confusions.first().locator('td').allTextContents()).to.deep.equal([classLabel(run, top.queryLabel), classLabel(run, top.neighbourLabel), (100 * top.fraction).toFixed(2), String(top.count)]);
      expect(await page.locator('[data-chart="similarities"] svg').count()).to.equal(1);
      expect(await page.locator('[data-chart="similarities"] text').filter({ hasText: /^default\.onnx: pair similarities, gap 0\.\d{3}$/ }).count()).to.equal(1);
      expect(await page.locator('figcaption').filter({ hasText: /\(\d\)/ }).count()).to.be.above(0); // examples under class names
      expect(await page.locator('td.best').count()).to.equal(0); // one model: nothing to mark
      expect(requests).to.deep.equal([]);
      await page.close();

      // Beside a second model whose Recall@1 is higher and MAP@R lower: each column's best is marked.
      const other: RunReport = structuredClone(run);
      other.name = 'other.onnx';
      other.metrics.recall['1'] = Math.min(1, (run.metrics.recall['1'] as number) + 0.01);
      other.metrics.mapAtR = (run.metrics.mapAtR as number) - 0.01;
      const two = buildReport([run, other], ['dml', 'eval']);
      // Two models of one device choice and preprocessing: one note each, not one per model.
      const notes = reportNotes(two);
      expect(notes.filter((n) => n.startsWith('Execution provider:'))).to.have.length(1);
      expect(notes.filter((n) => n.startsWith('Preprocessing of every model:'))).to.have.length(1);
      expect(reportNotes(buildReport([run, { ...other, model: { ...run.model!, preprocessing: { ...(run.model!.preprocessing as object), mean: [0.5] } } }], ['dml'])).filter((n) => n.startsWith('Preprocessing of'))).to.have.length(2);
      const file = path.join(tmp, 'two.html');
      writeFileSync(file, reportHtml(two));
      const { page: second } = await openOffline(browser, file);
      const metrics = second.locator('table').first();
      const header = await metrics.locator('thead th').allTextContents();
      const bestOf = async (column: string): Promise<string[]> =>
        (await second.evaluate(`[...document.querySelectorAll('table')[0].querySelectorAll('tbody tr')].filter((tr) => tr.children[${header.indexOf(column)}].classList.contains('best')).map((tr) => tr.children[0].textContent)`)) as string[];
      expect(await bestOf('R@1')).to.deep.equal(['other.onnx']);
      expect(await bestOf('MAP@R')).to.deep.equal(['default.onnx']);
      expect(await bestOf('lone q')).to.deep.equal([]);
      expect(await second.evaluate(`getComputedStyle(document.querySelector('td.best')).fontWeight`)).to.equal('700');
      expect((await second.locator('[data-chart="per-class-recall"] .legend').allTextContents()).map((t) => t.trim())).to.deep.equal(['default.onnx', 'other.onnx']);
      expect(confusionsTable(two).header).to.deep.equal(['queries of', 'confused with', '% default.onnx', '% other.onnx']);
      mkdirSync('runs/spec-artefacts', { recursive: true });
      await second.screenshot({ path: 'runs/spec-artefacts/report-diagnostics.png', fullPage: true });
      await second.setViewportSize({ width: 390, height: 844 });
      expect(await second.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).to.equal(true);
      await second.close();
    });
  });
});
