/**
 * Browser test of report.html: a real evaluation of the default model on the embedded images, its
 * page (with the examples' thumbnails) opened in headless Chromium (Debian package `chromium`, driven
 * by playwright-core) with every network request refused. Checks that the page needs nothing outside
 * itself, that the tables are real tables that fit the page, that every thumbnail decodes, that two
 * models show the same random queries side by side and the examples are framed by correctness, that
 * chart legends sit below the curves, and that the page fits a 390 px phone; screenshots are left in
 * runs/spec-artefacts/report.png and report-390.png.
 * Skipped, with a message saying why, only when /usr/bin/chromium is not installed.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { launchChromiumOrSkip, openOffline } from '../helpers/chromium.js';
import { openDataset } from '../../lib/data/open-dataset.js';
import { evaluate } from '../../lib/facade.js';
import { reportHtml } from '../../lib/report/sections.js';
import { buildReport } from '../../lib/report/report.js';
import { exampleThumbnails } from '../../lib/report/thumbnails.js';
import { makeTempDir } from '../image/image-fixtures.js';

const ARTEFACTS = path.resolve('runs/spec-artefacts');

describe('report.html in headless Chromium', function () {
  this.timeout(60_000);
  let browser: Browser;
  let tmp: string;

  before(async function () {
    browser = await launchChromiumOrSkip(this);
    tmp = makeTempDir('dml-report-page-');
  });
  after(async () => {
    await browser?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('is self-contained, with real tables, decoded thumbnails, the same random queries for both models, and fits 390 px', async () => {
    const data = 'folder:data/default';
    const report = await evaluate({ model: 'models/default.onnx', data, clusterCounts: ['1x'], device: 'cpu', workers: 0 });
    const run = report.runs[0]!;
    // A second "model": the same run under another name, so the page lines two runs up.
    const two = buildReport([run, { ...run, name: 'other.onnx' }], ['dml', 'eval']);
    const manifest = await openDataset(data);
    const thumbnails = await exampleThumbnails(two, new Map(manifest.items.map((it) => [it.id, it.source])));
    const file = path.join(tmp, 'report.html');
    writeFileSync(file, reportHtml(two, { thumbnails }));

    const { page, requests } = await openOffline(browser, file);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.reload();

    // The metrics, AccuracyCalculator, per-class comparison, models, confusions and parameters tables are real tables, none wider than the page.
    expect(await page.locator('table').count()).to.equal(6);
    expect(await page.locator('pre').count()).to.equal(0);
    expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).to.equal(true);
    expect(await page.locator('table').first().locator('tbody tr td').first().textContent()).to.equal('default.onnx');
    expect((await page.locator('table').nth(1).locator('thead th').allTextContents()).slice(0, 3)).to.deep.equal(['model', 'precision_at_1', 'r_precision']);
    expect(await page.locator('table').nth(2).locator('thead th').allTextContents()).to.deep.equal(['class', 'queries', 'MAP@R default.onnx', 'MAP@R other.onnx', 'Δ other.onnx']);

    // 4 random queries, each shown once with a row of 5 neighbours per model; then 4 worst queries per model.
    expect(await page.locator('.example-query').count()).to.equal(4);
    expect(await page.locator('.example-query > figure.query').count()).to.equal(4);
    expect(await page.locator('.example-query .example[data-model="default.onnx"]').count()).to.equal(4);
    expect(await page.locator('.example-query .example[data-model="other.onnx"]').count()).to.equal(4);
    expect(await page.locator('.example.worst').count()).to.equal(8);
    const images = page.locator('.example-query img, .example img');
    expect(await images.count()).to.equal(4 * (1 + 2 * 5) + 8 * 6);
    expect(await page.evaluate("[...document.querySelectorAll('img')].every((img) => img.complete && img.naturalWidth === 96 && img.naturalHeight === 96)")).to.equal(true);
    expect(await page.locator('.no-thumb').count()).to.equal(0);
    // Frames: the first neighbour of a failure is red, of a success green.
    const border = (selector: string): Promise<unknown> => page.evaluate(`getComputedStyle(document.querySelector('${selector}')).borderTopColor`);
    expect(await border('.example.failure .example-row figure:nth-child(1) img')).to.equal('rgb(192, 57, 43)');
    expect(await border('.example.success .example-row figure:nth-child(1) img')).to.equal('rgb(46, 139, 58)');

    // Charts: the legend sits below the plot area, and the Recall@K axis says it is fitted.
    const legendBelowPlot = await page.evaluate(`[...document.querySelectorAll('.charts svg')].every((svg) => {
      const plot = svg.querySelectorAll('rect')[1].getBoundingClientRect();
      return [...svg.querySelectorAll('.legend')].every((g) => g.getBoundingClientRect().top >= plot.bottom);
    })`);
    expect(legendBelowPlot).to.equal(true);
    expect(await page.locator('.charts svg text').filter({ hasText: /^Recall@K \(axis 0\.70 to 1\.00, fitted to the values\)$/ }).count()).to.equal(1);

    mkdirSync(ARTEFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTEFACTS, 'report.png'), fullPage: true });

    // A phone: nothing wider than 390 px, text kept off the edges, charts scaled down.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).to.equal(true);
    const left = (await page.evaluate("document.querySelector('h1').getBoundingClientRect().left")) as number;
    expect(left).to.be.at.least(8);
    expect(await page.evaluate("[...document.querySelectorAll('.charts svg')].every((svg) => svg.getBoundingClientRect().right <= window.innerWidth)")).to.equal(true);
    await page.screenshot({ path: path.join(ARTEFACTS, 'report-390.png'), fullPage: true });
    expect(requests).to.deep.equal([]);
    expect(errors).to.deep.equal([]);
    await page.close();
  });
});
