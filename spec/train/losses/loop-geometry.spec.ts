/**
 * @file Tests of the LoOp geometry: the closest points of two great-circle arcs by the nine KKT cases
 * (docs/methods.md 3.5 examples A-D, and a multi-start grid search on 500 random arc pairs in each of 3, 4, 8
 * and 16 dimensions, every case coming up), degenerate arcs, and the line-segment variant against the
 * same grid search.
 */
import { expect } from 'chai';
import { closestPointsOnArcs, closestPointsOnSegments, type QuadrupleGram } from '../../../lib/train/losses/loop-geometry.js';
import { Rng } from '../../../lib/util/rng.js';

type Vector = number[];

const dot = (u: Vector, v: Vector): number => u.reduce((s, x, i) => s + x * v[i]!, 0);
const normalize = (v: Vector): Vector => v.map((x) => x / Math.hypot(...v));
const gramOf = (x1: Vector, x2: Vector, y1: Vector, y2: Vector): QuadrupleGram => ({
  x1x2: dot(x1, x2),
  y1y2: dot(y1, y2),
  x1y1: dot(x1, y1),
  x1y2: dot(x1, y2),
  x2y1: dot(x2, y1),
  x2y2: dot(x2, y2),
});

/** The point at angle α along the minor arc a→b (computed in D dimensions, independently of the solver). */
function arcPoint(a: Vector, b: Vector, alpha: number): Vector {
  const c = dot(a, b);
  const orthogonal = b.map((x, i) => x - c * a[i]!);
  const length = Math.hypot(...orthogonal);
  return a.map((x, i) => x * Math.cos(alpha) + (length === 0 ? 0 : (orthogonal[i]! / length) * Math.sin(alpha)));
}

const distance = (u: Vector, v: Vector): number => Math.hypot(...u.map((x, i) => x - v[i]!));

/**
 * Minimum of `‖pointA(s) − pointB(t)‖` over [0, sMax] × [0, tMax] by grid search on the squared
 * distance: a 25 × 25 grid, then from each of its (at most 6 best) local minima a pattern search of
 * 9 × 9 grids, recentred on the best point, whose half-width halves unless that point is on the
 * window's edge, until it is below 1e-10.
 */
function gridMinimum(pointA: (s: number) => Vector, pointB: (t: number) => Vector, sMax: number, tMax: number): number {
  const squared = (u: Vector, v: Vector): number => u.reduce((sum, x, i) => sum + (x - v[i]!) ** 2, 0);
  /** Squared distances of the grid s_i × t_j, computing each point once. */
  const table = (ss: number[], ts: number[]): number[][] => {
    const as = ss.map(pointA);
    const bs = ts.map(pointB);
    return as.map((a) => bs.map((b) => squared(a, b)));
  };
  const n = 24;
  const axis = (max: number): number[] => Array.from({ length: n + 1 }, (_, i) => (max * i) / n);
  const grid = table(axis(sMax), axis(tMax));
  const starts: [number, number, number][] = [];
  for (let i = 0; i <= n; i++) {
    for (let j = 0; j <= n; j++) {
      let isMinimum = true;
      for (let di = -1; di <= 1 && isMinimum; di++) {
        for (let dj = -1; dj <= 1; dj++) {
          const neighbour = grid[i + di]?.[j + dj];
          if (neighbour !== undefined && neighbour < grid[i]![j]!) isMinimum = false;
        }
      }
      if (isMinimum) starts.push([grid[i]![j]!, i, j]);
    }
  }
  starts.sort((p, q) => p[0] - q[0]);
  let best = Number.POSITIVE_INFINITY;
  for (const [start, i, j] of starts.slice(0, 6)) {
    let [cs, ct, hs, ht, bestHere] = [(sMax * i) / n, (tMax * j) / n, sMax / n, tMax / n, start];
    for (let step = 0; step < 1000 && (hs > 1e-10 || ht > 1e-10); step++) {
      const around = (centre: number, half: number, max: number): number[] =>
        Array.from({ length: 9 }, (_, k) => Math.min(Math.max(centre + ((k - 4) * half) / 4, 0), max));
      const ss = around(cs, hs, sMax);
      const ts = around(ct, ht, tMax);
      let [ia, ib] = [4, 4];
      table(ss, ts).forEach((row, a) =>
        row.forEach((v, b) => {
          if (v < bestHere) [bestHere, ia, ib] = [v, a, b];
        }),
      );
      [cs, ct] = [ss[ia]!, ts[ib]!];
      // A best point on the window's edge (a narrow valley leading on) moves the window without shrinking it.
      const onEdge = (k: number, centre: number, max: number): boolean => (k === 0 || k === 8) && centre > 0 && centre < max;
      if (!onEdge(ia, cs, sMax)) hs /= 2;
      if (!onEdge(ib, ct, tMax)) ht /= 2;
    }
    best = Math.min(best, bestHere);
  }
  return Math.sqrt(best);
}

