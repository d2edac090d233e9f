/**
 * @file `dml compare`: saved evaluation reports combined into one cross-model report (the metrics
 * table, per-class differences, the same random queries under both models, with thumbnails of the
 * dataset opened again) and opened in headless Chromium; reports of another protocol, split or data
 * refused with one line naming the difference; a mix of runs and reports, old report formats and an
 * --out that would overwrite an input refused; two real training runs overlaid (one colour per run,
 * the config fields that differ). Also: eval's progress lines name their model. Chromium is skipped
 * only without /usr/bin/chromium.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { runProgress } from '../../lib/cli/eval-run.js';
import { combineReports, runDifferences } from '../../lib/report/compare-reports.js';
import type { Report } from '../../lib/report/report.js';
import { launchChromiumOrSkip, openOffline } from '../helpers/chromium.js';
import { runCliCaptured } from '../helpers/run-cli.js';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';
import { makeTempDir } from '../image/image-fixtures.js';

const readJson = (file: string): Report => JSON.parse(readFileSync(file, 'utf8')) as Report;
const writeJson = (file: string, value: unknown): void => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(value));
};

/** A copy of the one-run report `report` as another model's: renamed, Recall@1 and the first class's values changed. */
function otherModel(report: Report, name: string): Report {
  const run = structuredClone(report.runs[0]!);
  run.name = name;
  run.metrics.recall['1'] = 0.5;
  run.metrics.perClass[0] = { ...run.metrics.perClass[0]!, recallAt1: 1, mapAtR: 1 };
  return { ...report, runs: [run], ...run };
}

