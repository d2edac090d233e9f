/**
 * @file Entry of one image decode child process of {@link ImageDecodePool} (decode-pool.ts): decodes
 * the images the parent sends, one message each, with the eval transform (decode, orient, resize the
 * shorter side, centre crop) and writes the HWC uint8 crop into the slot of the parent's slot file
 * that the request names; the parent reads it from there and normalises it. It only runs as a forked
 * child (`child_process.fork`, advanced serialization); the pool imports its types.
 *
 * Protocol: argv[2] holds the {@link DecodeWorkerConfig} as JSON (already validated by the pool). The
 * child opens the slot file and answers `ready`, then one `image` or `error` reply per
 * {@link DecodeRequest}, in whatever order the decodes finish (replies carry the request's id; at most
 * `DECODES_AT_ONCE` decode at a time, the others wait in arrival order); an
 * `image` reply is sent once the crop's bytes are in the request's slot (`slot * slotBytes` onwards).
 * The parent bounds how many requests a child holds at once and never gives a slot to two of them.
 *
 * Lifetime: the child exits when its IPC channel closes (the parent closed the pool, exited or was
 * killed), so it never outlives the parent. It ignores SIGINT: Ctrl-C in a terminal reaches the whole
 * process group, and it is the parent that decides whether that cancels the work.
 */
import { openSync, writeSync } from 'node:fs';
import sharp from 'sharp';
import type { ImageSource } from '../data/manifest.js';
import { DmlError, type DmlErrorCode } from '../errors.js';
import type { Preprocessing } from './preprocessing.js';
import { loadEvalImage } from './eval-image.js';

/** What a child is started with (argv[2], JSON). */
export interface DecodeWorkerConfig {
  preprocessing: Preprocessing;
  /** Largest width x height an input may declare; decode.ts's default when null. */
  limitInputPixels: number | null;
  /** The file the crops are written into, one slot per request in flight (the pool's, see decode-pool.ts). */
  slotFile: string;
  /** Bytes of one slot: `height * width * channels` of the preprocessing. */
  slotBytes: number;
}

/** One image to decode; `id` is the parent's, echoed in the reply. */
export interface DecodeRequest {
  id: number;
  source: ImageSource;
  /** Where in the slot file the crop goes: bytes `slot * slotBytes` onwards. */
  slot: number;
}

/** A message from a child. */
export type DecodeReply =
  | { type: 'ready' }
  /** The eval transform's output, `height x width x channels` bytes (HWC), is in the request's slot. */
  | { type: 'image'; id: number; width: number; height: number; channels: number }
  /** A failure; `code` null when it was not a DmlError (then re-created as a plain Error). */
  | { type: 'error'; id: number; code: DmlErrorCode | null; message: string };

if (process.send === undefined) {
  throw new Error('decode-worker is the entry of an image decode child process: start it with ImageDecodePool, not import it');
}

const config = JSON.parse(process.argv[2] as string) as DecodeWorkerConfig;
const { preprocessing, slotBytes } = config;
// Opened before `ready`: the parent removes the file's name once every child is ready.
const slots = openSync(config.slotFile, 'r+');
// This process only decodes: a blocking read costs it less CPU than four asynchronous steps.
const evalOptions = { syncRead: true, ...(config.limitInputPixels !== null ? { limitInputPixels: config.limitInputPixels } : {}) };

/** Decodes and crops one image into its slot; every failure becomes an `error` reply. */
async function decode(request: DecodeRequest): Promise<DecodeReply> {
  try {
    const { data, width, height, channels } = await loadEvalImage(request.source, preprocessing, evalOptions);
    if (data.length !== slotBytes) throw new Error(`The eval transform gave ${data.length} bytes (${width}x${height}x${channels}) where a slot holds ${slotBytes}`);
    const at = request.slot * slotBytes;
    for (let written = 0; written < data.length; ) written += writeSync(slots, data, written, data.length - written, at + written);
    return { type: 'image', id: request.id, width, height, channels };
  } catch (error) {
    if (error instanceof DmlError) return { type: 'error', id: request.id, code: error.code, message: error.message };
    return { type: 'error', id: request.id, code: null, message: error instanceof Error ? error.message : String(error) };
  }
}

/** Sends `reply` unless the parent has gone (the child is then about to exit). */
function reply(message: DecodeReply): void {
  if (process.connected) process.send?.(message);
}

// Many distinct files, each read once: libvips' operation cache would only hold memory.
sharp.cache(false);
process.on('SIGINT', () => undefined);
process.on('disconnect', () => process.exit(0));
/**
 * Images decoded at once; the parent may hold more with the child (decode-pool.ts, `IMAGES_PER_WORKER`),
 * which wait here in arrival order. Two keep libvips busy while the next one starts; one costs 3% of the
 * rate, four more CPU per image (2 cores, 2 children: docs/benchmarks.md).
 */
const DECODES_AT_ONCE = 2;
const waiting: DecodeRequest[] = [];
let decoding = 0;

/** Starts the waiting requests while fewer than {@link DECODES_AT_ONCE} are decoding. */
function startWaiting(): void {
  while (decoding < DECODES_AT_ONCE && waiting.length > 0) {
    decoding++;
    void decode(waiting.shift() as DecodeRequest).then((message) => {
      decoding--;
      reply(message);
      startWaiting();
    });
  }
}

process.on('message', (request: DecodeRequest) => {
  waiting.push(request);
  startWaiting();
});
reply({ type: 'ready' });
