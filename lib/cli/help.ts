/**
 * @file How `dml ... --help` reads: every option with a value shows its default the same way
 * (`(default: exact)`, unquoted; `(default: none)` where there is none), required options say so, and
 * every command ends with an example and the exit codes.
 */
import type { Command, Help, Option } from 'commander';

/** The exit codes of every `dml` command, as `--help` lists them. */
export const EXIT_CODES_HELP = 'Exit codes: 0 success, 1 runtime failure (bad data, a model that will not load, I/O), 2 usage error (a bad flag or value), 130 interrupted (Ctrl-C).';

/** An option's help line: its description, then `(required)` or `(default: ...)`. */
export function optionDescription(option: Option): string {
  const description = option.description;
  if (option.mandatory) return `${description} (required)`;
  if (option.isBoolean() || option.negate) return description;
  if (/\(default[: ]/.test(description)) return description;
  const given: unknown = option.defaultValue;
  const value = option.defaultValueDescription ?? (given === undefined || (Array.isArray(given) && given.length === 0) ? 'none' : Array.isArray(given) ? given.join(', ') : String(given));
  return `${description} (default: ${value})`;
}

/** The help settings every `dml` command shares (set on the program before commands are added). */
export const HELP_CONFIGURATION: Partial<Help> = { optionDescription };

/** Ends `command`'s help with its examples (one command line each) and the exit codes. */
export function addHelpFooter(command: Command, examples: readonly string[]): Command {
  return command.addHelpText('after', `\nExample${examples.length > 1 ? 's' : ''}:\n${examples.map((e) => `  $ ${e}`).join('\n')}\n\n${EXIT_CODES_HELP}`);
}
