/**
 * @file The gradient components of the direct-gradient framework (paper 003: Xuan & Pless,
 * "Dissecting the impact of different loss functions with gradient surgery"; docs/methods.md section 4),
 * as plain functions of one mined triplet (a, p, n) of L2-normalised features with similarities
 * `S_ap`, `S_an`. The framework sets the gradient on the features directly:
 *
 *     ∂/∂f_p = T · P⁺ · e_p      ∂/∂f_n = T · P⁻ · e_n      ∂/∂f_a = T · (P⁺ · e_ap + P⁻ · e_an)
 *
 * Unit directions e (docs/methods.md 4.2):
 * - `euc`: `e_p = (f_p − f_a)/‖f_p − f_a‖`, `e_n = (f_a − f_n)/‖f_a − f_n‖`, `e_ap = −e_p`, `e_an = −e_n`;
 * - `cos`: `e_p = −f_a`, `e_n = f_a`, `e_ap = −f_p`, `e_an = f_n`;
 * - `euc-orth`, `cos-orth` (Eq. 7, `e_n · (f_a − f_p) = 0`): with `û = (f_a − f_p)/‖f_a − f_p‖`,
 *   `e_n ← normalize(e_n − (e_n·û) û)`. docs/methods.md Q9: `orthogonalize: 'negative'` (default; the
 *   constraint names e_n only) or `'negative-and-anchor'` (e_an projected the same way). The projected
 *   direction is always renormalised (the paper defines every e as a unit vector). Guards: when
 *   `‖f_a − f_p‖ < 1e-6` or the projection is shorter than 1e-6 the direction is left unprojected; a
 *   Euclidean direction between coincident points is 0.
 *
 * Pair weights P⁺ (a–p terms), P⁻ (a–n terms) (docs/methods.md 4.3; α = 2, β = 10, λ = `base` = 0.5):
 * - `con`: 1, 1;  `euc`: `‖f_a − f_p‖`, `‖f_a − f_n‖`;  `lin`: `1 − S_ap`, `S_an`;
 * - `sig` (binomial deviance): `1/(1 + e^{α(S_ap − λ)})`, `1/(1 + e^{−β(S_an − λ)})`;
 * - `sig-ms`: `1/(m⁺ + e^{α(S_ap − λ)})`, `1/(m⁻ + e^{−β(S_an − λ)})` with the relative terms
 *   `m⁺ = agg_{R ∈ 𝒫} e^{α(S_ap − R)}`, `m⁻ = agg_{R ∈ 𝒩} e^{−β(S_an − R)}`;
 * - `lin-ms` (Eq. 14): `(1 − m⁺)(1 − S_ap)`, `(1 + m⁻) S_an` with `m⁺ = agg (S_ap − R)`, `m⁻ = agg (S_an − R)`.
 *
 * 𝒫 and 𝒩 hold the anchor's similarities to its *other* positives and negatives kept by the
 * multi-similarity rule (`R⁺ < max(S_an, max R⁻) + ε`, `R⁻ > min(S_ap, min R⁺) − ε`, over all of the
 * anchor's pairs; under EPHN mining `max(S_an, max R⁻) = S_an`), see direct-gradient.ts. The
 * aggregation `agg` (docs/methods.md Q10, option `msRelative`):
 * - `mean-others` (default, the paper's text): the mean over the set; an empty set gives m = 1 (sig)
 *   and m = 0 (lin), which the paper says recovers P_sig and P_lin;
 * - `mean-with-selected`: the mean over the set plus the selected pair itself (which contributes
 *   e^0 = 1, resp. 0), so the set is never empty;
 * - `sum-with-selected`: the original MS loss's sum, `m = 1 + Σ` (sig) and `m = Σ` (lin): with it
 *   `P⁺_sig-ms`, `P⁻_sig-ms` are exactly the MS loss's derivatives w.r.t. the selected pair.
 * The m⁻ sign follows the MS derivation (`∂L_MS/∂S_an = 1/(e^{−β(S_an−λ)} + Σ_k e^{−β(S_an − S_ak)})`);
 * the paper's appendix describes m⁻ with the opposite monotonicity, which its Eq. 13 contradicts.
 *
 * Triplet weights T (docs/methods.md 4.4; τ multiplies, `tau` = 10 by default, the NCA temperature 0.1 of
 * the EPHN code paper 003 builds on, docs/methods.md Q11):
 * - `con`: 0.5;  `cos`: `1/(1 + e^{τ(S_ap − S_an)})`;  `cir`: `1/(1 + e^{τ(S_ap(2 − S_ap) − S_an²)})`;
 * - `+sc1`: P⁺ ← 0 when `S_an > S_ap` (selectively contrastive, SCT);
 * - `+sc2`: P⁺ ← 0 outside the circle of the easy corner. docs/methods.md Q12, option `sc2Boundary`:
 *   `circle` (default, Fig. 3: P⁺ survives only where `(1 − S_ap)² + S_an² ≤ 0.5`, i.e.
 *   `S_ap(2 − S_ap) − S_an² ≥ 0.5`) or `text` (Eq. 19 as printed: P⁺ ← 0 where `S_ap(2 − S_ap) − S_an² > 0.5`).
 *
 * Closed forms: four combinations are the gradients of a per-triplet loss ℓ(f_a, f_p, f_n), which
 * {@link closedFormValue} evaluates: (euc, euc, con) `(‖f_a − f_p‖² − ‖f_a − f_n‖²)/4` (the Euclidean
 * triplet loss without its hinge, scaled by T_con/2); (cos, con, cos) `softplus(τ(S_an − S_ap))/τ`
 * (the NCA cosine triplet loss divided by τ); (cos, lin, cir) `softplus(τ(S_an² − S_ap(2 − S_ap)))/(2τ)`
 * (the circle loss); (cos, sig, con) `[softplus(−α(S_ap − λ))/α + softplus(β(S_an − λ))/β]/2`
 * (binomial deviance, scaled by T_con).
 */

