/**
 * @file The geometry of LoOp (paper 001: Vasudeva, Deora et al., "LoOp: Looking for Optimal Hard
 * Negative Embeddings for Deep Metric Learning"; docs/methods.md sections 3.2–3.6): the closest points of
 * two great-circle arcs on the unit sphere by the nine KKT cases in closed form, and of two straight
 * segments (the paper's line variant). Everything is computed from the six dot products of the four
 * unit endpoints (a {@link QuadrupleGram}), in float64; no D-dimensional vector is needed.
 *
 * Arcs x1→x2 and y1→y2 (minor arcs): `p1(α) = n1 cos α + n2 sin α`, α ∈ [0, α0], α0 = angle(x1, x2),
 * with `n1 = x1`, `n2 = (x2 − (x1·x2) x1)/‖·‖`; likewise p2(β) with n3 = y1, n4, β0. Minimise
 * `f = −p1·p2 = a sα sβ + b cα sβ + c sα cβ + d cα cβ` with `a = −n2·n4, b = −n1·n4, c = −n2·n3,
 * d = −n1·n3`; the distance is `sqrt(2(1 + f))`. Candidates (docs/methods.md 3.3; `atan[0,π)(y, x)` is
 * `atan2(y, x) mod π`):
 *
 * - case 0 (interior, two candidates): α̂ a left singular direction of `M = [[d, b], [c, a]]`,
 *   `2α̂ = atan2(2K, −A) (+π)` with `A = a² − b² + c² − d²`, `K = ab + cd` (the roots of
 *   `tan α̂ = (A ± sqrt(A² + 4K²))/(2K)` without dividing by K), then `β̂ = atan[0,π)(a sα̂ + b cα̂, c sα̂ + d cα̂)`;
 * - case 1 (α = 0): `β = atan[0,π)(b, d)`, needs `f_α ≥ 0`; case 2 (α = α0): `β = atan[0,π)(a sα0 + b cα0,
 *   c sα0 + d cα0)`, needs `f_α ≤ 0`; case 3 (β = 0): `α = atan[0,π)(c, d)`, needs `f_β ≥ 0`; case 4 (β = β0):
 *   `α = atan[0,π)(a sβ0 + c cβ0, b sβ0 + d cβ0)`, needs `f_β ≤ 0`;
 * - cases 5–8, the corners (0, 0), (0, β0), (α0, 0), (α0, β0): the multiplier signs `s_α f_α ≥ 0`,
 *   `s_β f_β ≥ 0` (s = +1 at a lower bound, −1 at an upper one).
 *
 * A candidate counts when its angles lie in their ranges and its sign conditions hold to
 * {@link KKT_TOLERANCE}; the solution is the counting candidate with the smallest f (the lowest case
 * on a tie). The global minimum of f over the rectangle satisfies KKT (the constraints are linear), so
 * it is always among them; should rounding reject every candidate, the best corner is returned.
 *
 * Numerical guards (docs/methods.md 3.4): dot products are clamped to [−1, 1] and angles come from
 * `atan2(sin, cos)` (accurate near 0 and π; no acos, whose infinite slope does not matter here as the
 * angles are constants for the gradient); an arc with `sin α0 < 1e-6` (endpoints coincident or
 * antipodal, where the geodesic is not unique) is the single point x1 (α0 = 0, n2 = 0); K = 0 and zero
 * denominators need no nudging with atan2; `2(1 + f)` is clamped at 0 before the square root.
 *
 * Segments (docs/methods.md 3.6): `p1 = (1 − k1) x1 + k1 x2`, `p2 = (1 − k2) y1 + k2 y2`, k ∈ [0, 1]²,
 * minimising the convex `‖p1 − p2‖²`: the unconstrained optimum when it lies in the square (and the
 * segments are not parallel), else the best of the four edges, each minimised in closed form and
 * clamped.
 */

/** Dot products of the four unit vectors x1, x2 (the first pair) and y1, y2 (the second). */
export interface QuadrupleGram {
  readonly x1x2: number;
  readonly y1y2: number;
  readonly x1y1: number;
  readonly x1y2: number;
  readonly x2y1: number;
  readonly x2y2: number;
}

/** Where an optimal point lies on its arc or segment. */
export type PointRole = 'start' | 'end' | 'interior';

/** The closest points of two arcs. */
export interface ArcSolution {
  /** ‖p1 − p2‖. */
  readonly distance: number;
  /** The KKT case 0–8 of the solution. */
  readonly kase: number;
  /** α̂ ∈ [0, α0], β̂ ∈ [0, β0]. */
  readonly alpha: number;
  readonly beta: number;
  readonly alpha0: number;
  readonly beta0: number;
  /** p1 = x1 (start), x2 (end), or interior; likewise p2. A degenerate arc's point is its start. */
  readonly alphaRole: PointRole;
  readonly betaRole: PointRole;
}

