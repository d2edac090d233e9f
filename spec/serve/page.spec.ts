/**
 * Browser test of the web page: headless Chromium (Debian package `chromium`) driven by playwright-core
 * uploads an image on the page and reads the neighbour grid. Skipped, with a message saying why, only
 * when /usr/bin/chromium is not installed.
 */
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser } from 'playwright-core';
import { createSearchApp } from '../../lib/serve/app.js';
import { makeTempDir } from '../image/image-fixtures.js';
import { buildFixtureIndex, type FixtureIndex } from './fixtures.js';

const CHROMIUM = '/usr/bin/chromium';

describe('serve/page in headless Chromium', function () {
  this.timeout(60_000);
  let tmp: string;
  let fixture: FixtureIndex;
  let app: FastifyInstance;
  let browser: Browser;
  let url: string;

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.log(`      (skipped: ${CHROMIUM} is not installed; apt-get install chromium to run the browser test)`);
      this.skip();
    }
    tmp = makeTempDir('dml-page-');
    fixture = await buildFixtureIndex(tmp);
    app = await createSearchApp({ dir: fixture.dir, device: 'cpu' });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
    // --no-sandbox: the tests run as root, where Chromium's sandbox refuses to start.
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await app?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('uploads an image and shows the neighbour grid with labels and scores; a gallery click searches by item', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(url);
    await page.waitForSelector('#gallery .card');
    expect(await page.locator('#gallery .card').count()).to.equal(24);
    expect(await page.textContent('#status')).to.equal('24 items');

    await page.fill('#k', '5');
    await page.setInputFiles('#file', path.join(fixture.images, 'bag', 't10k-00018.png'));
    await page.waitForSelector('#results .result');
    const cards = page.locator('#results .result');
    expect(await cards.count()).to.equal(5);
    expect(await cards.nth(0).locator('.label').textContent()).to.equal('bag');
    expect(await cards.nth(0).locator('.score').textContent()).to.equal('score 1.0000');
    expect(await cards.nth(0).locator('.id').textContent()).to.equal('bag/t10k-00018.png');
    const scores = (await cards.locator('.score').allTextContents()).map((t) => Number(t.replace('score ', '')));
    expect(scores).to.deep.equal([...scores].sort((a, b) => b - a));
    // The thumbnails load from the API.
    // (Page functions are strings: the specs are compiled without the DOM library.)
    await page.waitForFunction("[...document.querySelectorAll('#results img')].every((img) => img.complete && img.naturalWidth === 28)");

    // Label filter, then a click on a gallery item: neighbours of that item, itself left out.
    await page.selectOption('#label', 'coat');
    await page.locator('#gallery .card', { hasText: 'ankle_boot/t10k-00000.png' }).click();
    await page.waitForFunction("document.querySelector('#results .result .label')?.textContent === 'coat'");
    expect(await page.locator('#results .result .label').allTextContents()).to.deep.equal(Array(5).fill('coat'));

    // A file that is not an image: the API's message, and no results.
    const bad = path.join(tmp, 'notes.png');
    writeFileSync(bad, 'not really a png');
    await page.setInputFiles('#file', bad);
    await page.waitForFunction("document.querySelector('#error').textContent !== ''");
    expect(await page.textContent('#error')).to.match(/^file "notes\.png": not an image in a supported format/);
    expect(await page.locator('#results .result').count()).to.equal(0);
    expect(errors).to.deep.equal([]);
    await page.close();
  });
});
