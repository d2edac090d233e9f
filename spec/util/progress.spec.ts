/**
 * @file Progress: bars only on a terminal without the CI variable, plain lines every 10% or 30 s
 * elsewhere (checked with a fake clock), nothing after `--quiet`; ETA text; k-means counting iterations.
 */
import { expect } from 'chai';
import { runCliCaptured } from '../helpers/run-cli.js';
import { kmeansSweep } from '../../lib/metrics/kmeans.js';
import { createProgress, etaText, formatDuration, formatRate, formatSeconds, progressEnabled, silenceProgress } from '../../lib/util/progress.js';

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
      silenceProgress(false);
      Object.defineProperty(process.stderr, 'isTTY', { value: tty, configurable: true });
      if (ci === undefined) delete process.env['CI'];
      else process.env['CI'] = ci;
    }
  });
});

describe('util/progress on a non-terminal: plain lines', () => {
  /** Feeds `steps` (time in s, done) to a line reporter of `total` items and returns the lines it wrote. */
  function linesFor(total: number, steps: Array<[number, number]>, stop = false): string[] {
    const lines: string[] = [];
    let t = 0;
    const progress = createProgress('embed', 'lines', { write: (line) => lines.push(line), now: () => t * 1000 });
    for (const [seconds, done] of steps) {
      t = seconds;
      progress.update(done, total);
    }
    if (stop) progress.stop();
    return lines;
  }

  it('prints a line at every 10% with done/total, rate and ETA, and a last line with the time taken', () => {
    // 1,000 items at 10 per second, one update a second.
    const steps = Array.from({ length: 101 }, (_, i) => [i, i * 10] as [number, number]);
    expect(linesFor(1000, steps)).to.deep.equal([
      'embed: 100/1000 (10%), 10.0/s, eta 1m30s',
      'embed: 200/1000 (20%), 10.0/s, eta 1m20s',
      'embed: 300/1000 (30%), 10.0/s, eta 1m10s',
      'embed: 400/1000 (40%), 10.0/s, eta 1m00s',
      'embed: 500/1000 (50%), 10.0/s, eta 50s',
      'embed: 600/1000 (60%), 10.0/s, eta 40s',
      'embed: 700/1000 (70%), 10.0/s, eta 30s',
      'embed: 800/1000 (80%), 10.0/s, eta 20s',
      'embed: 900/1000 (90%), 10.0/s, eta 10s',
      'embed: 1000/1000 done in 1m40s (10.0/s)',
    ]);
  });

  it('prints every 30 s when 10% takes longer, and nothing for a stage under a second', () => {
    // 1 item every 10 s of 100: lines at 30 s, 60 s, 90 s.
    const slow = Array.from({ length: 10 }, (_, i) => [i * 10, i] as [number, number]);
    expect(linesFor(100, slow)).to.deep.equal(['embed: 3/100 (3%), 0.10/s, eta 16m10s', 'embed: 6/100 (6%), 0.10/s, eta 15m40s', 'embed: 9/100 (9%), 0.10/s, eta 15m10s']);
    expect(linesFor(100, [[0, 0], [0.5, 50], [0.9, 100]])).to.deep.equal([]);
    // Stopped before the end after a second or more: the last state is printed.
    expect(linesFor(100, [[0, 0], [2, 5]], true)).to.deep.equal(['embed: 5/100 (5%), 2.5/s, eta 38s']);
  });

  it('a bar never starts with "eta 0s": no ETA before a rate exists', () => {
    expect(etaText(0, 100, 0)).to.equal('--');
    expect(etaText(10, 100, 0.5)).to.equal('--');
    expect(etaText(10, 100, 2)).to.equal('18s');
    expect(formatDuration(7384)).to.equal('2h03m');
    expect(formatRate(1234.4)).to.equal('1234/s');
    expect(formatSeconds(0.44)).to.equal('0.4s');
  });

  it('k-means progress counts Lloyd iterations (of restarts x cluster counts x the cap), not runs', async () => {
    const vectors = Float32Array.from({ length: 200 }, (_, i) => Math.sin(i * 1.7));
    const calls: Array<[number, number]> = [];
    await kmeansSweep(vectors, 100, 2, [2, 5], { seed: 0, maxIterations: 20, restarts: 2, onProgress: (done, total) => calls.push([done, total]) });
    expect(new Set(calls.map(([, total]) => total))).to.deep.equal(new Set([2 * 2 * 20]));
    expect(calls.at(-1)).to.deep.equal([80, 80]);
    expect(calls.length).to.be.above(4);
    for (let i = 1; i < calls.length; i++) expect(calls[i]![0]).to.be.above(calls[i - 1]![0]);
    // Each run ends on a multiple of the cap.
    expect(calls.filter(([done]) => done % 20 === 0).map(([done]) => done)).to.deep.equal([20, 40, 60, 80]);
  });
});
