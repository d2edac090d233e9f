/**
 * @file Coarse training labels (`data.trainLabelGroups`): several training classes merged into one
 * label for training only, as in paper 004's class-collapse experiments (docs/methods.md section 5; e.g.
 * Fashion-MNIST tops = {0, 2, 4, 6}, footwear = {5, 7, 9}, other = {1, 3, 8}). The sampler, the loss and
 * the scatter diagram of the training set see the group names; validation keeps the fine labels, so
 * its metrics show whether the groups collapsed into single clusters.
 *
 * Resolution happens before training: each group's terms are matched against the dataset's labels by
 * the class-list rules of lib/data/class-split.ts (a label, or an integer range `0-3`; JSON numbers are
 * labels), and every training class must land in exactly one group.
 */
import { DmlError, invalidParameterError } from '../errors.js';
import { selectLabels } from '../data/class-split.js';
import { summarizeNames } from '../data/layout-support.js';

/** The groups as written in a config: group name -> labels or range terms. */
export type LabelGroupsSpec = Record<string, ReadonlyArray<string | number>>;

/** Resolved groups. */
export interface LabelGroups {
  /** Group name -> the fine labels it holds, sorted; recorded in the run's config.json. */
  groups: Record<string, string[]>;
  /** Fine training label -> its group name. */
  groupOf: Map<string, string>;
}

const PARAMETER = 'data.trainLabelGroups';

/**
 * Resolves `spec` against the dataset's labels (`datasetLabels`) and its training classes
 * (`trainLabels`, after any class-disjoint split). Errors (E_ARG, naming `data.trainLabelGroups` or
 * `data.trainLabelGroups.<group>`): fewer than two groups; a term that matches no label of the dataset;
 * a held-out (non-training) class; a class in two groups; a training class in no group.
 */
export function resolveLabelGroups(spec: LabelGroupsSpec, datasetLabels: ReadonlySet<string>, trainLabels: ReadonlySet<string>): LabelGroups {
  const names = Object.keys(spec);
  if (names.length < 2) throw invalidParameterError(PARAMETER, 'at least 2 groups (training needs negatives)', names.length);
  const groups: Record<string, string[]> = {};
  const groupOf = new Map<string, string>();
  for (const name of names) {
    const where = `${PARAMETER}.${name}`;
    const terms = (spec[name] ?? []).map(String);
    const labels = [...selectLabels(terms, datasetLabels, where)].sort();
    for (const label of labels) {
      if (!trainLabels.has(label)) {
        throw new DmlError('E_ARG', `Expected training classes (${summarizeNames([...trainLabels].sort())}) for ${where} but received "${label}", a held-out class (see data.trainClasses)`);
      }
      const other = groupOf.get(label);
      if (other !== undefined) {
        throw new DmlError('E_ARG', `Expected each training class in exactly one group for ${PARAMETER} but received "${label}" in both "${other}" and "${name}"`);
      }
      groupOf.set(label, name);
    }
    groups[name] = labels;
  }
  const missing = [...trainLabels].filter((label) => !groupOf.has(label)).sort();
  if (missing.length > 0) {
    throw new DmlError('E_ARG', `Expected every training class in a group for ${PARAMETER} but received no group for ${missing.map((l) => `"${l}"`).join(', ')}`);
  }
  return { groups, groupOf };
}
