/**
 * Browser test of report.html: a real evaluation of the default model on the embedded images, its
 * page (with the examples' thumbnails) opened in headless Chromium (Debian package `chromium`, driven
 * by playwright-core) with every network request refused. Checks that the page needs nothing outside
 * itself, that the tables are real tables that fit the page, that every thumbnail decodes and that the
 * examples are framed by correctness; a screenshot is left in runs/spec-artefacts/report.png.
 * Skipped, with a message saying why, only when /usr/bin/chromium is not installed.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { launchChromiumOrSkip } from '../helpers/chromium.js';
import { openDataset } from '../../lib/data/open-dataset.js';
import { evaluate } from '../../lib/facade.js';
import { reportHtml } from '../../lib/report/html.js';
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

  it('is self-contained, with real tables, decoded thumbnails and examples framed by correctness', async () => {
    const data = 'folder:data/default';
    const report = await evaluate({ model: 'models/default.onnx', data, clusterCounts: ['1x'], device: 'cpu', workers: 0 });
    const manifest = await openDataset(data);
    const thumbnails = await exampleThumbnails(report, new Map(manifest.items.map((it) => [it.id, it.source])));
    const file = path.join(tmp, 'report.html');
    writeFileSync(file, reportHtml(report, { thumbnails }));

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const requests: string[] = [];
    await page.route('**/*', async (route) => {
      const url = route.request().url();
      if (url.startsWith('file:') || url.startsWith('data:')) return route.continue();
      requests.push(url);
      return route.abort();
    });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`file://${file}`);

    // The metrics, worst-classes and parameters tables are real tables, none wider than the page.
    expect(await page.locator('table').count()).to.equal(3);
    expect(await page.locator('pre').count()).to.equal(0);
    expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).to.equal(true);
    expect(await page.locator('table').first().locator('tbody tr td').first().textContent()).to.equal('default.onnx');

    // 4 failures and 4 successes, each a query and 5 neighbours; every thumbnail decoded (28 px source, shown 4x).
    expect(await page.locator('.example.failure').count()).to.equal(4);
    expect(await page.locator('.example.success').count()).to.equal(4);
    const images = page.locator('.example img');
    expect(await images.count()).to.equal(8 * 6);
    expect(await page.evaluate("[...document.querySelectorAll('.example img')].every((img) => img.complete && img.naturalWidth === 96 && img.naturalHeight === 96)")).to.equal(true);
    expect(await page.locator('.no-thumb').count()).to.equal(0);
    // Frames: the first neighbour of a failure is red, of a success green.
    const border = (selector: string): Promise<unknown> => page.evaluate(`getComputedStyle(document.querySelector('${selector}')).borderTopColor`);
    expect(await border('.example.failure figure:nth-child(2) img')).to.equal('rgb(192, 57, 43)');
    expect(await border('.example.success figure:nth-child(2) img')).to.equal('rgb(46, 139, 58)');
    expect(await page.locator('.example.failure figure:nth-child(2) figcaption').first().textContent()).to.match(/^✗ /);

    mkdirSync(ARTEFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTEFACTS, 'report.png'), fullPage: true });
    expect(requests).to.deep.equal([]);
    expect(errors).to.deep.equal([]);
    await page.close();
  });
});
