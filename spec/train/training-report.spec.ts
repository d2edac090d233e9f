/**
 * @file The training run's report.html: loss and validation charts with axes fitted to the values and
 * legends under the plots, the scatter diagram with a legend and a range fitted to its points, the
 * epochs table; then a real one-epoch `dml train` run's page opened in headless Chromium (skipped only
 * without /usr/bin/chromium): self-contained, the scatter's points spread over the plot, fits 390 px;
 * an epoch's scatter files and its progress line.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { writeScatterFiles } from '../../lib/train/scatter-files.js';
import { tripletScatter } from '../../lib/train/scatter.js';
import { lossChartSvg, trainingReportHtml, validationChartSvg } from '../../lib/train/training-html.js';
import type { EpochRecord } from '../../lib/train/epoch-record.js';
import { describeEpoch } from '../../lib/train/trainer.js';
import { launchChromiumOrSkip } from '../helpers/chromium.js';
import { runCliCaptured } from '../helpers/run-cli.js';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';
import { makeTempDir } from '../image/image-fixtures.js';

const record = (epoch: number, loss: number | null, recall1: number, mapAtR: number, nmi: number): EpochRecord => ({
  epoch,
  loss,
  validFraction: loss === null ? null : 0.9,
  updates: 10,
  steps: 10,
  learningRate: 0.01,
  seconds: 1,
  stepsPerSecond: loss === null ? null : 10,
  validation: { recall: { '1': recall1, '4': Math.min(1, recall1 + 0.2) }, mapAtR, nmi, nmiCurve: [], nmiPlus: null, queryCount: 100 },
  scatter: { correctFraction: 0.5 + epoch / 10, points: 100 },
});
const history = [record(0, null, 0.5, 0.2, 0.3), record(1, 0.9, 0.6, 0.25, 0.35), record(2, 0.6, 0.7, 0.3, 0.4), record(3, 0.45, 0.75, 0.32, 0.42)];

describe('the training report page', function () {
  this.timeout(120_000);

  it('loss and validation charts fitted to the values, the scatter fitted to its points, the epochs table', () => {
    const loss = lossChartSvg(history);
    // Losses 0.45 to 0.9: axis 0.4 to 1 in steps of 0.1 (epoch 0 has no loss and no point).
    expect([...loss.matchAll(/dominant-baseline="middle">([\d.]+)<\/text>/g)].map((m) => m[1])).to.deep.equal(['0.40', '0.50', '0.60', '0.70', '0.80', '0.90', '1']);
    expect(loss.match(/<circle /g)).to.have.length(3);
    const validation = validationChartSvg(history);
    expect(validation).to.include('value (axis 0.00 to 1.00)');
    expect([...validation.matchAll(/<g class="legend">[^]*?>([^<]+)<\/text><\/g>/g)].map((m) => m[1])).to.deep.equal(['R@1', 'R@4', 'MAP@R', 'NMI']);
    const points = Array.from({ length: 50 }, (_, i) => ({ x: 0.8 + i / 500, y: 0.7 + i / 400 }));
    const html = trainingReportHtml({ out: 'runs/<x>', backend: 'cpu', history, scatter: { epoch: 3, scatter: { points, correctFraction: 1, sampled: 50, bins: 10, positiveCounts: [], negativeCounts: [] } } });
    expect(html).to.include('Run <code>runs/&lt;x&gt;</code> on the <code>cpu</code> backend, 3 epoch(s)');
    expect(html).to.include('Triplet scatter, epoch 3: 100.00% below the diagonal');
    // The scatter's y axis: 0.68 to 0.84 (the points' y span 0.7 to 0.8225), not -1 to 1.
    const scatter = html.slice(html.indexOf('Triplet scatter'));
    expect([...scatter.matchAll(/text-anchor="end" dominant-baseline="middle">([-\d.]+)<\/text>/g)].map((m) => m[1])).to.deep.equal(['0.68', '0.70', '0.72', '0.74', '0.76', '0.78', '0.80', '0.82', '0.84']);
    expect(scatter).to.include('anchors, y &lt; x');
    expect(html).to.include('<tr><td>3</td><td class="num">0.4500</td><td class="num">90.00</td><td class="num">10.00</td><td class="num">0.01</td><td class="num">75.00</td><td class="num">95.00</td><td class="num">32.00</td><td class="num">42.00</td><td class="num">80.00</td></tr>');
  });

  describe('of a real run, in headless Chromium', () => {
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

    it('dml train writes report.html: three charts, legends under the plots, the scatter spread over its plot, 390 px wide', async () => {
      const out = path.join(tmp, 'run');
      const config = path.join(tmp, 'train.json');
      writeFileSync(config, JSON.stringify(tinyTrainConfig(out)));
      const res = await runCliCaptured(['train', '--config', config]);
      expect(res.code, res.stderr).to.equal(0);
      const file = path.join(out, 'report.html');
      expect(existsSync(file)).to.equal(true);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const requests: string[] = [];
      await page.route('**/*', async (route) => {
        const url = route.request().url();
        if (url.startsWith('file:') || url.startsWith('data:')) return route.continue();
        requests.push(url);
        return route.abort();
      });
      await page.goto(`file://${file}`);
      expect(await page.locator('.charts svg').count()).to.equal(3);
      expect(await page.locator('table tbody tr').count()).to.equal(2); // epochs 0 and 1
      // Every legend sits below its chart's plot frame.
      expect(
        await page.evaluate(`[...document.querySelectorAll('.charts svg')].every((svg) => {
          const frame = [...svg.querySelectorAll('rect')].find((r) => r.getAttribute('fill') === 'none').getBoundingClientRect();
          return [...svg.querySelectorAll('.legend')].every((g) => g.getBoundingClientRect().top >= frame.bottom);
        })`),
      ).to.equal(true);
      // The scatter's points cover more than a third of its plot in both directions (not crowded in a corner).
      const spread = (await page.evaluate(`(() => {
        const svg = document.querySelectorAll('.charts svg')[2];
        const frame = [...svg.querySelectorAll('rect')].find((r) => r.getAttribute('fill') === 'none').getBoundingClientRect();
        const dots = [...svg.querySelectorAll('circle')].filter((c) => !c.closest('.legend')).map((c) => c.getBoundingClientRect());
        const xs = dots.map((d) => d.left), ys = dots.map((d) => d.top);
        return [dots.length, (Math.max(...xs) - Math.min(...xs)) / frame.width, (Math.max(...ys) - Math.min(...ys)) / frame.height];
      })()`)) as [number, number, number];
      expect(spread[0]).to.be.above(20);
      expect(spread[1]).to.be.above(1 / 3);
      expect(spread[2]).to.be.above(1 / 3);
      mkdirSync('runs/spec-artefacts', { recursive: true });
      await page.screenshot({ path: 'runs/spec-artefacts/training-report.png', fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).to.equal(true);
      expect(requests).to.deep.equal([]);
      await page.close();
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