/** Unit gradient directions (docs/methods.md 4.2). */
export const GRADIENT_DIRECTIONS = ['euc', 'cos', 'euc-orth', 'cos-orth'] as const;
export type GradientDirection = (typeof GRADIENT_DIRECTIONS)[number];

/** Pair weights (docs/methods.md 4.3). */
export const PAIR_WEIGHTS = ['con', 'euc', 'lin', 'lin-ms', 'sig', 'sig-ms'] as const;
export type PairWeight = (typeof PAIR_WEIGHTS)[number];

/** Triplet weights, optionally with a selectively-contrastive mask on P⁺ (docs/methods.md 4.4). */
export const TRIPLET_WEIGHTS = ['con', 'cos', 'cir', 'con+sc1', 'con+sc2', 'cos+sc1', 'cos+sc2', 'cir+sc1', 'cir+sc2'] as const;
export type TripletWeight = (typeof TRIPLET_WEIGHTS)[number];

/** Which directions the orthogonal variants project (docs/methods.md Q9). */
export type OrthogonalizeRule = 'negative' | 'negative-and-anchor';

/** How the relative-similarity terms of the MS pair weights aggregate (docs/methods.md Q10). */
export type RelativeAggregation = 'mean-others' | 'mean-with-selected' | 'sum-with-selected';

/** The reading of T_sc2's boundary (docs/methods.md Q12). */
export type Sc2Boundary = 'circle' | 'text';

/** The scalar parameters of the weights. */
export interface WeightParameters {
  /** τ of T_cos, T_cir. */
  readonly tau: number;
  /** α, β, λ of P_sig and P_sig-ms. */
  readonly alpha: number;
  readonly beta: number;
  readonly base: number;
  readonly msRelative: RelativeAggregation;
  readonly sc2Boundary: Sc2Boundary;
}

