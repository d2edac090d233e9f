/**
 * @file The `dml` command line: builds the commander program and runs it, turning errors into one
 * line on stderr and an exit code (2 = usage error, 1 = runtime failure).
 */
import { Command, CommanderError } from 'commander';
import { DmlError } from '../errors.js';
import { collectVersions } from '../report/report.js';
import { silenceProgress } from '../util/progress.js';
import { registerEvalCommand } from './eval-command.js';
import { registerExportCommand } from './export-command.js';
import { registerIndexCommand } from './index-command.js';
import { registerServeCommand } from './serve-command.js';
import { registerTrainCommand } from './train-command.js';

/** The program with every command registered; `commandLine` is recorded in reports. */
export function createProgram(commandLine: string[]): Command {
  const program = new Command();
  program
    .name('dml')
    .description('dmlkit: train, export, evaluate and serve deep-metric-learning image embedders')
    .version(collectVersions()['dmlkit'] ?? 'unknown')
    .option('--verbose', 'print stack traces on errors')
    .option('--quiet', 'no progress on stderr (no bars on a terminal, no progress lines elsewhere, no summary line); warnings and errors still print')
    .exitOverride()
    .showHelpAfterError('(run dml help for usage)')
    .hook('preAction', () => {
      if (program.opts<{ quiet?: boolean }>().quiet === true) silenceProgress();
    });
  registerEvalCommand(program, commandLine);
  registerTrainCommand(program);
  registerExportCommand(program);
  registerIndexCommand(program);
  registerServeCommand(program);
  return program;
}

/** Runs the CLI on `argv` (without node and script) and returns the exit code. */
export async function runCli(argv: string[]): Promise<number> {
  const program = createProgram(argv);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander has already printed its message; help and version exit with code 0.
      return err.exitCode === 0 ? 0 : 2;
    }
    const verbose = argv.includes('--verbose');
    if (err instanceof DmlError) {
      process.stderr.write(`dml: ${err.message}\n`);
      if (verbose && err.stack) process.stderr.write(`${err.stack}\n`);
      return err.code === 'E_ARG' ? 2 : 1;
    }
    process.stderr.write(`dml: unexpected error: ${(err as Error).message ?? String(err)}\n`);
    if (verbose) process.stderr.write(`${(err as Error).stack ?? ''}\n`);
    return 1;
  }
}
