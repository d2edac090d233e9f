/**
 * @file `dml serve`: serves an index folder over HTTP (lib/serve/app.ts) until SIGTERM or SIGINT.
 *
 *   dml serve <dir> [--port 8080] [--host 127.0.0.1] [--workers 1] [options]
 *
 * Prints one line `dml serve: serving <dir>, listening on <url>` on stdout once it accepts
 * connections. On SIGTERM/SIGINT it stops accepting connections, lets requests in flight finish,
 * stops the inference workers, folds the journal into a snapshot, releases the index lock and exits 0.
 */
import type { Command } from 'commander';
import { createSearchApp, DEFAULT_MAX_UPLOAD_BYTES } from '../serve/app.js';
import { DEFAULT_SNAPSHOT_EVERY } from '../serve/index-store.js';
import { invalidParameterError } from '../errors.js';
import { DEVICE_CHOICES, DEVICE_HELP, describeProviderChoice } from '../onnx/session.js';
import { parseChoice, parsePositiveInt } from './parse-options.js';

interface ServeFlags {
  port: string;
  host: string;
  workers: string;
  threads?: string;
  device: string;
  maxUploadBytes: string;
  limitInputPixels?: string;
  maxK: string;
  maxPending: string;
  snapshotEvery: string;
  logLevel: string;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Registers `serve` on the program. */
export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('Serve nearest-neighbour image search over an index folder (HTTP API and web page)')
    .argument('<dir>', 'index folder written by dml index build')
    .option('--port <n>', 'TCP port (0: any free port)', '8080')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--workers <n>', 'inference worker threads', '1')
    .option('--threads <n>', 'onnxruntime intra-op threads per worker')
    .option('--device <device>', DEVICE_HELP, 'auto')
    .option('--max-upload-bytes <n>', 'largest request body or uploaded file', String(DEFAULT_MAX_UPLOAD_BYTES))
    .option('--limit-input-pixels <n>', 'largest uploaded image (width x height); guards against decompression bombs')
    .option('--max-k <n>', 'largest k a request may ask for', '100')
    .option('--max-pending <n>', 'images being embedded at once before requests get 503', '256')
    .option('--snapshot-every <n>', 'fold the journal into a new snapshot after this many writes', String(DEFAULT_SNAPSHOT_EVERY))
    .option('--log-level <level>', `request log level on stdout: ${LOG_LEVELS.join(', ')}`, 'info')
    .action(async (dir: string, flags: ServeFlags) => {
      await runServe(dir, flags);
    });
}

async function runServe(dir: string, flags: ServeFlags): Promise<void> {
  const port = /^\d+$/.test(flags.port) && Number(flags.port) <= 65535 ? Number(flags.port) : NaN;
  if (Number.isNaN(port)) throw invalidParameterError('--port', 'an integer in [0, 65535]', flags.port);
  let provider = 'the model runs on an unknown provider';
  const app = await createSearchApp({
    dir,
    workers: parsePositiveInt(flags.workers, '--workers'),
    threads: flags.threads !== undefined ? parsePositiveInt(flags.threads, '--threads') : undefined,
    device: parseChoice(flags.device, DEVICE_CHOICES, '--device'),
    onProvider: (chosen) => {
      provider = describeProviderChoice('the model', chosen);
    },
    maxUploadBytes: parsePositiveInt(flags.maxUploadBytes, '--max-upload-bytes'),
    limitInputPixels: flags.limitInputPixels !== undefined ? parsePositiveInt(flags.limitInputPixels, '--limit-input-pixels') : undefined,
    maxK: parsePositiveInt(flags.maxK, '--max-k'),
    maxPending: parsePositiveInt(flags.maxPending, '--max-pending'),
    snapshotEvery: parsePositiveInt(flags.snapshotEvery, '--snapshot-every'),
    logger: { level: parseChoice(flags.logLevel, LOG_LEVELS, '--log-level') },
  });
  const stopped = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  let address: string;
  try {
    address = await app.listen({ port, host: flags.host });
  } catch (err) {
    await app.close();
    throw invalidParameterError('--host/--port', `an address this machine can listen on (${(err as Error).message})`, `${flags.host}:${flags.port}`);
  }
  process.stdout.write(`dml serve: serving ${dir} (${provider}), listening on ${address}\n`);
  const signal = await stopped;
  process.stderr.write(`dml serve: ${signal}, shutting down\n`);
  await app.close();
  process.stderr.write('dml serve: stopped\n');
}
