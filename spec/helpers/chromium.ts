/**
 * Headless Chromium (Debian package `chromium`, driven by playwright-core) for the browser specs. When
 * /usr/bin/chromium is not installed, the calling `before` hook's suite is skipped with a message saying so.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';

/** Launches Chromium, or skips the suite of `context` (a mocha `before` hook's `this`) when it is missing. */
export async function launchChromiumOrSkip(context: Mocha.Context): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    console.log(`      (skipped: ${CHROMIUM} is not installed; apt-get install chromium to run the browser test)`);
    context.skip();
  }
  // --no-sandbox: the tests run as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}

/**
 * Opens the local page `file` in a new 1280 x 900 page with every request that is not `file:` or
 * `data:` refused; `requests` collects the refused URLs (a self-contained page leaves it empty).
 */
export async function openOffline(browser: Browser, file: string): Promise<{ page: Page; requests: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const requests: string[] = [];
  await page.route('**/*', async (route) => {
    const url = route.request().url();
    if (url.startsWith('file:') || url.startsWith('data:')) return route.continue();
    requests.push(url);
    return route.abort();
  });
  await page.goto(`file://${file}`);
  return { page, requests };
}
