/**
 * @file lib/util/fallback.ts: candidates tried in order, every failure recorded with its reason, a
 * candidate reported unavailable skipped without a try, and one error with every attempt when none works.
 */
import { expect } from 'chai';
import { FallbackExhausted, firstWorking } from '../../lib/util/fallback.js';

describe('util/fallback: firstWorking', () => {
  it('returns the first candidate that works, after recording why the earlier ones did not', async () => {
    const tried: string[] = [];
    const result = await firstWorking(
      ['gpu', 'other', 'cpu', 'never'] as const,
      async (name) => {
        tried.push(name);
        if (name === 'gpu') throw new Error('no driver\nsecond line');
        if (name === 'other') return { unavailable: 'not on this machine' };
        return { value: `${name} session` };
      },
      (err) => (err as Error).message.split('\n')[0] ?? '',
    );
    expect(result).to.deep.equal({
      chosen: 'cpu',
      value: 'cpu session',
      attempts: [{ name: 'gpu', error: 'no driver' }, { name: 'other', error: 'not on this machine' }, { name: 'cpu' }],
    });
    expect(tried).to.deep.equal(['gpu', 'other', 'cpu']);
  });

  it('throws FallbackExhausted with every attempt and the last failure as its cause', async () => {
    const last = new Error('out of memory');
    const failure = await firstWorking(
      ['a', 'b'],
      async (name): Promise<{ value: number }> => {
        throw name === 'a' ? new Error('missing') : last;
      },
      (err) => (err as Error).message,
    ).catch((err: unknown) => err);
    expect(failure).to.be.instanceOf(FallbackExhausted);
    const exhausted = failure as FallbackExhausted<string>;
    expect(exhausted.message).to.equal('a: missing; b: out of memory');
    expect(exhausted.attempts).to.deep.equal([{ name: 'a', error: 'missing' }, { name: 'b', error: 'out of memory' }]);
    expect(exhausted.cause).to.equal(last);
  });
});
