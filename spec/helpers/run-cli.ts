/**
 * @file Runs the `dml` CLI in-process and captures what it writes to stdout and stderr.
 */
import { runCli } from '../../lib/cli/program.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCliCaptured(argv: string[]): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  // As a stream's write does, call the callback once the chunk is taken (writeStandardOutput awaits it).
  const capture = (append: (text: string) => void) =>
    ((chunk: string | Uint8Array, encodingOrDone?: unknown, done?: unknown) => {
      append(chunk.toString());
      const callback = typeof encodingOrDone === 'function' ? encodingOrDone : done;
      if (typeof callback === 'function') queueMicrotask(() => (callback as (err?: Error) => void)());
      return true;
    }) as typeof process.stdout.write;
  process.stdout.write = capture((text) => (stdout += text));
  process.stderr.write = capture((text) => (stderr += text));
  try {
    const code = await runCli(argv);
    return { code, stdout, stderr };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
}
