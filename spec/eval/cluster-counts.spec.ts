import { expect } from 'chai';
import { DmlError } from '../../lib/errors.js';
import { nmiPlusOf, parseClusterCountSpecs, resolveClusterCounts } from '../../lib/eval/cluster-counts.js';

describe('cluster counts', () => {
  it('resolves multiples of the label count, caps at N, dedupes, sorts and always includes 1x', () => {
    expect(resolveClusterCounts(['1x', '2x', '5x', '10x', '30x'], 100, 5924)).to.deep.equal([100, 200, 500, 1000, 3000]);
    expect(resolveClusterCounts(['10x', '30x'], 100, 2000)).to.deep.equal([100, 1000, 2000]);
    expect(resolveClusterCounts(['7', '0.5x'], 10, 1000)).to.deep.equal([5, 7, 10]);
  });

  it('rejects malformed specs naming the flag', () => {
    expect(() => parseClusterCountSpecs(['10y'])).to.throw(DmlError, /--cluster-counts.*"10y"/);
    expect(() => parseClusterCountSpecs(['0'])).to.throw(DmlError, /--cluster-counts/);
    expect(() => parseClusterCountSpecs([])).to.throw(DmlError, /at least one/);
  });

  it('reads NMI+ off the curve at 10x the label count (capped at N), or null without that point', () => {
    const curve = [5, 10, 50, 150].map((clusters) => ({ clusters, nmi: clusters / 1000 }));
    expect(nmiPlusOf(curve, 5, 300)).to.equal(0.05);
    expect(nmiPlusOf(curve, 5, 40)).to.equal(null); // 10x capped at 40 points: not on this curve
    expect(nmiPlusOf([{ clusters: 40, nmi: 0.4 }], 5, 40)).to.equal(0.4);
    expect(nmiPlusOf(curve.slice(0, 2), 5, 300)).to.equal(null);
  });
});