/** One mined triplet's similarities and the relative similarities of its anchor's other kept pairs. */
export interface TripletSimilarities {
  readonly sap: number;
  readonly san: number;
  /** `‖f_a − f_p‖`, `‖f_a − f_n‖` (for P_euc). */
  readonly dap: number;
  readonly dan: number;
  /** 𝒫: the anchor's similarities to its other kept positives. */
  readonly relativePositives: readonly number[];
  /** 𝒩: the anchor's similarities to its other kept negatives. */
  readonly relativeNegatives: readonly number[];
}

/** The unit directions of one triplet, each of length D. */
export interface TripletDirections {
  readonly ep: Float64Array;
  readonly en: Float64Array;
  readonly eap: Float64Array;
  readonly ean: Float64Array;
}

/** Below this length a difference vector or projection is treated as 0 (docs/methods.md 4.2 guard). */
const DIRECTION_GUARD = 1e-6;

function softplus(z: number): number {
  return Math.max(z, 0) + Math.log1p(Math.exp(-Math.abs(z)));
}

function sigmoid(z: number): number {
  return z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z));
}

/** T of a triplet and whether its positive terms survive the sc1/sc2 mask. */
export function tripletWeight(kind: TripletWeight, sap: number, san: number, parameters: WeightParameters): { weight: number; keepPositive: boolean } {
  const [base, mask] = kind.split('+') as ['con' | 'cos' | 'cir', 'sc1' | 'sc2' | undefined];
  const { tau } = parameters;
  const weight = base === 'con' ? 0.5 : base === 'cos' ? sigmoid(tau * (san - sap)) : sigmoid(tau * (san * san - sap * (2 - sap)));
  const circle = sap * (2 - sap) - san * san;
  let keepPositive = true;
  if (mask === 'sc1') keepPositive = !(san > sap);
  else if (mask === 'sc2') keepPositive = parameters.sc2Boundary === 'circle' ? circle >= 0.5 : !(circle > 0.5);
  return { weight, keepPositive };
}

/** The relative term m of the sig-ms (`exponents` are the α(S_ap − R) or −β(S_an − R)) or lin-ms (`differences`) weights. */
function relativeTerm(values: readonly number[], kind: 'sig' | 'lin', rule: RelativeAggregation): number {
  const selected = kind === 'sig' ? 1 : 0;
  const sum = values.reduce((total, v) => total + v, 0);
  if (rule === 'sum-with-selected') return selected + sum;
  if (rule === 'mean-with-selected') return (selected + sum) / (values.length + 1);
  return values.length === 0 ? selected : sum / values.length;
}

/** `[P⁺, P⁻]` of a triplet (see the file comment). */
export function pairWeights(kind: PairWeight, t: TripletSimilarities, parameters: WeightParameters): [number, number] {
  const { alpha, beta, base, msRelative } = parameters;
  switch (kind) {
    case 'con':
      return [1, 1];
    case 'euc':
      return [t.dap, t.dan];
    case 'lin':
      return [1 - t.sap, t.san];
    case 'sig':
      return [1 / (1 + Math.exp(alpha * (t.sap - base))), 1 / (1 + Math.exp(-beta * (t.san - base)))];
    case 'sig-ms': {
      const mPositive = relativeTerm(t.relativePositives.map((r) => Math.exp(alpha * (t.sap - r))), 'sig', msRelative);
      const mNegative = relativeTerm(t.relativeNegatives.map((r) => Math.exp(-beta * (t.san - r))), 'sig', msRelative);
      return [1 / (mPositive + Math.exp(alpha * (t.sap - base))), 1 / (mNegative + Math.exp(-beta * (t.san - base)))];
    }
    case 'lin-ms': {
      const mPositive = relativeTerm(t.relativePositives.map((r) => t.sap - r), 'lin', msRelative);
      const mNegative = relativeTerm(t.relativeNegatives.map((r) => t.san - r), 'lin', msRelative);
      return [(1 - mPositive) * (1 - t.sap), (1 + mNegative) * t.san];
    }
  }
}