/** The closest points of two segments: p1 = (1 − k1) x1 + k1 x2, p2 = (1 − k2) y1 + k2 y2. */
export interface SegmentSolution {
  readonly distance: number;
  readonly k1: number;
  readonly k2: number;
}

/** Tolerance of the KKT multiplier-sign tests. */
export const KKT_TOLERANCE = 1e-9;

/** Below this `sin α0` an arc is treated as the single point at its start. */
export const DEGENERATE_ARC_SINE = 1e-6;

function clampDot(value: number): number {
  return Math.min(Math.max(value, -1), 1);
}

/** `atan2(y, x)` mapped into [0, π). */
function atanPi(y: number, x: number): number {
  const t = Math.atan2(y, x);
  const wrapped = t < 0 ? t + Math.PI : t;
  return wrapped >= Math.PI ? wrapped - Math.PI : wrapped;
}

/** Cosine, sine and angle of one arc; a degenerate arc has sine 0 and angle 0. */
function arcOf(cosine: number): { c: number; s: number; angle: number } {
  const c = clampDot(cosine);
  const s = Math.sqrt(1 - c * c);
  return s < DEGENERATE_ARC_SINE ? { c, s: 0, angle: 0 } : { c, s, angle: Math.atan2(s, c) };
}

/** The closest points of the arcs x1→x2 and y1→y2 (see the file comment). */
export function closestPointsOnArcs(g: QuadrupleGram): ArcSolution {
  const x = arcOf(g.x1x2);
  const y = arcOf(g.y1y2);
  const x1y1 = clampDot(g.x1y1);
  const x1y2 = clampDot(g.x1y2);
  const x2y1 = clampDot(g.x2y1);
  const x2y2 = clampDot(g.x2y2);
  // n2 = (x2 − c_x x1)/s_x and n4 = (y2 − c_y y1)/s_y; a degenerate arc has n = 0.
  const d = -x1y1;
  const b = y.s === 0 ? 0 : -(x1y2 - y.c * x1y1) / y.s;
  const c = x.s === 0 ? 0 : -(x2y1 - x.c * x1y1) / x.s;
  const a = x.s === 0 || y.s === 0 ? 0 : -(x2y2 - y.c * x2y1 - x.c * x1y2 + x.c * y.c * x1y1) / (x.s * y.s);
  const alpha0 = x.angle;
  const beta0 = y.angle;

  const f = (al: number, be: number): number => {
    const [sa, ca, sb, cb] = [Math.sin(al), Math.cos(al), Math.sin(be), Math.cos(be)];
    return a * sa * sb + b * ca * sb + c * sa * cb + d * ca * cb;
  };
  const fAlpha = (al: number, be: number): number => {
    const [sa, ca, sb, cb] = [Math.sin(al), Math.cos(al), Math.sin(be), Math.cos(be)];
    return a * ca * sb - b * sa * sb + c * ca * cb - d * sa * cb;
  };
  const fBeta = (al: number, be: number): number => {
    const [sa, ca, sb, cb] = [Math.sin(al), Math.cos(al), Math.sin(be), Math.cos(be)];
    return a * sa * cb + b * ca * cb - c * sa * sb - d * ca * sb;
  };
  const atLeast = (v: number): boolean => v >= -KKT_TOLERANCE;
  const atMost = (v: number): boolean => v <= KKT_TOLERANCE;
  const inRange = (al: number, be: number): boolean => al <= alpha0 && be <= beta0;
  const betaFor = (al: number): number => atanPi(a * Math.sin(al) + b * Math.cos(al), c * Math.sin(al) + d * Math.cos(al));

  const candidates: { kase: number; alpha: number; beta: number; valid: boolean }[] = [];
  const theta = Math.atan2(2 * (a * b + c * d), -(a * a - b * b + c * c - d * d)) / 2;
  for (const alpha of [atanPi(Math.sin(theta), Math.cos(theta)), atanPi(Math.cos(theta), -Math.sin(theta))]) {
    const beta = betaFor(alpha);
    candidates.push({ kase: 0, alpha, beta, valid: inRange(alpha, beta) });
  }
  const b1 = atanPi(b, d);
  candidates.push({ kase: 1, alpha: 0, beta: b1, valid: b1 <= beta0 && atLeast(fAlpha(0, b1)) });
  const b2 = betaFor(alpha0);
  candidates.push({ kase: 2, alpha: alpha0, beta: b2, valid: b2 <= beta0 && atMost(fAlpha(alpha0, b2)) });
  const a3 = atanPi(c, d);
  candidates.push({ kase: 3, alpha: a3, beta: 0, valid: a3 <= alpha0 && atLeast(fBeta(a3, 0)) });
  const a4 = atanPi(a * Math.sin(beta0) + c * Math.cos(beta0), b * Math.sin(beta0) + d * Math.cos(beta0));
  candidates.push({ kase: 4, alpha: a4, beta: beta0, valid: a4 <= alpha0 && atMost(fBeta(a4, beta0)) });
  const corners: [number, number, boolean, boolean][] = [
    [0, 0, true, true],
    [0, beta0, true, false],
    [alpha0, 0, false, true],
    [alpha0, beta0, false, false],
  ];
  corners.forEach(([alpha, beta, alphaLow, betaLow], k) => {
    const signAlpha = alphaLow ? atLeast(fAlpha(alpha, beta)) : atMost(fAlpha(alpha, beta));
    const signBeta = betaLow ? atLeast(fBeta(alpha, beta)) : atMost(fBeta(alpha, beta));
    candidates.push({ kase: 5 + k, alpha, beta, valid: signAlpha && signBeta });
  });

  const pool = candidates.some((q) => q.valid) ? candidates.filter((q) => q.valid) : candidates.filter((q) => q.kase >= 5);
  let best = pool[0]!;
  let bestValue = f(best.alpha, best.beta);
  for (const q of pool.slice(1)) {
    const value = f(q.alpha, q.beta);
    if (value < bestValue) {
      best = q;
      bestValue = value;
    }
  }
  return {
    distance: Math.sqrt(Math.max(2 * (1 + bestValue), 0)),
    kase: best.kase,
    alpha: best.alpha,
    beta: best.beta,
    alpha0,
    beta0,
    alphaRole: roleOf(best.kase, [1, 5, 6], [2, 7, 8], alpha0),
    betaRole: roleOf(best.kase, [3, 5, 7], [4, 6, 8], beta0),
  };
}

