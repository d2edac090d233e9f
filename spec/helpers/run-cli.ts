/**
 * @file Runs the `dml` CLI in-process and captures what it writes to stdout and stderr.
 */
import { expect } from 'chai';
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

/**
 * stderr of a successful `dml eval` without its last line, the summary (which must be there, once), and
 * without the progress lines a stage longer than a second prints on a non-terminal.
 */
export function beforeSummary(stderr: string): string {
  const lines = stderr.split('\n').filter((l) => !/^(embed|search|hnsw build|hnsw search|exact reference|k-means)( \([^)]*\))?: \d+\/\d+ /.test(l));
  expect(lines.at(-1), 'stderr ends with a newline').to.equal('');
  expect(lines.at(-2)).to.match(/^dml eval: done in \d+\.\ds \((embed \d+\.\ds, )?(hnsw build \d+\.\ds, )?search \d+\.\ds, (exact reference \d+\.\ds, )?k-means \d+\.\ds\); (wrote \S|no files written \(use --out or --json\))/);
  expect(lines.filter((l) => l.startsWith('dml eval: done'))).to.have.length(1);
  return lines.slice(0, -2).map((l) => `${l}\n`).join('');
}
