/**
 * @file How the reports write a label: with its class name where the run's dataset has one
 * (report.json's `dataset.classNames`: the dataset's own, or `dml eval --class-names`).
 */
import type { RunReport } from '../eval/run-report.js';

/** `Trouser (1)` for label `1` named `Trouser`; the label alone without a name. */
export function classLabel(run: Pick<RunReport, 'dataset'>, label: string): string {
  const name = run.dataset.classNames?.[label];
  return name === undefined || name === label ? label : `${name} (${label})`;
}
