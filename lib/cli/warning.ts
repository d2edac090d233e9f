/**
 * @file How the commands report a warning: one `warning: <message>` line on stderr.
 */

/** Prints `message` as one `warning: ...` line on stderr. */
export function printWarning(message: string): void {
  process.stderr.write(`warning: ${message}\n`);
}
