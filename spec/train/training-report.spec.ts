/**
 * @file The training run's dashboard (report.html, lib/train/training-html.ts) and its charts
 * (training-charts.ts) from a run folder read back (run-log.ts): the smoothing and bucketing against
 * their formulas, log.jsonl parsed (cut lines, old lines without globalStep), the page of a made-up
 * run; real `steps` and `epochs` runs of `dml train` opened in headless Chromium (skipped only without
 * /usr/bin/chromium): every chart, the scatter diagrams and histograms of a `steps` run, the resolved
 * config, self-contained, fits 390 px; the page rewritten at each validation point while the run
 * trains, and marked stopped when the run fails; an epoch's scatter files and its progress line.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { parseTrainConfig } from '../../lib/train/config.js';
import { parseRunLog, type RunFolder } from '../../lib/train/run-log.js';
import { writeScatterFiles } from '../../lib/train/scatter-files.js';
import { tripletScatter } from '../../lib/train/scatter.js';
import { bucketMeans, emaSmoothed, stepLossChartSvg } from '../../lib/train/training-charts.js';
import { flattenConfig, spreadPick, trainingReportHtml, writeTrainingReportHtml } from '../../lib/train/training-html.js';
import type { EpochRecord } from '../../lib/train/epoch-record.js';
import { describeEpoch, train } from '../../lib/train/trainer.js';
import { launchChromiumOrSkip, openOffline } from '../helpers/chromium.js';
import { runCliCaptured } from '../helpers/run-cli.js';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';
import { makeTempDir } from '../image/image-fixtures.js';

const record = (epoch: number, globalStep: number, loss: number | null, recall1: number): EpochRecord => ({
  epoch,
  globalStep,
  loss,
  validFraction: loss === null ? null : 0.9,
  updates: 10,
  steps: epoch === 0 ? 0 : 10,
  learningRate: 0.01,
  seconds: epoch === 0 ? 0 : 2,
  stepsPerSecond: loss === null ? null : 5,
  validation: { recall: { '1': recall1, '4': Math.min(1, recall1 + 0.2) }, mapAtR: recall1 / 2, nmi: 0.3, nmiCurve: [], nmiPlus: null, queryCount: 100 },
  scatter: { correctFraction: 0.5 + epoch / 10, points: 50 },
});

/** A made-up `epochs` run of 3 epochs of 10 steps (losses 1/step), validated at epochs 0-3, with scatter files at epochs 0 and 3. */
function madeUpRun(): RunFolder {
  const steps = Array.from({ length: 30 }, (_, i) => ({ epoch: Math.floor(i / 10) + 1, globalStep: i + 1, loss: i === 4 ? null : 1 / (i + 1), validCount: 27, totalCount: 30, learningRate: 0.01 * (1 - i / 30) }));
  const points = Array.from({ length: 50 }, (_, i) => ({ x: 0.8 + i / 500, y: 0.7 + i / 400 }));
  const scatter = { points, correctFraction: 1, sampled: 50, bins: 4, positiveCounts: [0, 0, 1, 9], negativeCounts: [0, 2, 6, 2] };
  return {
    dir: 'runs/<x>',
    config: { steps: undefined, epochs: 3, sampler: { kind: 'filled', batchSize: 30 }, optimizer: { kind: 'adam', learningRate: 0.01 }, data: { trainClasses: ['a', 'b'] } },
    steps,
    periods: [record(0, 0, null, 0.5), record(1, 10, 0.9, 0.6), record(2, 20, 0.6, 0.75), record(3, 30, 0.45, 0.7)],
    scatters: [
      { unit: 'epoch', index: 0, scatter },
      { unit: 'epoch', index: 3, scatter: { ...scatter, correctFraction: 0.8 } },
    ],
    finished: { backend: 'cpu' },
  };
}

/** The texts of the tick labels under the x axis of a line chart. */
const xTicks = (svg: string): string[] => [...svg.matchAll(/<text x="[\d.]+" y="(\d+)" text-anchor="middle">([^<]+)<\/text>/g)].filter((m) => m[1] === '362').map((m) => m[2] as string);