function roleOf(kase: number, atStart: readonly number[], atEnd: readonly number[], range: number): PointRole {
  if (range === 0 || atStart.includes(kase)) return 'start';
  return atEnd.includes(kase) ? 'end' : 'interior';
}

/** The closest points of the segments x1–x2 and y1–y2 of unit endpoints (see the file comment). */
export function closestPointsOnSegments(g: QuadrupleGram): SegmentSolution {
  // u = x1 − x2, v = y1 − y2, w = x1 − y1; p1 − p2 = w − k1 u + k2 v.
  const uu = Math.max(2 - 2 * g.x1x2, 0);
  const vv = Math.max(2 - 2 * g.y1y2, 0);
  const uv = g.x1y1 - g.x1y2 - g.x2y1 + g.x2y2;
  const uw = 1 - g.x1y1 - g.x1x2 + g.x2y1;
  const vw = g.x1y1 - 1 - g.x1y2 + g.y1y2;
  const ww = Math.max(2 - 2 * g.x1y1, 0);
  const squared = (k1: number, k2: number): number => ww + k1 * k1 * uu + k2 * k2 * vv - 2 * k1 * uw + 2 * k2 * vw - 2 * k1 * k2 * uv;
  const clamp01 = (k: number): number => Math.min(Math.max(k, 0), 1);
  const candidates: [number, number][] = [];
  const det = uu * vv - uv * uv;
  if (det > 1e-12 * Math.max(uu * vv, 1e-30)) {
    const k1 = (vv * uw - uv * vw) / det;
    const k2 = (uv * uw - uu * vw) / det;
    if (k1 >= 0 && k1 <= 1 && k2 >= 0 && k2 <= 1) candidates.push([k1, k2]);
  }
  // Each edge: fix one parameter, minimise the convex quadratic in the other, clamp.
  for (const k1 of [0, 1]) candidates.push([k1, vv > 0 ? clamp01((k1 * uv - vw) / vv) : 0]);
  for (const k2 of [0, 1]) candidates.push([uu > 0 ? clamp01((uw + k2 * uv) / uu) : 0, k2]);
  let [k1, k2] = candidates[0]!;
  let best = squared(k1, k2);
  for (const [c1, c2] of candidates.slice(1)) {
    const value = squared(c1, c2);
    if (value < best) [k1, k2, best] = [c1, c2, value];
  }
  return { distance: Math.sqrt(Math.max(best, 0)), k1, k2 };
}
