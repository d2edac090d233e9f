/**
 * @file SearchBatcher (lib/index-store/search-batcher.ts), with a runner whose batches finish when
 * the spec says: which searches run together, in which order, how many at once, and what each
 * search gets back.
 */
import { expect } from 'chai';
import { SearchBatcher } from '../../lib/index-store/search-batcher.js';
import { expectDmlErrorSync } from '../helpers/expect-dml-error.js';

/** A runner that records each batch and settles it on demand: its result for query q is `q * 10`. */
function controlledRunner(): {
  run: (key: string | undefined, queries: number[]) => Promise<number[]>;
  batches: Array<{ key: string | undefined; queries: number[] }>;
  finish: (index: number, error?: Error) => void;
} {
  const batches: Array<{ key: string | undefined; queries: number[] }> = [];
  const settle: Array<(error?: Error) => void> = [];
  return {
    batches,
    run: (key, queries) => {
      batches.push({ key, queries });
      return new Promise((resolve, reject) => settle.push((error) => (error ? reject(error) : resolve(queries.map((q) => q * 10)))));
    },
    finish: (index, error) => settle[index]?.(error),
  };
}

/** Lets pending promise callbacks run. */
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('SearchBatcher', () => {
  it('runs a search at once while a slot is free, and groups the waiting ones by key, oldest first', async () => {
    const runner = controlledRunner();
    const batcher = new SearchBatcher(runner.run, { maxInFlight: 1, maxBatch: 16 });
    const results = [batcher.submit('a', 1), batcher.submit('a', 2), batcher.submit('b', 3), batcher.submit(undefined, 4), batcher.submit(undefined, 5), batcher.submit('a', 6)];
    await tick();
    expect(runner.batches).to.deep.equal([{ key: 'a', queries: [1] }]);
    for (let i = 0; i < 4; i++) {
      runner.finish(i);
      await tick();
    }
    expect(runner.batches).to.deep.equal([
      { key: 'a', queries: [1] },
      { key: 'a', queries: [2, 6] },
      { key: 'b', queries: [3] },
      { key: undefined, queries: [4] },
      { key: undefined, queries: [5] },
    ]);
    runner.finish(4);
    expect(await Promise.all(results)).to.deep.equal([10, 20, 30, 40, 50, 60]);
  });

  it('keeps at most maxInFlight batches running and at most maxBatch searches in one', async () => {
    const runner = controlledRunner();
    const batcher = new SearchBatcher(runner.run, { maxInFlight: 2, maxBatch: 2 });
    const results = [1, 2, 3, 4, 5, 6].map((q) => batcher.submit('k', q));
    await tick();
    expect(runner.batches.map((b) => b.queries)).to.deep.equal([[1], [2]]);
    runner.finish(1);
    await tick();
    expect(runner.batches.map((b) => b.queries)).to.deep.equal([[1], [2], [3, 4]]);
    runner.finish(0);
    await tick();
    expect(runner.batches.map((b) => b.queries)).to.deep.equal([[1], [2], [3, 4], [5, 6]]);
    runner.finish(2);
    runner.finish(3);
    expect(await Promise.all(results)).to.deep.equal([10, 20, 30, 40, 50, 60]);
  });

  it('rejects every search of a failed batch and goes on with the next', async () => {
    const runner = controlledRunner();
    const batcher = new SearchBatcher(runner.run, { maxInFlight: 1, maxBatch: 16 });
    const first = batcher.submit('k', 1);
    const grouped = [batcher.submit('k', 2), batcher.submit('k', 3)].map(outcome);
    const later = batcher.submit('other', 4);
    runner.finish(0);
    await tick();
    runner.finish(1, new Error('disk gone'));
    await tick();
    runner.finish(2);
    expect(await first).to.equal(10);
    for (const failed of await Promise.all(grouped)) {
      expect(failed).to.be.instanceOf(Error);
      expect((failed as Error).message).to.equal('disk gone');
    }
    expect(await later).to.equal(40);
  });

  it('refuses limits that are not positive integers', () => {
    const run = async (_key: string | undefined, queries: number[]): Promise<number[]> => queries;
    expectDmlErrorSync(() => new SearchBatcher(run, { maxInFlight: 0, maxBatch: 1 }), 'E_ARG', 'Expected a positive integer for maxInFlight but received 0');
    expectDmlErrorSync(() => new SearchBatcher(run, { maxInFlight: 1, maxBatch: 1.5 }), 'E_ARG', 'Expected a positive integer for maxBatch but received 1.5');
  });
});

/** What `promise` settles to: its value, or the reason it rejected with (handled at once). */
function outcome(promise: Promise<unknown>): Promise<unknown> {
  return promise.then((value) => value, (reason: unknown) => reason);
}
