/**
 * @file `dml` in a child process (through tsx), as a user runs it: any command, and `dml serve` with
 * its URL once it listens and what it printed.
 */
import { spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process';

/** Starts `dml <args>` in a child process; `env` replaces the environment when given. */
export function startDml(args: string[], env?: NodeJS.ProcessEnv): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--import', 'tsx', 'bin/dml.ts', ...args], env !== undefined ? { env } : {});
}

/** A `dml serve` child process: its URL once it listens, and everything it has printed so far. */
export interface ServerProcess {
  child: ChildProcess;
  url: Promise<string>;
  output: () => { stdout: string; stderr: string };
}

/** Starts `dml serve <index> --port 0 --log-level warn --device cpu [extra]` (a later flag in `extra` wins). */
export function startServer(index: string, extra: string[] = [], env?: NodeJS.ProcessEnv): ServerProcess {
  const child = startDml(['serve', index, '--port', '0', '--log-level', 'warn', '--device', 'cpu', ...extra], env);
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) resolve(match[1] as string);
    });
    child.on('exit', (code) => reject(new Error(`dml serve exited with ${code}: ${stderr}`)));
  });
  return { child, url, output: () => ({ stdout, stderr }) };
}

/** Resolves with the exit code of `child` once it has exited (null when a signal ended it). */
export function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.on('exit', (code) => resolve(code));
  });
}

/**
 * Collects the `added <id>` lines `child` (a `dml index add`) prints, in `acknowledged`, and kills it
 * with SIGKILL once it has printed `killAfter` of them; resolves with its exit code once its output is
 * read to the end ('close').
 */
export function killAfterAcknowledged(child: ChildProcessWithoutNullStreams, killAfter: number, acknowledged: string[]): Promise<number | null> {
  let pending = '';
  const done = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split('\n');
    pending = lines.pop() as string;
    for (const line of lines) acknowledged.push(line.replace(/^added /, ''));
    if (acknowledged.length >= killAfter) child.kill('SIGKILL');
  });
  return done;
}
