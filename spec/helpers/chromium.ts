/**
 * Headless Chromium (Debian package `chromium`, driven by playwright-core) for the browser specs. When
 * /usr/bin/chromium is not installed, the calling `before` hook's suite is skipped with a message saying so.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

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
