/**
 * @file Tests of the triplet scatter diagram's LoOp series (lib/train/scatter.ts): docs/methods.md 3.5
 * example C by hand, and on random clustered data the bound that holds by definition: the optimal
 * distance between two arcs (segments) is a minimum over sets that contain the endpoints, so each
 * anchor's synthetic similarity `1 − D⁻²/2` is at least its real similarity to every paired item of
 * another label (and so at least the real hardest-negative similarity when every item is paired).
 */
import { expect } from 'chai';
import { scatterSvg } from '../../lib/report/svg-scatter.js';
import { tripletScatter } from '../../lib/train/scatter.js';
import { Rng } from '../../lib/util/rng.js';

const unit = (v: number[]): number[] => {
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
};

/** `sizes[c]` unit vectors of label c around a random centre (spread `noise`), interleaved by label. */
function clustered(sizes: number[], dim: number, noise: number, seed: number): { vectors: Float32Array; labels: number[] } {
  const rng = new Rng(seed);
  const gaussian = (): number => Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());
  const centres = sizes.map(() => unit(Array.from({ length: dim }, gaussian)));
  const labels: number[] = [];
  const remaining = [...sizes];
  while (remaining.some((r) => r > 0)) {
    remaining.forEach((r, c) => {
      if (r > 0) {
        labels.push(c);
        remaining[c] = r - 1;
      }
    });
  }
  const vectors = new Float32Array(labels.length * dim);
  labels.forEach((c, i) => vectors.set(unit(centres[c]!.map((x) => x + noise * gaussian())), i * dim));
  return { vectors, labels };
}

const dot = (v: Float32Array, dim: number, a: number, b: number): number => {
  let s = 0;
  for (let j = 0; j < dim; j++) s += v[a * dim + j]! * v[b * dim + j]!;
  return s;
};

describe('train/scatter (LoOp series)', () => {
  it('is absent without the loop option', () => {
    const { vectors, labels } = clustered([4, 4], 3, 0.3, 1);
    expect(tripletScatter(vectors, 8, 3, labels, { maxPoints: 100, seed: 0 })).not.to.have.property('loop');
  });

  it('gives 1 − d²/2 of docs/methods.md 3.5 example C (4-D, interior optimum d = 0.459506)', () => {
    const vectors = Float32Array.from([1, 0, 0, 0, 0, 1, 0, 0, ...unit([1, 0.2, 0, 0.6]), ...unit([0.2, 1, 0.6, 0])]);
    const scatter = tripletScatter(vectors, 4, 4, ['a', 'a', 'b', 'b'], { maxPoints: 10, seed: 0, loop: { geometry: 'arc' } });
    const loop = scatter.loop!;
    expect(loop).to.deep.include({ geometry: 'arc', pairs: 2, couples: 1 });
    expect(loop.points.map((p) => p.point)).to.deep.equal([0, 1, 2, 3]);
    for (const p of loop.points) {
      expect(p.y).to.be.closeTo(1 - 0.459506 ** 2 / 2, 1e-6);
      expect(p.x).to.equal(scatter.points[p.point]!.x);
    }
    // The real hardest negative of x1 = e1 is y1 (cosine 1/sqrt(1.4)); the synthetic one is closer.
    expect(scatter.points[0]!.y).to.be.closeTo(1 / Math.sqrt(1.4), 1e-6);
    expect(loop.points[0]!.y).to.be.above(scatter.points[0]!.y + 0.04);
  });

  for (const geometry of ['arc', 'segment'] as const) {
    it(`bounds every synthetic similarity from below by the real hardest negative when all items are paired (${geometry}s)`, () => {
      const dim = 8;
      const { vectors, labels } = clustered([20, 16, 24], dim, 0.6, 7);
      const scatter = tripletScatter(vectors, labels.length, dim, labels, { maxPoints: 1000, seed: 0, loop: { geometry } });
      const loop = scatter.loop!;
      expect(loop.pairs).to.equal(30);
      expect(loop.couples).to.equal((30 * 29) / 2 - (10 * 9 + 8 * 7 + 12 * 11) / 2);
      expect(loop.points).to.have.length(60);
      let strictly = 0;
      for (const p of loop.points) {
        const real = scatter.points[p.point]!;
        expect(p.x).to.equal(real.x);
        expect(p.y).to.be.at.least(real.y - 1e-9);
        if (p.y > real.y + 1e-3) strictly++;
      }
      expect(strictly, 'the synthetic negatives are harder for most anchors').to.be.above(30);
      expect(loop.correctFraction).to.be.at.most(scatter.correctFraction);
    });
  }

  it('with an unpaired item (odd class size), bounds it by the paired negatives only', () => {
    const dim = 6;
    const { vectors, labels } = clustered([7, 5, 6], dim, 0.7, 3);
    const n = labels.length;
    const scatter = tripletScatter(vectors, n, dim, labels, { maxPoints: 1000, seed: 0, loop: { geometry: 'arc' } });
    // pairPositives pairs each label's items consecutively; the last item of an odd label is unpaired.
    const unpaired = new Set([0, 1].map((c) => labels.lastIndexOf(c)));
    expect(scatter.loop!.points).to.have.length(n - 2);
    const anchors = [...Array(n).keys()];
    for (const p of scatter.loop!.points) {
      const a = p.point; // every item has a positive here, so point index = item index
      expect(unpaired.has(a)).to.equal(false);
      const pairedNegative = Math.max(...anchors.filter((b) => labels[b] !== labels[a] && !unpaired.has(b)).map((b) => dot(vectors, dim, a, b)));
      expect(p.y).to.be.at.least(pairedNegative - 1e-9);
    }
  });

  it('draws the series in its own colour with a legend', () => {
    const svg = scatterSvg([{ x: 0.5, y: 0.1 }], {
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
      mainLabel: 'hardest real negative',
      series: [{ name: 'LoOp optimal negative', colour: '#2ca02c', points: [{ x: 0.5, y: 0.7 }] }],
    });
    expect(svg).to.include('fill="#2ca02c"');
    expect(svg).to.include('LoOp optimal negative');
    expect(svg).to.include('hardest real negative, y &lt; x');
  });
});