describe('the training report page', function () {
  this.timeout(120_000);

  it('smooths as TensorBoard (debiased EMA, nulls skipped) and buckets long runs into means', () => {
    // w = 0.5: s1 = 0.5, shown 0.5 / (1 - 0.5) = 1; s2 = 0.25 + 1.5 = 1.75, shown 1.75 / 0.75; s3 = 0.875 + 1 = 1.875, shown 1.875 / 0.875.
    const smoothed = emaSmoothed([1, null, 3, 2], 0.5);
    expect(smoothed[0]).to.equal(1);
    expect(smoothed[1]).to.equal(null);
    expect(smoothed[2]).to.be.closeTo(1.75 / 0.75, 1e-12);
    expect(smoothed[3]).to.be.closeTo(1.875 / 0.875, 1e-12);
    const points = Array.from({ length: 2500 }, (_, i) => ({ x: i + 1, y: i % 3 === 0 ? Number.NaN : i }));
    const { points: buckets, size } = bucketMeans(points, 1000);
    expect(size).to.equal(3);
    expect(buckets).to.have.length(834);
    // Bucket 1 holds x 4..6, y 3 (NaN, left out), 4, 5: mean 4.5 at x 6.
    expect(buckets[1]).to.deep.equal({ x: 6, y: 4.5 });
    expect(buckets.at(-1)).to.deep.equal({ x: 2500, y: Number.NaN }); // its only y (2499) is a NaN
    expect(bucketMeans(points.slice(0, 10), 1000).points).to.have.length(10);
  });

  it('reads log.jsonl: step and validation lines in order, a line cut short skipped, old step lines numbered', () => {
    const text = [
      JSON.stringify({ type: 'epoch', epoch: 0, loss: null }),
      JSON.stringify({ type: 'step', epoch: 1, step: 1, loss: 0.5, validCount: 3, totalCount: 4, learningRate: 0.1 }),
      JSON.stringify({ type: 'step', epoch: 1, step: 2, loss: null, validCount: 0, totalCount: 4, learningRate: 0.1 }),
      JSON.stringify({ type: 'validation', epoch: 1, globalStep: 2, loss: 0.5 }),
      '{"type":"step","epoch":1,"st',
      '',
    ].join('\n');
    const { steps, periods } = parseRunLog(text);
    expect(steps.map((s) => [s.globalStep, s.loss, s.validCount])).to.deep.equal([[1, 0.5, 3], [2, null, 0]]);
    expect(periods.map((p) => [p.epoch, p.globalStep])).to.deep.equal([[0, undefined], [1, 2]]);
  });

  it('the page of a made-up run: summary, per-step charts with round step ticks, the validation table, histograms, the config', () => {
    const run = madeUpRun();
    const html = trainingReportHtml(run, { state: 'finished' });
    expect(html).to.not.include('http-equiv="refresh"');
    expect(html).to.include('<tr><td>state</td><td>finished</td></tr>');
    expect(html).to.include('<tr><td>backend</td><td>cpu</td></tr>');
    expect(html).to.include('<tr><td>progress</td><td>epoch 3 of 3 (step 30)</td></tr>');
    // Best R@1 0.75 at epoch 2 = step 20; throughput 30 steps in 6 s = 5 steps/s, x 30 images.
    expect(html).to.include('<tr><td>best R@1</td><td>75.00 at step 20 (epoch 2)</td></tr>');
    expect(html).to.include('<tr><td>throughput</td><td>5.00 steps/s, 150.0 images/s (batch 30)</td></tr>');
    expect(html).to.include('<tr><td>3</td><td class="num">30</td><td class="num">0.4500</td><td class="num">90.00</td><td class="num">5.00</td><td class="num">0.01</td><td class="num">70.00</td><td class="num">90.00</td><td class="num">35.00</td><td class="num">30.00</td><td class="num">80.00</td></tr>');
    // The loss chart: 29 raw points (step 5 had no valid tuple) and the smoothed line; x ticks every 5 steps, not one per step.
    const loss = stepLossChartSvg([{ name: 'run', run }]);
    expect(loss.match(/<polyline /g)).to.have.length(2);
    expect(loss).to.include('stroke-opacity="0.35"');
    expect(xTicks(loss)).to.deep.equal(['5', '10', '15', '20', '25', '30']);
    expect(loss.match(/<circle /g)).to.equal(null);
    expect(html).to.include('Triplet scatter, step 30: 80.00% below the diagonal');
    expect(html).to.include('Triplet scatter, step 0: 100.00% below the diagonal');
    expect(html).to.include('Pair similarities, step 30');
    expect(html).to.include('<tr><td>data.trainClasses</td><td>[&quot;a&quot;,&quot;b&quot;]</td></tr>');
    expect(flattenConfig({ a: { b: 1, c: [1, 2] }, d: 'x', e: {} })).to.deep.equal([['a.b', '1'], ['a.c', '[1,2]'], ['d', 'x'], ['e', '{}']]);
    expect(spreadPick([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 4)).to.deep.equal([1, 4, 7, 10]);
    const training = trainingReportHtml({ dir: run.dir, config: run.config, steps: run.steps, periods: run.periods, scatters: run.scatters }, { state: 'training', backend: 'onnx', provider: 'cpu' });
    expect(training).to.include('<meta http-equiv="refresh" content="30">');
    expect(training).to.include('<tr><td>backend</td><td>onnx (cpu)</td></tr>');
  });

  it('is rewritten at each validation point while the run trains, reloading itself until the end', async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'dml-dashboard-'));
    try {
      const out = path.join(tmp, 'run');
      const pages: string[] = [];
      const { epochs: _epochs, ...raw } = tinyTrainConfig(out);
      const config = parseTrainConfig({ ...raw, steps: 6, validation: { everySteps: 2, ks: [1] } }, 'spec');
      await train(config, {
        onValidation: async ({ history: _history, ...point }) => {
          await writeTrainingReportHtml(point.out, { state: 'training', ...point });
          pages.push(readFileSync(path.join(out, 'report.html'), 'utf8'));
        },
      });
      // Validation points at steps 0, 2, 4, 6: each page holds the points so far, and the steps logged.
      expect(pages).to.have.length(4);
      pages.forEach((page, i) => {
        expect(page).to.include('<meta http-equiv="refresh" content="30">');
        expect(page).to.include(`${2 * i} step(s) logged, ${i + 1} validation point(s)`);
        expect(page).to.include(`<tr><td>progress</td><td>step ${2 * i} of 6</td></tr>`);
      });
      await writeTrainingReportHtml(out);
      expect(readFileSync(path.join(out, 'report.html'), 'utf8')).to.not.include('refresh');
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  describe('of real runs, in headless Chromium', () => {
    let browser: Browser;
    let tmp: string;
    before(async function () {
      browser = await launchChromiumOrSkip(this);
      tmp = makeTempDir('dml-train-report-');
    });
    after(async () => {
      await browser?.close();
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    });

    /** Runs dml train with the tiny config and `overrides`, opens its report.html with every network request refused. */
    async function trainAndOpen(name: string, overrides: Record<string, unknown>): Promise<{ page: Page; requests: string[]; out: string }> {
      const out = path.join(tmp, name);
      const config = path.join(tmp, `${name}.json`);
      writeFileSync(config, JSON.stringify(tinyTrainConfig(out, overrides)));
      const res = await runCliCaptured(['train', '--config', config]);
      expect(res.code, res.stderr).to.equal(0);
      const file = path.join(out, 'report.html');
      expect(existsSync(file)).to.equal(true);
      return { ...(await openOffline(browser, file)), out };
    }

    const charts = (page: Page): Promise<string[]> => page.evaluate("[...document.querySelectorAll('[data-chart]')].map((c) => c.dataset.chart)") as Promise<string[]>;
    const legendsBelowPlots = (page: Page): Promise<unknown> =>
      page.evaluate(`[...document.querySelectorAll('[data-chart] svg')].every((svg) => {
        const frame = [...svg.querySelectorAll('rect')].find((r) => r.getAttribute('fill') === 'none').getBoundingClientRect();
        return [...svg.querySelectorAll('.legend')].every((g) => g.getBoundingClientRect().top >= frame.bottom);
      })`);

    it('a steps run: the loss of every step raw and smoothed, the learning rate, the scatter diagrams and histograms, the config; fits 390 px', async () => {
      const { page, requests } = await trainAndOpen('steps', { epochs: undefined, steps: 6, validation: { everySteps: 3, ks: [1, 2] }, optimizer: { kind: 'adam', learningRate: 0.01, schedule: { kind: 'cosine' } } });
      expect(await charts(page)).to.deep.equal(['loss', 'learning-rate', 'valid-fraction', 'validation', 'scatter-0', 'scatter-6', 'histogram-0', 'histogram-3', 'histogram-6']);
      expect(await page.locator('body').textContent()).to.not.include('No triplet scatter diagram');
      // 6 steps: the raw and the smoothed loss each a line of 6 points; the learning rate falls along the cosine.
      const lines = (await page.evaluate(`[...document.querySelectorAll('[data-chart="loss"] polyline')].map((p) => p.getAttribute('points').split(' ').length)`)) as number[];
      expect(lines).to.deep.equal([6, 6]);
      const lr = (await page.evaluate(`[...document.querySelectorAll('[data-chart="learning-rate"] polyline')][0].getAttribute('points').split(' ').map((p) => Number(p.split(',')[1]))`)) as number[];
      expect(lr).to.have.length(6);
      for (let i = 1; i < lr.length; i++) expect(lr[i] as number).to.be.above(lr[i - 1] as number); // SVG y grows downwards: a falling rate
      expect(await page.locator('table').nth(1).locator('tbody tr').count()).to.equal(3); // steps 0, 3, 6
      expect(await page.locator('table').nth(1).locator('tbody tr').last().locator('td').nth(1).textContent()).to.equal('6');
      const summary = await page.locator('table').first().textContent();
      expect(summary).to.include('step 6 of 6');
      expect(summary).to.match(/throughput[\d.]+ steps\/s, [\d.]+ images\/s \(batch 30\)/);
      expect(await page.locator('.config').textContent()).to.include('optimizer.schedule.kind');
      expect(await legendsBelowPlots(page)).to.equal(true);
      mkdirSync('runs/spec-artefacts', { recursive: true });
      await page.screenshot({ path: 'runs/spec-artefacts/training-report-steps.png', fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).to.equal(true);
      expect(requests).to.deep.equal([]);
      await page.close();
    });

    it('an epochs run: validation against the step, the epochs in the table, the scatter of epoch 2 at its step', async () => {
      const { page, requests, out } = await trainAndOpen('epochs', { epochs: 2 });
      const log = parseRunLog(readFileSync(path.join(out, 'log.jsonl'), 'utf8'));
      const lastStep = log.steps.at(-1)?.globalStep as number;
      expect(await charts(page)).to.deep.equal(['loss', 'learning-rate', 'valid-fraction', 'validation', 'scatter-0', `scatter-${lastStep}`, 'histogram-0', `histogram-${log.periods[1]?.globalStep}`, `histogram-${lastStep}`]);
      expect(await page.locator('table').nth(1).locator('tbody tr td:first-child').allTextContents()).to.deep.equal(['0', '1', '2']);
      expect(await page.locator('table').first().textContent()).to.include(`epoch 2 of 2 (step ${lastStep})`);
      expect((await page.locator('[data-chart="validation"] .legend').allTextContents()).map((t) => t.trim())).to.deep.equal(['R@1', 'R@2', 'R@4', 'R@8', 'MAP@R', 'NMI', 'scatter: anchors below the diagonal']);
      // The scatter's points cover more than a third of its plot in both directions (not crowded in a corner).
      const spread = (await page.evaluate(`(() => {
        const svg = document.querySelector('[data-chart="scatter-${lastStep}"] svg');
        const frame = [...svg.querySelectorAll('rect')].find((r) => r.getAttribute('fill') === 'none').getBoundingClientRect();
        const dots = [...svg.querySelectorAll('circle')].filter((c) => !c.closest('.legend')).map((c) => c.getBoundingClientRect());
        const xs = dots.map((d) => d.left), ys = dots.map((d) => d.top);
        return [dots.length, (Math.max(...xs) - Math.min(...xs)) / frame.width, (Math.max(...ys) - Math.min(...ys)) / frame.height];
      })()`)) as [number, number, number];
      expect(spread[0]).to.be.above(20);
      expect(spread[1]).to.be.above(1 / 3);
      expect(spread[2]).to.be.above(1 / 3);
      expect(await legendsBelowPlots(page)).to.equal(true);
      expect(requests).to.deep.equal([]);
      await page.close();
    });

    it('a run that fails after its first validation says so on its page', async () => {
      // A learning rate this large makes the weights overflow within the first epoch.
      const out = path.join(tmp, 'diverged');
      const config = path.join(tmp, 'diverged.json');
      writeFileSync(config, JSON.stringify(tinyTrainConfig(out, { optimizer: { kind: 'sgd', learningRate: 1e38, weightDecay: 0 } })));
      const res = await runCliCaptured(['train', '--config', config]);
      expect(res.code).to.not.equal(0);
      const html = readFileSync(path.join(out, 'report.html'), 'utf8');
      expect(html).to.not.include('http-equiv="refresh"');
      expect(html).to.match(/<tr><td>state<\/td><td>stopped: Training diverged at epoch 1/);
    });
  });

  describe('an epoch\'s files and progress line', () => {
    it('writes the JSON, SVG and histogram of an epoch\'s triplet scatter', async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'dml-scatter-'));
      try {
        const vectors = Float32Array.from([1, 0, 0.9, 0.1, 0, 1, 0.1, 0.9]);
        const scatter = tripletScatter(vectors, 4, 2, ['a', 'a', 'b', 'b'], { maxPoints: 10, seed: 0 });
        await writeScatterFiles(dir, 7, scatter, 'validation');
        expect(readdirSync(path.join(dir, 'scatter')).sort()).to.deep.equal(['epoch-007-histogram.svg', 'epoch-007.json', 'epoch-007.svg']);
        expect(JSON.parse(readFileSync(path.join(dir, 'scatter', 'epoch-007.json'), 'utf8'))).to.deep.equal(JSON.parse(JSON.stringify(scatter)));
        expect(readFileSync(path.join(dir, 'scatter', 'epoch-007.svg'), 'utf8')).to.include('Triplet scatter, epoch 7 (validation; 100.0% below diagonal)');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("describes an epoch in one progress line, NMI+ only when it was computed", () => {
      const record = { epoch: 3, loss: 0.12345, validFraction: 0.5, updates: 4, steps: 4, learningRate: 1e-3, seconds: 2, stepsPerSecond: 2 };
      expect(describeEpoch(record, 10)).to.equal('epoch 3/10, loss 0.1235, valid 50.0%, 2.00 steps/s');
      const validation = { recall: { '1': 0.5 }, mapAtR: 0.25, nmi: 0.3, nmiCurve: [], nmiPlus: null, queryCount: 4 };
      expect(describeEpoch({ ...record, validation }, 10)).to.equal('epoch 3/10, loss 0.1235, valid 50.0%, 2.00 steps/s, val R@1 50.00, MAP@R 25.00, NMI 30.00');
      expect(describeEpoch({ ...record, validation: { ...validation, nmiPlus: 0.4 } }, 10)).to.match(/NMI 30\.00, NMI\+ 40\.00$/);
    });
  });
});
