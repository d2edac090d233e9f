/**
 * @file Progress bars: drawn only on a terminal without the CI variable, and never after `--quiet`.
 */
import { expect } from 'chai';
import { runCliCaptured } from '../helpers/run-cli.js';
import { progressEnabled } from '../../lib/util/progress.js';

describe('util/progress', () => {
  it('draws on a terminal without CI; dml --quiet turns bars off for the rest of the process', async () => {
    const tty = process.stderr.isTTY;
    const ci = process.env['CI'];
    try {
      Object.defineProperty(process.stderr, 'isTTY', { value: true, configurable: true });
      delete process.env['CI'];
      expect(progressEnabled()).to.equal(true);
      process.env['CI'] = 'true';
      expect(progressEnabled()).to.equal(false);
      delete process.env['CI'];
      // The option is taken before any command; this eval fails at once (no model), after it.
      const res = await runCliCaptured(['--quiet', 'eval']);
      expect(res.code).to.equal(2);
      expect(progressEnabled()).to.equal(false);
    } finally {
      Object.defineProperty(process.stderr, 'isTTY', { value: tty, configurable: true });
      if (ci === undefined) delete process.env['CI'];
      else process.env['CI'] = ci;
    }
  });
});
