/**
 * @file Cluster counts: the numbers of k-means clusters NMI and F1 are computed at, given as absolute
 * counts (`100`) or multiples of the label count (`10x`). One concept with one name everywhere:
 * `--cluster-counts` on `dml eval`, `clusterCounts` in the evaluation options, the report's parameters
 * and the training config's `validation`, and `clusters` on each point of an NMI curve.
 */
import { z } from 'zod';
import { invalidParameterError } from '../errors.js';

/** A cluster count as given: absolute (`'100'`) or a multiple of the label count (`'10x'`). */
export type ClusterCountSpec = `${number}` | `${number}x`;

/** The default NMI curve: 1x, 2x, 5x, 10x and 30x the number of labels (capped at the point count). */
export const DEFAULT_CLUSTER_COUNTS: readonly ClusterCountSpec[] = ['1x', '2x', '5x', '10x', '30x'];

/** Whether `spec` is a cluster count: a positive integer, or a positive multiple such as `10x` or `2.5x`. */
export function isClusterCountSpec(spec: string): spec is ClusterCountSpec {
  return /^(\d+(\.\d+)?x|\d+)$/.test(spec) && Number.parseFloat(spec) > 0;
}

/** Checks specs such as `['1x', '10x', '500']`; returns them typed. Errors: E_ARG naming `name`. */
export function parseClusterCountSpecs(specs: readonly string[], name = '--cluster-counts'): ClusterCountSpec[] {
  if (specs.length === 0) throw invalidParameterError(name, 'at least one cluster count', specs);
  return specs.map((s) => {
    if (!isClusterCountSpec(s)) throw invalidParameterError(name, 'positive integers or multiples of the label count such as 10x', s);
    return s;
  });
}

/**
 * The schema of a list of cluster counts in a config (the training config's
 * `validation.clusterCounts`): strings checked by {@link parseClusterCountSpecs}, typed on output;
 * `name` names the field in the message.
 */
export function clusterCountSpecsSchema(name: string) {
  return z.array(z.string()).transform((specs, context) => {
    try {
      return parseClusterCountSpecs(specs, name);
    } catch (err) {
      context.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  });
}

/** The clusters a spec asks for with `labelCount` labels, before the cap at the point count. */
function requestedClusters(spec: ClusterCountSpec, labelCount: number): number {
  return spec.endsWith('x') ? Math.round(Number.parseFloat(spec) * labelCount) : Number.parseInt(spec, 10);
}

/**
 * Resolves specs to distinct cluster counts, ascending: `Nx` -> round(N * labelCount), capped at
 * `pointCount`, at least 1. The label count itself (1x) is always included, since NMI and F1 use it.
 */
export function resolveClusterCounts(specs: readonly ClusterCountSpec[], labelCount: number, pointCount: number): number[] {
  const counts = new Set<number>([Math.min(labelCount, pointCount)]);
  for (const s of specs) counts.add(Math.max(1, Math.min(requestedClusters(s, labelCount), pointCount)));
  return [...counts].sort((a, b) => a - b);
}

/**
 * The warning for cluster counts that {@link resolveClusterCounts} caps at `pointCount` (k-means cannot
 * make more clusters than points) where the cap changes a result: a count given as a number (the
 * number reported is not the one asked for) and the NMI+ count (10x: NMI+ is then not at 10 times the
 * labels). Another multiple capped (the default sweep's 30x on a small set) is no warning: its point
 * of the NMI curve is reported at the count used, `NMI k=<count>`, and nothing else depends on it.
 * Names each count and the count used; undefined when no such count is capped. E.g. `cluster count 1000
 * is more than the 30 items clustered: used 30 clusters instead`.
 */
export function clampedClusterCountsWarning(specs: readonly ClusterCountSpec[], labelCount: number, pointCount: number): string | undefined {
  const capped: string[] = [];
  for (const s of specs) {
    const k = requestedClusters(s, labelCount);
    if (k <= pointCount || (s.endsWith('x') && s !== NMI_PLUS_SPEC)) continue;
    capped.push(s.endsWith('x') ? `${s} (${k} clusters for ${labelCount} labels: NMI+)` : s);
  }
  if (capped.length === 0) return undefined;
  const list = capped.length === 1 ? capped[0] : `${capped.slice(0, -1).join(', ')} and ${capped[capped.length - 1]}`;
  return `cluster count${capped.length === 1 ? ' ' : 's '}${list} ${capped.length === 1 ? 'is' : 'are'} more than the ${pointCount} items clustered: used ${pointCount} clusters instead`;
}

/**
 * The cluster count of NMI+: paper 004 (Levi et al.; docs/methods.md sections 5.4 and 8.4) reports NMI with
 * K = 10 x the number of classes (CUB, Cars) as "NMI+". In dmlkit NMI+ is that one number; the NMI at
 * every cluster count is the NMI curve.
 */
export const NMI_PLUS_SPEC: ClusterCountSpec = '10x';

/**
 * NMI+ read off an NMI curve: the NMI of the point whose cluster count is {@link NMI_PLUS_SPEC}
 * resolved for `labelCount` labels and `pointCount` clustered points (as {@link resolveClusterCounts}
 * resolves it, so capped at the point count), or null when the curve was computed without that count
 * (e.g. with the specs `['1x']`). `curve` is what the evaluation returns (`EvaluationMetrics.nmiCurve`).
 */
export function nmiPlusOf(curve: ReadonlyArray<{ clusters: number; nmi: number }>, labelCount: number, pointCount: number): number | null {
  const clusters = Math.max(...resolveClusterCounts([NMI_PLUS_SPEC], labelCount, pointCount));
  return curve.find((p) => p.clusters === clusters)?.nmi ?? null;
}
