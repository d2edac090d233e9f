/**
 * @file `dml serve`: serves an index folder over HTTP (lib/serve/app.ts) until SIGTERM or SIGINT.
 *
 *   dml serve <index> [--port 8080] [--host 127.0.0.1] [--workers 1] [options]
 *
 * `<index>` is a folder (hnswlib store) or `lance:<folder>` (LanceDB store). Any number of read-only
 * `dml serve` processes may serve one LanceDB table while one writer (`dml index add`, or one
 * `dml serve --allow-writes`) changes it; each looks for a newer version every `--refresh-seconds`.
 *
 * Prints one line `dml serve: serving <dir>, listening on <url>` on stdout once it accepts
 * connections. On SIGTERM/SIGINT it stops accepting connections, lets requests in flight finish (for
 * at most `--shutdown-grace` seconds, then closes every connection still open), stops the inference workers, folds the journal into a snapshot, releases the index lock and exits 0.
 * The work is in serve-run.ts, loaded when the command runs.
 */
import type { Command } from 'commander';
import { DEFAULT_DEVICE, DEVICE_HELP } from '../onnx/devices.js';
import { DEFAULT_SNAPSHOT_EVERY } from '../index-store/layout.js';
import { DEFAULT_COMPACT_EVERY, DEFAULT_REFRESH_SECONDS } from '../index-store/lance-store.js';
import { DEFAULT_MAX_UPLOAD_BYTES, DEFAULT_SHUTDOWN_GRACE_SECONDS } from '../serve/defaults.js';

/** Raw option values of `dml serve`. */
export interface ServeFlags {
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
  compactEvery: string;
  refreshSeconds: string;
  shutdownGrace: string;
  logLevel: string;
  allowWrites?: boolean;
  tokenFile?: string;
  allowedHost: string[];
}

/** The environment variable that may hold the write token (`--token-file` wins). */
export const TOKEN_ENV = 'DML_SERVE_TOKEN';

/** `--log-level` values (pino's levels). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Registers `serve` on the program. */
export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('Serve nearest-neighbour image search over an index folder (HTTP API and web page)')
    .argument('<index>', 'index written by dml index build: a folder (hnswlib store) or lance:<folder> (LanceDB store)')
    .option('--port <n>', 'TCP port (0: any free port)', '8080')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--workers <n>', 'inference worker threads', '1')
    .option('--threads <n>', 'onnxruntime intra-op threads per worker')
    .option('--device <device>', DEVICE_HELP, DEFAULT_DEVICE)
    .option('--max-upload-bytes <n>', 'largest request body or uploaded file', String(DEFAULT_MAX_UPLOAD_BYTES))
    .option('--limit-input-pixels <n>', 'largest uploaded image (width x height); guards against decompression bombs')
    .option('--max-k <n>', 'largest k a request may ask for', '100')
    .option('--max-pending <n>', 'images being embedded at once before requests get 503', '256')
    .option('--snapshot-every <n>', 'hnswlib store: fold the journal into a new snapshot after this many writes', String(DEFAULT_SNAPSHOT_EVERY))
    .option('--compact-every <n>', 'LanceDB store, with --allow-writes: compact the table\'s data files after this many writes (and when writes pause)', String(DEFAULT_COMPACT_EVERY))
    .option('--refresh-seconds <n>', 'LanceDB store, read-only: seconds between checks for a newer table version written by another process', String(DEFAULT_REFRESH_SECONDS))
    .option('--shutdown-grace <seconds>', 'on SIGTERM/SIGINT: seconds to wait for requests in flight before closing every connection still open', String(DEFAULT_SHUTDOWN_GRACE_SECONDS))
    .option('--log-level <level>', `request log level on stdout: ${LOG_LEVELS.join(', ')}`, 'info')
    .option('--allow-writes', 'serve POST /items and DELETE /items/:id (they need the token); default read-only')
    .option('--token-file <file>', `file holding the write token (at least 16 characters; or the ${TOKEN_ENV} environment variable)`)
    .option('--allowed-host <name>', 'a host name requests may use besides localhost, 127.0.0.1 and ::1 (repeatable)', (value: string, previous: string[]) => [...previous, value], [] as string[])
    .action(async (dir: string, flags: ServeFlags) => {
      const { runServe } = await import('./serve-run.js');
      await runServe(dir, flags);
    });
}
