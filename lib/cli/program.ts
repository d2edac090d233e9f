/**
 * @file The `dml` command line: builds the commander program and runs it, turning errors into one
 * line on stderr and an exit code (2 = usage error, 1 = runtime failure).
 */
import { Command, CommanderError } from 'commander';
import { DmlError } from '../errors.js';
import { collectVersions } from '../util/versions.js';
import { silenceProgress } from '../util/progress.js';
import { addHelpFooter, HELP_CONFIGURATION } from './help.js';
import { registerCompareCommand } from './compare-command.js';
import { registerEvalCommand } from './eval-command.js';
import { registerExportCommand } from './export-command.js';
import { registerIndexCommand } from './index-command.js';
import { registerServeCommand } from './serve-command.js';
import { registerTrainCommand } from './train-command.js';

/** One example per command, by command path, shown at the end of its `--help` (with the exit codes). */
export const COMMAND_EXAMPLES: Readonly<Record<string, readonly string[]>> = {
  eval: ['dml eval models/default.onnx --data folder:data/default --out runs/default --examples 6'],
  train: ['dml train --config scripts/configs/fashion-mnist-mlp.json --backend onnx --out runs/mlp', 'dml train --config scripts/configs/fashion-mnist-mlp.json steps=500 optimizer.learningRate=0.0005 --out runs/mlp-500'],
  export: ['dml export runs/mlp --out runs/mlp/model.onnx'],
  index: ['dml index build models/default.onnx folder:data/default --out runs/index'],
  'index build': ['dml index build models/default.onnx folder:data/default --out runs/index'],
  'index add': ['dml index add runs/index folder:more-images'],
  'index remove': ['dml index remove runs/index ankle_boot/t10k-00000.png'],
  'index info': ['dml index info runs/index'],
  'index optimize': ['dml index optimize lance:runs/lance-index'],
  serve: ['dml serve runs/index --port 8080'],
  compare: ['dml compare runs/mlp runs/convnet --out runs/compared', 'dml compare runs/evalA/report.json runs/evalB/report.json --out runs/compared'],
};

/** `command` and every command below it. */
function allCommands(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/** `index build` for the build command under index. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c !== null && c.parent !== null; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/**
 * Help and version text on stdout. A reader that stops early (`dml train --help | head`) closes the
 * pipe: that EPIPE ends nothing but the text, so it is no error (data output, by contrast, reports a
 * failed write: lib/util/standard-output.ts).
 */
function writeHelpText(text: string): void {
  process.stdout.once('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
  process.stdout.write(text);
}

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
    .configureHelp(HELP_CONFIGURATION)
    // One prefix for every error line, commander's usage errors included.
    .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, 'dml: ')), writeOut: writeHelpText })
    .showHelpAfterError('(run dml help for usage)')
    .hook('preAction', () => {
      // Set either way, so that one run's --quiet does not carry over to the next in the same process (the specs run the CLI in-process).
      silenceProgress(program.opts<{ quiet?: boolean }>().quiet === true);
    });
  registerEvalCommand(program, commandLine);
  registerTrainCommand(program);
  registerExportCommand(program);
  registerIndexCommand(program);
  registerServeCommand(program);
  registerCompareCommand(program, commandLine);
  addHelpFooter(program, ['dml eval models/default.onnx --data folder:data/default --out runs/default', 'dml eval --help']);
  for (const command of allCommands(program)) {
    const examples = COMMAND_EXAMPLES[commandPath(command)];
    if (examples !== undefined) addHelpFooter(command, examples);
  }
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
