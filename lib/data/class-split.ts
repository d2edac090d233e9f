/**
 * @file Class-disjoint split for any layout: the items of the named train classes become training
 * items (split `train`, no evaluation role), all others test items that are query and gallery
 * (query set = gallery set). This replaces the layout's own split and roles, e.g. the IDX layout's
 * train/t10k files become "classes 0-4 train, 5-9 test" with `0-4`.
 *
 * Spec: comma-separated terms, each a label name or an inclusive integer range `<from>-<to>`:
 * ```
 * 0-4            labels 0, 1, 2, 3, 4
 * 0,1,2          labels 0, 1, 2
 * 1-100,cat      labels 1 to 100 and "cat"
 * ```
 * Use: `applyClassSplit(manifest, parseClassList('0-4'))`. A term that is exactly a label name means
 * that label (so a label `2-3` is never read as a range). A range matches labels written as decimal
 * integers (`007` is 7). Every term must match at least one label, and at least one label must remain
 * for testing; otherwise E_ARG.
 */
import { invalidParameterError } from '../errors.js';
import { summarizeNames } from './layout-support.js';
import type { Manifest } from './manifest.js';

/**
 * Splits a class-list spec into its terms (`"0-4, cat"` to `["0-4", "cat"]`), rejecting empty terms.
 * The terms are matched against the dataset's labels by {@link applyClassSplit}. `name` is the
 * parameter's name in error messages (e.g. `--train-classes`).
 */
export function parseClassList(spec: string, name = 'trainClasses'): string[] {
  const terms = typeof spec === 'string' ? spec.split(',').map((t) => t.trim()) : [];
  if (terms.length === 0 || terms.some((t) => t === '')) {
    throw invalidParameterError(name, 'comma-separated labels or ranges such as "0-4" or "0,1,2"', spec);
  }
  return terms;
}

/** The labels of `labels` that the class-list `terms` select (see the file comment). */
export function selectLabels(terms: readonly string[], labels: ReadonlySet<string>, name = 'trainClasses'): Set<string> {
  const selected = new Set<string>();
  for (const term of terms) {
    if (labels.has(term)) {
      selected.add(term);
      continue;
    }
    const range = /^(\d+)-(\d+)$/.exec(term);
    if (!range) {
      throw invalidParameterError(name, `labels of the dataset (e.g. ${summarizeNames([...labels])}) or ranges such as "0-4"`, term);
    }
    const from = Number(range[1]);
    const to = Number(range[2]);
    if (from > to) throw invalidParameterError(name, 'a range <from>-<to> with from <= to', term);
    let matched = false;
    for (const label of labels) {
      if (/^\d+$/.test(label) && Number(label) >= from && Number(label) <= to) {
        selected.add(label);
        matched = true;
      }
    }
    if (!matched) throw invalidParameterError(name, 'a range that matches at least one integer label of the dataset', term);
  }
  return selected;
}

/**
 * Applies a class-disjoint split (see the file comment) to a manifest and returns a new manifest.
 * `trainClasses` are class-list terms, from {@link parseClassList}.
 */
export function applyClassSplit(manifest: Manifest, trainClasses: readonly string[], name = 'trainClasses'): Manifest {
  const labels = new Set(manifest.items.map((item) => item.label));
  const trainLabels = selectLabels(trainClasses, labels, name);
  const testLabelCount = labels.size - trainLabels.size;
  if (testLabelCount === 0) {
    throw invalidParameterError(name, `a subset of the ${labels.size} labels that leaves some for testing`, trainClasses.join(','));
  }
  return {
    ...manifest,
    protocol:
      `${manifest.protocol}; replaced by a class-disjoint split: ${trainLabels.size} train classes (${trainClasses.join(',')}), ` +
      `${testLabelCount} test classes, query set = gallery set`,
    items: manifest.items.map((item) => {
      const isTest = !trainLabels.has(item.label);
      return { ...item, split: isTest ? 'test' : 'train', isQuery: isTest, isGallery: isTest };
    }),
  };
}
