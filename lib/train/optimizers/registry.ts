/**
 * @file Every optimiser kind by name (optimizer-entry.ts): adding one is its file in this folder and
 * its line here; `optimizer.kind` in the config takes these names.
 */
import { DmlError } from '../../errors.js';
import { ADAM } from './adam.js';
import { MOMENTUM } from './momentum.js';
import type { OptimizerEntry } from './optimizer-entry.js';
import { SGD } from './sgd.js';

const ENTRIES = [SGD, MOMENTUM, ADAM] as const;

/** The optimiser kinds, as `optimizer.kind` takes them. */
export type OptimizerKind = (typeof ENTRIES)[number]['name'];

/** Every `optimizer.kind`, in the config's order. */
export const OPTIMIZER_KINDS = ENTRIES.map((e) => e.name) as [OptimizerKind, ...OptimizerKind[]];

/** The entry of optimiser kind `kind`. */
export function optimizerEntry(kind: string): OptimizerEntry {
  const entry = ENTRIES.find((e) => e.name === kind);
  if (!entry) throw new DmlError('E_ARG', `optimizer.kind: expected one of ${OPTIMIZER_KINDS.join(', ')}, got ${kind}`);
  return entry;
}
