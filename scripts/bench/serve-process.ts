/**
 * @file What the serving benchmarks (bench-serve.ts, bench-stores.ts) share: the repository's root
 * and default model, found whether a benchmark runs as TypeScript through tsx (scripts/bench/) or
 * compiled (dist/scripts/bench/), and `dml serve` started as a child process the same way.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** True when running as TypeScript through tsx, false as compiled JavaScript from dist/scripts/bench. */
const typescript = import.meta.url.endsWith('.ts');

/** The repository's root folder. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), typescript ? '../..' : '../../..');

/** The embedded default model. */
export const DEFAULT_MODEL = path.join(ROOT, 'models/default.onnx');

/** A `dml serve` child process: its URL, pid, and a stop that resolves with its exit code. */
export interface ServeProcess {
  url: string;
  pid: number;
  stop: () => Promise<number | null>;
}

/**
 * Starts `dml serve <location>` on a free port (CPU, warnings only, plus `extraArgs`) as this script
 * runs (tsx or compiled); resolves once it listens, rejects when it exits before.
 */
export function startServer(location: string, extraArgs: readonly string[] = []): Promise<ServeProcess> {
  const script = path.join(ROOT, typescript ? 'bin/dml.ts' : 'dist/bin/dml.js');
  const child = spawn(process.execPath, [...process.execArgv, script, 'serve', location, '--port', '0', '--log-level', 'warn', '--device', 'cpu', ...extraArgs], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (\S+)/.exec(out);
      if (match) resolve({ url: match[1] as string, pid: child.pid as number, stop: () => (child.kill('SIGTERM'), exited) });
    });
    void exited.then((code) => reject(new Error(`dml serve exited with code ${code} before listening`)));
  });
}