/** A random quadruple: arcs of random length, the second one near the first about half the time. */
function randomQuadruple(rng: Rng, dim: number): [Vector, Vector, Vector, Vector] {
  const gaussian = (): Vector => Array.from({ length: dim }, () => rng.nextGaussian());
  const near = (v: Vector, spread: number): Vector => normalize(v.map((x, i) => x + spread * gaussian()[i]!));
  const spread = (): number => Math.exp(-2.5 + 4 * rng.next());
  const x1 = normalize(gaussian());
  const x2 = near(x1, spread());
  const y1 = rng.next() < 0.5 ? near(x1, spread()) : normalize(gaussian());
  const y2 = near(y1, spread());
  return [x1, x2, y1, y2];
}

describe('train/losses/loop-geometry', () => {
  describe('docs/methods.md 3.5 worked examples (1e-5)', () => {
    const e = (...v: number[]): Vector => v;
    const examples: { name: string; points: [Vector, Vector, Vector, Vector]; kase: number; alpha: number; beta: number; distance: number }[] = [
      { name: 'A (3-D, endpoint to arc, case 3)', points: [e(1, 0, 0), e(0, 1, 0), normalize(e(1, 1, 0.6)), normalize(e(-0.2, 1, 1))], kase: 3, alpha: 0.785398, beta: 0, distance: 0.398561 },
      { name: 'B (3-D, crossing arcs, case 0)', points: [e(1, 0, 0), e(0, 1, 0), e(2 / 3, 2 / 3, 1 / 3), e(2 / 3, 2 / 3, -1 / 3)], kase: 0, alpha: Math.PI / 4, beta: 0.339837, distance: 0 },
      { name: 'C (4-D, interior, case 0)', points: [e(1, 0, 0, 0), e(0, 1, 0, 0), normalize(e(1, 0.2, 0, 0.6)), normalize(e(0.2, 1, 0.6, 0))], kase: 0, alpha: 0.785398, beta: 0.640522, distance: 0.459506 },
      { name: 'D (3-D, corner, case 8)', points: [e(1, 0, 0), normalize(e(1, 0.3, 0)), normalize(e(0, 0.2, 1)), normalize(e(0, 1, 1))], kase: 8, alpha: 0.291457, beta: 0.588003, distance: 1.26239 },
    ];
    for (const example of examples) {
      it(example.name, () => {
        const solution = closestPointsOnArcs(gramOf(...example.points));
        expect(solution.kase).to.equal(example.kase);
        expect(solution.distance).to.be.closeTo(example.distance, 1e-5);
        expect(solution.alpha).to.be.closeTo(example.alpha, 1e-5);
        expect(solution.beta).to.be.closeTo(example.beta, 1e-5);
      });
    }

    it('example A: p1 = (0.707107, 0.707107, 0), p2 = y1; C: p2 = (0.632456, 0.632456, 0.316228, 0.316228)', () => {
      const [x1, x2, y1, y2] = [[1, 0, 0], [0, 1, 0], normalize([1, 1, 0.6]), normalize([-0.2, 1, 1])];
      const a = closestPointsOnArcs(gramOf(x1, x2, y1, y2));
      expect(a).to.include({ alphaRole: 'interior', betaRole: 'start' });
      arcPoint(x1, x2, a.alpha).forEach((v, i) => expect(v).to.be.closeTo([0.707107, 0.707107, 0][i]!, 1e-6));
      const c: [Vector, Vector, Vector, Vector] = [[1, 0, 0, 0], [0, 1, 0, 0], normalize([1, 0.2, 0, 0.6]), normalize([0.2, 1, 0.6, 0])];
      const solution = closestPointsOnArcs(gramOf(...c));
      arcPoint(c[2], c[3], solution.beta).forEach((v, i) => expect(v).to.be.closeTo([0.632456, 0.632456, 0.316228, 0.316228][i]!, 1e-6));
    });
  });

  describe('equals a grid search on 500 random arc pairs per dimension (1e-5), all nine cases coming up', () => {
    const cases = new Set<number>();
    for (const dim of [3, 4, 8, 16]) {
      it(`${dim} dimensions`, () => {
        const rng = new Rng(100 + dim);
        for (let trial = 0; trial < 500; trial++) {
          const [x1, x2, y1, y2] = randomQuadruple(rng, dim);
          const solution = closestPointsOnArcs(gramOf(x1, x2, y1, y2));
          cases.add(solution.kase);
          const p1 = arcPoint(x1, x2, solution.alpha);
          const p2 = arcPoint(y1, y2, solution.beta);
          const label = `dim ${dim} trial ${trial} case ${solution.kase}`;
          expect(solution.alpha, label).to.be.within(0, solution.alpha0);
          expect(solution.beta, label).to.be.within(0, solution.beta0);
          // 1e-7: sqrt(2(1 + f)) near 0 carries the square root of the rounding of f.
          expect(distance(p1, p2), `${label}: reported distance is that of its points`).to.be.closeTo(solution.distance, 1e-7);
          const searched = gridMinimum((a) => arcPoint(x1, x2, a), (b) => arcPoint(y1, y2, b), solution.alpha0, solution.beta0);
          expect(solution.distance, label).to.be.closeTo(searched, 1e-5);
          expect(solution.distance, `${label}: not above a feasible point`).to.be.at.most(searched + 1e-7);
        }
      });
    }
    it('all nine KKT cases occurred', () => {
      expect([...cases].sort()).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    });
  });

  it('treats an arc with coincident (or antipodal) endpoints as its start point', () => {
    const rng = new Rng(3);
    for (let trial = 0; trial < 50; trial++) {
      const [x1, , y1, y2] = randomQuadruple(rng, 5);
      const pointToArc = closestPointsOnArcs(gramOf(x1, x1, y1, y2));
      expect(pointToArc).to.include({ alpha0: 0, alpha: 0, alphaRole: 'start' });
      const searched = gridMinimum(() => x1, (b) => arcPoint(y1, y2, b), 0, pointToArc.beta0);
      expect(pointToArc.distance).to.be.closeTo(searched, 1e-5);
      const both = closestPointsOnArcs(gramOf(x1, x1, y1, y1));
      expect(both.distance).to.be.closeTo(distance(x1, y1), 1e-9);
      const antipodal = closestPointsOnArcs(gramOf(x1, x1.map((v) => -v), y1, y2));
      expect(antipodal.alpha0).to.equal(0);
      expect(antipodal.distance).to.be.closeTo(pointToArc.distance, 1e-9);
    }
  });

  describe('line-segment variant equals a grid search on 500 random segment pairs per dimension (1e-5)', () => {
    for (const dim of [3, 4, 8, 16]) {
      it(`${dim} dimensions`, () => {
        const rng = new Rng(200 + dim);
        const lerp = (a: Vector, b: Vector, k: number): Vector => a.map((x, i) => (1 - k) * x + k * b[i]!);
        for (let trial = 0; trial < 500; trial++) {
          const [x1, x2, y1, y2] = randomQuadruple(rng, dim);
          const solution = closestPointsOnSegments(gramOf(x1, x2, y1, y2));
          const label = `dim ${dim} trial ${trial}`;
          expect(solution.k1, label).to.be.within(0, 1);
          expect(solution.k2, label).to.be.within(0, 1);
          expect(distance(lerp(x1, x2, solution.k1), lerp(y1, y2, solution.k2)), label).to.be.closeTo(solution.distance, 1e-7);
          const searched = gridMinimum((k1) => lerp(x1, x2, k1), (k2) => lerp(y1, y2, k2), 1, 1);
          expect(solution.distance, label).to.be.closeTo(searched, 1e-5);
        }
      });
    }

    it('parallel and degenerate segments', () => {
      // Both along (−1, 1, 0): the lines x + y = 1 (z = 0) and x + y = 1/√2 (z = 1/√2), overlapping in projection.
      const parallel = closestPointsOnSegments(gramOf([1, 0, 0], [0, 1, 0], normalize([1, 0, 1]), normalize([0, 1, 1])));
      expect(parallel.distance).to.be.closeTo(Math.hypot((1 - Math.SQRT1_2) * Math.SQRT1_2, Math.SQRT1_2), 1e-9);
      const point = closestPointsOnSegments(gramOf([1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]));
      expect(point.distance).to.be.closeTo(Math.hypot(1, 0.5, 0.5), 1e-9);
    });
  });
});
