/**
 * @file `dml compare`: results already on disk side by side, nothing trained or embedded again.
 *
 *   dml compare runs/a runs/b ...                    training runs: their curves overlaid
 *   dml compare evalA/report.json evalB ...          evaluation reports: one cross-model report
 *
 * Prints a Markdown table on stdout; with `--out`, writes the page (report.html; for evaluation
 * reports also report.json and report.md) there. The work is in compare-run.ts, loaded when the
 * command runs; it loads neither TensorFlow.js nor onnxruntime.
 */
import type { Command } from 'commander';

/** Raw option values of `dml compare`. */
export interface CompareFlags {
  out?: string;
}

/** Registers `compare` on the program. */
export function registerCompareCommand(program: Command, commandLine: string[]): void {
  program
    .command('compare')
    .description('Compare saved results: dml train run folders (curves overlaid) or dml eval report.json files (one cross-model report)')
    .argument('<inputs...>', 'two or more dml train output folders, or two or more dml eval report.json files (or the --out folders holding them)')
    .option('--out <dir>', 'write report.html (and, for evaluation reports, report.json and report.md) here (default: print the table only)')
    .action(async (inputs: string[], flags: CompareFlags) => {
      const { runCompare } = await import('./compare-run.js');
      await runCompare(inputs, flags, commandLine);
    });
}
