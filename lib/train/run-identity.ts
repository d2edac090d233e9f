/**
 * @file What makes two training configurations the same run, for `--resume`, and what a new run does
 * to a folder that already holds one.
 *
 * A run's identity is its configuration without the fields a resume may change: `epochs` or `steps` (the budget),
 * `out` (where the folder is: a relative or absolute spelling, a trailing slash or a moved copy is the
 * same run) and `backend` (checkpoints move between backends). The checkpoint keeps the identity itself
 * beside its hash, so a refused resume names the fields that differ.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import { DmlError } from '../errors.js';
import { canonicalJson, sha256 } from '../util/hash.js';

/** Configuration fields a resume may change (see the file comment): the budget, where the folder is, the backend, its device and micro-batch, and the editor's `$schema`. */
export const RESUMABLE_FIELDS = ['epochs', 'steps', 'out', 'backend', 'device', 'microBatch', '$schema'] as const;

/** The identity of `config`: a copy without {@link RESUMABLE_FIELDS}, and its hash. */
export function runIdentity(config: object): { identity: Record<string, unknown>; hash: string } {
  const identity: Record<string, unknown> = JSON.parse(JSON.stringify(config)) as Record<string, unknown>;
  for (const field of RESUMABLE_FIELDS) delete identity[field];
  return { identity, hash: sha256(canonicalJson(identity)) };
}

/**
 * The hash checkpoints written before identities were kept used: the configuration but `epochs`, with
 * none of the fields the trainer now adds to the identity (`budgetUnit`, `scheduleSteps`).
 */
export function legacyConfigHash(config: object): string {
  return sha256(canonicalJson({ ...config, epochs: undefined, budgetUnit: undefined, scheduleSteps: undefined }));
}

/** Dotted paths of the leaves where `a` and `b` differ (arrays compare whole), with both values. */
export function differingFields(a: unknown, b: unknown, prefix = ''): Array<{ field: string; was: unknown; now: unknown }> {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((key) => differingFields(a[key], b[key], prefix === '' ? key : `${prefix}.${key}`));
  }
  return canonicalJson(a ?? null) === canonicalJson(b ?? null) ? [] : [{ field: prefix === '' ? '(top level)' : prefix, was: a, now: b }];
}

/**
 * Checks that a checkpoint's saved identity matches this run's. Errors: E_ARG naming every differing
 * field with its value in the checkpoint and now; for a checkpoint that kept only a hash (older
 * versions), E_ARG without field names unless its hash matches the legacy one.
 */
export function checkResumeIdentity(checkpointDir: string, saved: { configHash?: unknown; identity?: unknown }, config: object): void {
  const { identity, hash } = runIdentity(config);
  if (saved.identity !== undefined) {
    const differences = differingFields(saved.identity, identity);
    if (differences.length === 0 && saved.configHash === hash) return;
    const listed = differences.map((d) => `${d.field} (${JSON.stringify(d.was ?? null)} in the checkpoint, ${JSON.stringify(d.now ?? null)} now)`).join('; ');
    throw new DmlError('E_ARG', `Cannot resume from ${checkpointDir}: it was written by a different configuration: ${listed || 'the same fields, another hash'}`);
  }
  if (saved.configHash === hash || saved.configHash === legacyConfigHash(config)) return;
  throw new DmlError(
    'E_ARG',
    `Cannot resume from ${checkpointDir}: it was written by a different configuration (the checkpoint, from an older dmlkit, records only a hash; its out and backend were part of it, so give them as they were)`,
  );
}

/** Files whose presence says a folder holds a training run. */
const RUN_MARKERS = ['checkpoints/last/checkpoint.json', 'log.jsonl', 'config.json', 'report.json'];

/**
 * Refuses to start a new run in `out` when it holds one (unless `overwrite`), so a finished run is never
 * replaced without a word. Errors: E_ARG naming the file found, `--resume`, a new `--out` and `--overwrite`.
 */
export async function checkNewRunFolder(out: string, overwrite: boolean): Promise<void> {
  if (overwrite) return;
  for (const marker of RUN_MARKERS) {
    const file = path.join(out, marker);
    const exists = await access(file).then(
      () => true,
      () => false,
    );
    if (exists) {
      throw new DmlError('E_ARG', `${out} already holds a training run (${marker}): give --resume to continue it, a new --out, or --overwrite to replace it`);
    }
  }
}
