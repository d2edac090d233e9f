/**
 * @file The work of `dml serve` (serve-command.ts declares the command): checks the flags, starts the
 * search service, prints the start line and shuts down on SIGTERM or SIGINT. Loaded only when the
 * command runs.
 */
import type { AddressInfo } from 'node:net';
import { DmlError, invalidParameterError } from '../errors.js';
import { fileReadError, openRegular } from '../util/regular-file.js';
import { DEVICE_CHOICES, describeProviderChoice } from '../onnx/devices.js';
import { createSearchApp } from '../serve/app.js';
import { parseChoice, parseParallelism, parsePositiveInt, parseTimerSeconds } from './parse-options.js';
import { printWarning } from './warning.js';
import { LOG_LEVELS, TOKEN_ENV, type ServeFlags } from './serve-command.js';

/**
 * The token in a `--token-file`: a regular file (util/regular-file.ts) that others cannot write (whoever
 * can change it can set the token), holding the token alone on one line (a trailing line break and
 * surrounding blanks are dropped). Never printed. Errors: E_NOT_FOUND when missing; E_ARG otherwise.
 */
async function readTokenFile(file: string): Promise<string> {
  let text: string;
  let mode: number;
  try {
    const { handle, info } = await openRegular(file, '--token-file');
    try {
      mode = info.mode;
      text = (await handle.readFile()).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    throw fileReadError('--token-file', file, err);
  }
  if ((mode & 0o002) !== 0) {
    throw new DmlError('E_ARG', `--token-file ${file} is writable by others (mode ${(mode & 0o777).toString(8)}), who could set the write token; chmod o-w it (600 is usual)`);
  }
  const lines = text.replace(/\r?\n$/, '').split(/\r?\n/);
  if (lines.length !== 1) throw new DmlError('E_ARG', `--token-file ${file} holds ${lines.length} lines; expected the token alone on one line`);
  return (lines[0] as string).trim();
}

/** The write token: from `--token-file`, else the environment. Never printed. Errors: E_ARG when there is none. */
async function writeToken(flags: ServeFlags): Promise<string> {
  if (flags.tokenFile !== undefined) return readTokenFile(flags.tokenFile);
  const fromEnv = process.env[TOKEN_ENV];
  if (fromEnv === undefined || fromEnv === '') throw new DmlError('E_ARG', `--allow-writes needs a write token: --token-file <file> or the ${TOKEN_ENV} environment variable`);
  return fromEnv;
}

/** Whether the server's bound address is reachable only from this machine (127.0.0.0/8, ::1). */
function isLoopbackAddress(address: string): boolean {
  return address === '::1' || /^(::ffff:)?127\./.test(address);
}

/** Runs `dml serve <dir>` with the flags commander parsed; resolves once the server has stopped. */
export async function runServe(dir: string, flags: ServeFlags): Promise<void> {
  const port = /^\d+$/.test(flags.port) && Number(flags.port) <= 65535 ? Number(flags.port) : NaN;
  if (Number.isNaN(port)) throw invalidParameterError('--port', 'an integer in [0, 65535]', flags.port);
  let provider = 'the model runs on an unknown provider';
  const token = flags.allowWrites === true ? await writeToken(flags) : undefined;
  // The address it listens on is an allowed Host too (a wildcard address is no name: use --allowed-host).
  const listenHost = ['0.0.0.0', '::', ''].includes(flags.host) ? [] : [flags.host];
  const app = await createSearchApp({
    dir,
    allowWrites: flags.allowWrites === true,
    ...(token !== undefined ? { token } : {}),
    allowedHosts: [...listenHost, ...flags.allowedHost],
    workers: parseParallelism(flags.workers, '--workers', 1, printWarning),
    threads: flags.threads !== undefined ? parseParallelism(flags.threads, '--threads', 1, printWarning) : undefined,
    device: parseChoice(flags.device, DEVICE_CHOICES, '--device'),
    onProvider: (chosen) => {
      provider = describeProviderChoice('the model', chosen);
    },
    maxUploadBytes: parsePositiveInt(flags.maxUploadBytes, '--max-upload-bytes'),
    limitInputPixels: flags.limitInputPixels !== undefined ? parsePositiveInt(flags.limitInputPixels, '--limit-input-pixels') : undefined,
    maxK: parsePositiveInt(flags.maxK, '--max-k'),
    maxPending: parsePositiveInt(flags.maxPending, '--max-pending'),
    snapshotEvery: parsePositiveInt(flags.snapshotEvery, '--snapshot-every'),
    compactEvery: parsePositiveInt(flags.compactEvery, '--compact-every'),
    refreshSeconds: parseTimerSeconds(flags.refreshSeconds, '--refresh-seconds'),
    shutdownGraceSeconds: parseTimerSeconds(flags.shutdownGrace, '--shutdown-grace', true),
    logger: { level: parseChoice(flags.logLevel, LOG_LEVELS, '--log-level') },
  });
  const stopped = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  try {
    await app.listen({ port, host: flags.host });
  } catch (err) {
    await app.close();
    throw invalidParameterError('--host/--port', `an address this machine can listen on (${(err as Error).message})`, `${flags.host}:${flags.port}`);
  }
  const bound = app.server.address() as AddressInfo;
  const address = `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
  if (!isLoopbackAddress(bound.address)) {
    const writes = flags.allowWrites === true ? 'writes are open to the network, guarded by the token alone' : 'the index is read-only';
    process.stderr.write(`dml serve: warning: listening on ${address}, reachable from other machines; ${writes} (requests must name an allowed Host: --allowed-host)\n`);
  }
  process.stdout.write(`dml serve: serving ${dir} (${provider}), listening on ${address}\n`);
  const signal = await stopped;
  process.stderr.write(`dml serve: ${signal}, shutting down\n`);
  await app.close();
  process.stderr.write('dml serve: stopped\n');
}