describe('dml compare', function () {
  this.timeout(120_000);
  let browser: Browser;
  let tmp: string;
  let evalA: string;

  before(async function () {
    tmp = makeTempDir('dml-compare-');
    evalA = path.join(tmp, 'evalA');
    const res = await runCliCaptured(['--quiet', 'eval', 'models/default.onnx', '--data', 'folder:data/default', '--cluster-counts', '1x', '--workers', '0', '--out', evalA]);
    expect(res.code, res.stderr).to.equal(0);
    browser = await launchChromiumOrSkip(this);
  });
  after(async () => {
    await browser?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const open = (file: string): ReturnType<typeof openOffline> => openOffline(browser, file);

  it('combines saved reports into one: the table on stdout, report.json of both runs, the page with per-class differences and the same queries under both', async () => {
    const a = readJson(path.join(evalA, 'report.json'));
    writeJson(path.join(tmp, 'evalB', 'report.json'), otherModel(a, 'other.onnx'));
    const out = path.join(tmp, 'compared');
    const res = await runCliCaptured(['compare', path.join(evalA, 'report.json'), path.join(tmp, 'evalB'), '--out', out]);
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stderr).to.equal('');
    const rows = res.stdout.split('\n').filter((l) => /^\| (default|other)\.onnx \|/.test(l));
    expect(rows.map((r) => r.split(' | ')[1])).to.deep.equal([(100 * (a.runs[0]!.metrics.recall['1'] as number)).toFixed(2), '50.00']);
    const combined = readJson(path.join(out, 'report.json'));
    expect(combined.runs.map((r) => r.name)).to.deep.equal(['default.onnx', 'other.onnx']);
    expect(combined.command).to.deep.equal(['dml', 'compare', path.join(evalA, 'report.json'), path.join(tmp, 'evalB'), '--out', out]);
    expect(readFileSync(path.join(out, 'report.md'), 'utf8')).to.include('Δ other.onnx');

    const { page, requests } = await open(path.join(out, 'report.html'));
    expect(await page.locator('table').first().locator('tbody tr td:first-child').allTextContents()).to.deep.equal(['default.onnx', 'other.onnx']);
    const perClass = page.locator('h2:has-text("Per class") + h3 + .table-wrap table');
    expect(await perClass.locator('thead th').allTextContents()).to.deep.equal(['class', 'queries', 'MAP@R default.onnx', 'MAP@R other.onnx', 'Δ other.onnx']);
    // The changed class differs most: it heads the table.
    expect(await perClass.locator('tbody tr').first().locator('td').first().textContent()).to.equal(a.runs[0]!.metrics.perClass[0]!.label);
    // 4 random queries, each with a row per model; thumbnails decoded from the dataset opened again.
    expect(await page.locator('.example-query').count()).to.equal(4);
    expect(await page.locator('.example-query .example[data-model="other.onnx"]').count()).to.equal(4);
    expect(await page.locator('.no-thumb').count()).to.equal(0);
    expect(await page.evaluate("[...document.querySelectorAll('img')].every((img) => img.complete && img.naturalWidth > 0)")).to.equal(true);
    expect(requests).to.deep.equal([]);
    await page.close();
  });

  it('refuses reports of another protocol, split or data with one line naming each difference', async () => {
    const a = readJson(path.join(evalA, 'report.json'));
    const variant = (name: string, change: (run: Report['runs'][number]) => void): string => {
      const report = otherModel(a, `${name}.onnx`);
      change(report.runs[0]!);
      const file = path.join(tmp, name, 'report.json');
      writeJson(file, { ...report, ...report.runs[0] });
      return file;
    };
    const first = path.join(evalA, 'report.json');
    const ks = variant('ks', (run) => (run.parameters.ks = [1, 10]));
    let res = await runCliCaptured(['compare', first, ks]);
    expect(res.code).to.equal(2);
    expect(res.stderr).to.equal(`dml: Cannot compare ${ks} with ${first}: their protocol (ks [1,10] against [1,2,4,8]) differ; compare reports of one dataset, split and protocol\n`);
    const split = variant('split', (run) => (run.dataset.trainClasses = ['bag']));
    res = await runCliCaptured(['compare', first, split]);
    expect(res.stderr).to.equal(`dml: Cannot compare ${split} with ${first}: their split (trainClasses ["bag"] against []) differ; compare reports of one dataset, split and protocol\n`);
    const data = variant('data', (run) => {
      run.dataset.galleryCount = 500;
      run.parameters.kmeans.seed = 3;
    });
    res = await runCliCaptured(['compare', first, data]);
    expect(res.stderr).to.include('their data (gallery 500 against 600), protocol (kmeans.seed 3 against 0) differ;');
    expect(res.stderr.split('\n')).to.have.length(2);
    expect(res.stdout).to.equal('');
    // The same images elsewhere (another manifest hash and spec): compared, with a warning.
    const moved = variant('moved', (run) => {
      run.dataset.manifestHash = 'f'.repeat(64);
      run.dataset.spec = 'folder:/elsewhere/default';
    });
    res = await runCliCaptured(['compare', first, moved]);
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stderr).to.match(/^warning: .*moved\/report\.json: its dataset "folder:\/elsewhere\/default" \(manifest ffffffffffff\) is not byte for byte the one of/);
  });

  it('names runs apart when two reports hold the same model name; refuses old formats, a mix of runs and reports, and an --out that is an input', async () => {
    const a = readJson(path.join(evalA, 'report.json'));
    const copy = path.join(tmp, 'evalC', 'report.json');
    writeJson(copy, a);
    const { report } = combineReports([{ source: path.join(evalA, 'report.json'), report: a }, { source: copy, report: a }], ['dml', 'compare']);
    expect(report.runs.map((r) => r.name)).to.deep.equal(['evalA/default.onnx', 'evalC/default.onnx']);
    expect(runDifferences(a.runs[0]!, a.runs[0]!)).to.deep.equal([]);

    const old = path.join(tmp, 'old', 'report.json');
    writeJson(old, { ...a, format: 'dmlkit.report/4' });
    let res = await runCliCaptured(['compare', path.join(evalA, 'report.json'), old]);
    expect(res.stderr).to.equal(`dml: ${old} is a dmlkit.report/4 report; expected a dmlkit.report/5 report.json of dml eval (evaluate again with this version to write one)\n`);
    const run = path.join(tmp, 'fake-run');
    writeJson(path.join(run, 'config.json'), {});
    writeFileSync(path.join(run, 'log.jsonl'), '');
    res = await runCliCaptured(['compare', evalA, run]);
    expect(res.code).to.equal(2);
    expect(res.stderr).to.equal(`dml: dml compare: compare training runs with training runs, or evaluation reports with reports; got runs (${run}) and reports (${evalA})\n`);
    res = await runCliCaptured(['compare', evalA, copy, '--out', evalA]);
    expect(res.stderr).to.equal(`dml: --out ${evalA} is the folder of the input ${evalA}, whose report would be replaced; give another folder\n`);
    res = await runCliCaptured(['compare', evalA]);
    expect(res.stderr).to.equal(`dml: dml compare: expected at least two inputs to compare, got 1 (${evalA})\n`);
  });

  it('overlays two training runs: one colour per run in every chart, the summary rows, the config fields that differ', async () => {
    const runs: string[] = [];
    for (const [name, overrides] of [
      ['slow', { optimizer: { kind: 'adam', learningRate: 0.001, weightDecay: 0 } }],
      ['fast', { epochs: undefined, steps: 6, validation: { everySteps: 3 } }],
    ] as const) {
      const out = path.join(tmp, 'runs', name);
      const config = path.join(tmp, `${name}.json`);
      writeFileSync(config, JSON.stringify(tinyTrainConfig(out, overrides)));
      const res = await runCliCaptured(['--quiet', 'train', '--config', config]);
      expect(res.code, res.stderr).to.equal(0);
      runs.push(out);
    }
    const out = path.join(tmp, 'runs-compared');
    const res = await runCliCaptured(['compare', ...runs, '--out', out]);
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stdout.split('\n').filter((l) => /^\| (slow|fast) \| finished \| cpu \|/.test(l))).to.have.length(2);
    const { page, requests } = await open(path.join(out, 'report.html'));
    expect(await page.evaluate("[...document.querySelectorAll('[data-chart]')].map((c) => c.dataset.chart)")).to.deep.equal(['loss', 'validation-R@1', 'validation-MAP@R', 'learning-rate', 'valid-fraction']);
    // Every chart: one line (or lone dot) per run, in the run's colour, named in the legend.
    const colours = (await page.evaluate(`[...document.querySelectorAll('[data-chart]')].map((c) => [...c.querySelectorAll('.legend')].map((g) => g.textContent.trim() + ' ' + g.querySelector('rect').getAttribute('fill')))`)) as string[][];
    for (const legend of colours) expect(legend.map((l) => l.replace(/, .*(#\w+)$/, ' $1'))).to.deep.equal(['slow #1f77b4', 'fast #d62728']);
    const stepsOfLoss = (await page.evaluate(`[...document.querySelectorAll('[data-chart="loss"] polyline')].map((p) => p.getAttribute('points').split(' ').length)`)) as number[];
    expect(stepsOfLoss[1]).to.equal(6);
    const differences = (await page.locator('.config tbody tr td:first-child').allTextContents()).sort();
    expect(differences).to.include.members(['epochs', 'steps', 'optimizer.learningRate', 'optimizer.weightDecay', 'validation.everySteps']);
    expect(differences).to.not.include('out');
    mkdirSync('runs/spec-artefacts', { recursive: true });
    await page.screenshot({ path: 'runs/spec-artefacts/compare-runs.png', fullPage: true });
    expect(requests).to.deep.equal([]);
    await page.close();
  });

  it("eval's progress lines name the model they belong to", () => {
    const labels: string[] = [];
    const progress = runProgress('resnet.onnx', (label) => {
      labels.push(label);
      return { update: () => undefined, stop: () => undefined };
    });
    progress('embed', 1, 2);
    progress('embed', 2, 2);
    progress('search', 1, 1);
    progress('embed', 1, 2); // a new stage of the same name after the first ended
    expect(labels).to.deep.equal(['embed (resnet.onnx)', 'search (resnet.onnx)', 'embed (resnet.onnx)']);
  });
});
