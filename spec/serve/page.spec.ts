/**
 * Browser test of the web page: headless Chromium (Debian package `chromium`) driven by playwright-core
 * uploads an image on the page and reads the neighbour grid. Skipped, with a message saying why, only
 * when /usr/bin/chromium is not installed.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import type { Browser } from 'playwright-core';
import { launchChromiumOrSkip } from '../helpers/chromium.js';
import { createSearchApp } from '../../lib/serve/app.js';
import { makeTempDir } from '../image/image-fixtures.js';
import { buildFixtureIndex, type FixtureIndex } from './fixtures.js';


describe('serve/page in headless Chromium', function () {
  this.timeout(60_000);
  let tmp: string;
  let fixture: FixtureIndex;
  let app: FastifyInstance;
  let browser: Browser;
  let url: string;

  before(async function () {
    browser = await launchChromiumOrSkip(this);
    tmp = makeTempDir('dml-page-');
    fixture = await buildFixtureIndex(tmp);
    app = await createSearchApp({ dir: fixture.dir, device: 'cpu' });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await browser?.close();
    await app?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('uploads an image and shows the neighbour grid with labels and scores, the query image and its name', async () => {
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

    // The query image and the heading name the query.
    expect(await page.textContent('#results-heading')).to.match(/^Neighbours of t10k-00018\.png \(5 in [\d.]+ ms\)$/);
    await page.waitForFunction("document.querySelector('#query img')?.complete && document.querySelector('#query img').naturalWidth === 28");
    expect(await page.isVisible('#error')).to.equal(false);
  });

  it('filters by label: the select lists GET /labels, and every neighbour then has the label (upload and gallery click)', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(url);
    await page.waitForSelector('#label option[value="dress"]', { state: 'attached' });
    const options = await page.$$eval('#label option', (els) => els.map((o) => [(o as unknown as { value: string }).value, o.textContent]));
    expect(options).to.deep.equal([['', 'any'], ...['ankle_boot', 'bag', 'coat', 'dress'].map((l) => [l, `${l} (6)`])]);

    // Picking a label repeats the last query with the filter.
    await page.fill('#k', '4');
    await page.setInputFiles('#file', path.join(fixture.images, 'bag', 't10k-00018.png'));
    await page.waitForSelector('#results .result');
    await page.selectOption('#label', 'coat');
    await page.waitForFunction("document.querySelector('#took').textContent.includes('label coat')");
    expect(await page.locator('#results .result .label').allTextContents()).to.deep.equal(Array(4).fill('coat'));
    expect(await page.textContent('#query-name')).to.equal(' of t10k-00018.png');

    // A click on a gallery item: its neighbours with that label, itself left out.
    await page.locator('#gallery .card', { hasText: 'ankle_boot/t10k-00000.png' }).click();
    await page.waitForFunction("document.querySelector('#query-name').textContent === ' of ankle_boot/t10k-00000.png'");
    expect(await page.locator('#results .result .label').allTextContents()).to.deep.equal(Array(4).fill('coat'));
    expect(await page.locator('#results .result .id').allTextContents()).not.to.include('ankle_boot/t10k-00000.png');
    for (const label of ['dress', 'bag']) {
      await page.selectOption('#label', label);
      await page.waitForFunction(`document.querySelector('#took').textContent.includes('label ${label}')`);
      const labels = await page.locator('#results .result .label').allTextContents();
      expect(labels, label).to.have.length(4);
      expect(labels.every((l) => l === label), `${labels.join(', ')} for ${label}`).to.equal(true);
    }
    // Back to any label: the ankle boot's own class again.
    await page.selectOption('#label', '');
    await page.waitForFunction("!document.querySelector('#took').textContent.includes('label')");
    expect(await page.locator('#results .result .label').allTextContents()).to.include('ankle_boot');
    expect(errors).to.deep.equal([]);
    await page.close();
  });

  it('after a bad upload shows the server message, no query image, no neighbours and a reset heading; a good upload recovers', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(url);
    await page.waitForSelector('#gallery .card');
    await page.setInputFiles('#file', path.join(fixture.images, 'bag', 't10k-00018.png'));
    await page.waitForSelector('#results .result');

    // A file that is not an image: the API's 422 message, and nothing left of the previous query.
    const bad = path.join(tmp, 'notes.png');
    writeFileSync(bad, 'not really a png');
    await page.setInputFiles('#file', bad);
    await page.waitForSelector('#error', { state: 'visible' });
    expect(await page.textContent('#error')).to.match(/^file "notes\.png": not an image in a supported format/);
    expect(await page.locator('#query img').count()).to.equal(0);
    expect(await page.locator('#results .result').count()).to.equal(0);
    expect(await page.textContent('#results-heading')).to.equal('Neighbours ');
    // No broken image anywhere on the page (a broken one is complete with no natural width).
    expect(await page.evaluate("[...document.images].filter((img) => img.complete && img.naturalWidth === 0).map((img) => img.src)")).to.deep.equal([]);

    // A good upload clears the error.
    await page.setInputFiles('#file', path.join(fixture.images, 'dress', 't10k-00013.png'));
    await page.waitForSelector('#error', { state: 'hidden' });
    await page.waitForSelector('#results .result');
    expect(await page.textContent('#query-name')).to.equal(' of t10k-00013.png');
    expect(await page.locator('#results .result .id').first().textContent()).to.equal('dress/t10k-00013.png');
    expect(errors).to.deep.equal([]);
    await page.close();
  });

  it('shows the query large, searches with a dropped or pasted image, filters the gallery by label, and has a favicon', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    const requests: string[] = [];
    page.on('request', (request) => requests.push(request.url()));
    await page.goto(url);
    await page.waitForSelector('#gallery .card');

    // Favicon: an inline SVG that decodes; the browser asks the server for no /favicon.ico.
    const icon = (await page.getAttribute('link[rel="icon"]', 'href')) as string;
    expect(icon.startsWith('data:image/svg+xml,')).to.equal(true);
    expect(await page.evaluate(`new Promise((resolve) => { const img = new Image(); img.onload = () => resolve(img.naturalWidth > 0); img.onerror = () => resolve(false); img.src = ${JSON.stringify(icon)}; })`)).to.equal(true);

    // A dropped image is searched with; the 28 px query is shown 192 px wide (plus its 1 px border).
    const png = readFileSync(path.join(fixture.images, 'bag', 't10k-00018.png')).toString('base64');
    const transfer = (name: string, type: string, base64: string): string =>
      `(() => { const dt = new DataTransfer(); dt.items.add(new File([Uint8Array.from(atob(${JSON.stringify(base64)}), (c) => c.charCodeAt(0))], ${JSON.stringify(name)}, { type: ${JSON.stringify(type)} })); return dt; })()`;
    await page.evaluate(`document.querySelector('#drop-zone').dispatchEvent(new DragEvent('drop', { bubbles: true, cancelable: true, dataTransfer: ${transfer('dropped.png', 'image/png', png)} }))`);
    await page.waitForSelector('#results .result');
    expect(await page.textContent('#query-name')).to.equal(' of dropped.png');
    expect(await page.locator('#results .result .id').first().textContent()).to.equal('bag/t10k-00018.png');
    await page.waitForFunction("document.querySelector('#query img')?.complete && document.querySelector('#query img').naturalWidth === 28");
    const box = await page.locator('#query img').boundingBox();
    expect([box?.width, box?.height]).to.deep.equal([194, 194]);

    // A pasted image likewise.
    const dress = readFileSync(path.join(fixture.images, 'dress', 't10k-00013.png')).toString('base64');
    await page.evaluate(`document.dispatchEvent(new ClipboardEvent('paste', { bubbles: true, cancelable: true, clipboardData: ${transfer('pasted.png', 'image/png', dress)} }))`);
    await page.waitForFunction("document.querySelector('#query-name').textContent === ' of pasted.png'");
    expect(await page.locator('#results .result .id').first().textContent()).to.equal('dress/t10k-00013.png');

    // A dropped file that is not an image: one message, nothing stale on screen.
    await page.evaluate(`document.querySelector('#drop-zone').dispatchEvent(new DragEvent('drop', { bubbles: true, cancelable: true, dataTransfer: ${transfer('notes.txt', 'text/plain', Buffer.from('hello').toString('base64'))} }))`);
    expect(await page.textContent('#error')).to.equal('That is not an image file: drop or paste a PNG, JPEG, WebP, GIF or TIFF image.');
    expect(await page.locator('#results .result').count()).to.equal(0);

    // The gallery filtered by label: only coats (6 of the 24), then everything again.
    await page.selectOption('#gallery-label', 'coat');
    await page.waitForFunction("document.querySelectorAll('#gallery .card').length === 6");
    expect(await page.locator('#gallery .card .label').allTextContents()).to.deep.equal(Array(6).fill('coat'));
    expect(await page.textContent('#gallery-count')).to.equal('6 items labelled coat');
    expect(await page.isDisabled('#more')).to.equal(true);
    await page.selectOption('#gallery-label', '');
    await page.waitForFunction("document.querySelectorAll('#gallery .card').length === 24");
    expect(requests.filter((r) => r.endsWith('/favicon.ico'))).to.deep.equal([]);
    expect(errors).to.deep.equal([]);
    await page.close();
  });
});
