/**
 * @file Cluster counts for NMI+: absolute counts (`100`) or multiples of the label count (`10x`).
 */
import { invalidParameterError } from '../errors.js';

/** The default NMI+ sweep: 1x, 2x, 5x, 10x and 30x the number of labels (capped at the point count). */
export const DEFAULT_CLUSTER_COUNT_SPECS = ['1x', '2x', '5x', '10x', '30x'];

/** Validates specs such as `['1x', '10x', '500']`; returns them unchanged. */
export function parseClusterCountSpecs(specs: string[], name = '--nmi-k'): string[] {
  if (specs.length === 0) throw invalidParameterError(name, 'at least one cluster count', specs);
  for (const s of specs) {
    if (!/^(\d+(\.\d+)?x|\d+)$/.test(s) || Number.parseFloat(s) <= 0) {
      throw invalidParameterError(name, 'positive integers or multiples of the label count such as 10x', s);
    }
  }
  return specs;
}

/**
 * Resolves specs to distinct cluster counts, ascending: `Nx` -> round(N * labelCount), capped at
 * `pointCount`, at least 1. The label count itself (1x) is always included, since NMI and F1 use it.
 */
export function resolveClusterCounts(specs: string[], labelCount: number, pointCount: number): number[] {
  const counts = new Set<number>([Math.min(labelCount, pointCount)]);
  for (const s of specs) {
    const k = s.endsWith('x') ? Math.round(Number.parseFloat(s) * labelCount) : Number.parseInt(s, 10);
    counts.add(Math.max(1, Math.min(k, pointCount)));
  }
  return [...counts].sort((a, b) => a - b);
}

/**
 * The cluster-count spec of NMI+ as a single number: paper 004 (Levi et al.; METHODS.md sections 5.4
 * and 8.4) reports NMI with K = 10 x the number of classes (CUB, Cars) as "NMI+".
 */
export const NMI_PLUS_SPEC = '10x';

/**
 * NMI+ read off an NMI curve: the NMI of the point whose cluster count is {@link NMI_PLUS_SPEC}
 * resolved for `labelCount` labels and `pointCount` clustered points (as {@link resolveClusterCounts}
 * resolves it, so capped at the point count), or null when the curve was computed without that count
 * (e.g. with the specs `['1x']`). `curve` is what the evaluation returns (`EvaluationMetrics.nmiCurve`).
 */
export function nmiPlusOf(curve: ReadonlyArray<{ k: number; nmi: number }>, labelCount: number, pointCount: number): number | null {
  const k = Math.max(...resolveClusterCounts([NMI_PLUS_SPEC], labelCount, pointCount));
  return curve.find((p) => p.k === k)?.nmi ?? null;
}