function dot(u: ArrayLike<number>, v: ArrayLike<number>): number {
  let s = 0;
  for (let d = 0; d < u.length; d++) s += u[d]! * v[d]!;
  return s;
}

/** `(u − v)/‖u − v‖` and the length, 0 for coincident points. */
function unitDifference(u: ArrayLike<number>, v: ArrayLike<number>): { unit: Float64Array; length: number } {
  const unit = Float64Array.from(u, (x, d) => x - v[d]!);
  const length = Math.sqrt(dot(unit, unit));
  for (let d = 0; d < unit.length; d++) unit[d] = length < DIRECTION_GUARD ? 0 : unit[d]! / length;
  return { unit, length };
}

/** `normalize(e − (e·û)û)`, or `e` unchanged when the projection is shorter than the guard. */
function projectOut(e: Float64Array, u: Float64Array): Float64Array {
  const along = dot(e, u);
  const out = Float64Array.from(e, (x, d) => x - along * u[d]!);
  const length = Math.sqrt(dot(out, out));
  if (length < DIRECTION_GUARD) return e;
  for (let d = 0; d < out.length; d++) out[d] = out[d]! / length;
  return out;
}

/** The unit directions of a triplet of normalised features (see the file comment). */
export function tripletDirections(
  kind: GradientDirection,
  fa: ArrayLike<number>,
  fp: ArrayLike<number>,
  fn: ArrayLike<number>,
  orthogonalize: OrthogonalizeRule,
): TripletDirections {
  let ep: Float64Array;
  let en: Float64Array;
  let eap: Float64Array;
  let ean: Float64Array;
  if (kind === 'euc' || kind === 'euc-orth') {
    ep = unitDifference(fp, fa).unit;
    en = unitDifference(fa, fn).unit;
    eap = ep.map((x) => -x);
    ean = en.map((x) => -x);
  } else {
    ep = Float64Array.from(fa, (x) => -x);
    en = Float64Array.from(fa);
    eap = Float64Array.from(fp, (x) => -x);
    ean = Float64Array.from(fn);
  }
  if (kind === 'euc-orth' || kind === 'cos-orth') {
    const positiveAxis = unitDifference(fa, fp);
    if (positiveAxis.length >= DIRECTION_GUARD) {
      en = projectOut(en, positiveAxis.unit);
      if (orthogonalize === 'negative-and-anchor') ean = projectOut(ean, positiveAxis.unit);
    }
  }
  return { ep, en, eap, ean };
}

/**
 * The per-triplet loss whose gradient is the injected one, for the four combinations that have a
 * closed form (see the file comment), or null.
 */
export function closedFormValue(
  direction: GradientDirection,
  pairWeight: PairWeight,
  tripletWeightKind: TripletWeight,
  t: TripletSimilarities,
  parameters: WeightParameters,
): number | null {
  const { tau, alpha, beta, base } = parameters;
  const key = `${direction}/${pairWeight}/${tripletWeightKind}`;
  switch (key) {
    case 'euc/euc/con':
      return (t.dap * t.dap - t.dan * t.dan) / 4;
    case 'cos/con/cos':
      return cosineTripletValue(t.sap, t.san, tau);
    case 'cos/lin/cir':
      return softplus(tau * (t.san * t.san - t.sap * (2 - t.sap))) / (2 * tau);
    case 'cos/sig/con':
      return (softplus(-alpha * (t.sap - base)) / alpha + softplus(beta * (t.san - base)) / beta) / 2;
    default:
      return null;
  }
}

/** The cosine NCA triplet loss `softplus(τ(S_an − S_ap))/τ`, the progress value of combinations without a closed form. */
export function cosineTripletValue(sap: number, san: number, tau: number): number {
  return softplus(tau * (san - sap)) / tau;
}
