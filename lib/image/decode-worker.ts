/**
 * @file Entry of one image decode child process of {@link ImageDecodePool} (decode-pool.ts): decodes
 * the images the parent sends, one message each, with the eval transform (decode, orient, resize the
 * shorter side, centre crop) and sends back the HWC uint8 crop; the parent normalises it. It only
 * runs as a forked child (`child_process.fork`, advanced serialization); the pool imports its types.
 *
 * Protocol: argv[2] holds the {@link DecodeWorkerConfig} as JSON (already validated by the pool). The
 * child answers `ready` once it listens, then one `image` or `error` reply per {@link DecodeRequest},
 * in whatever order the decodes finish (replies carry the request's id). The parent bounds how many
 * requests a child holds at once.
 *
 * Lifetime: the child exits when its IPC channel closes (the parent closed the pool, exited or was
 * killed), so it never outlives the parent. It ignores SIGINT: Ctrl-C in a terminal reaches the whole
 * process group, and it is the parent that decides whether that cancels the work.
 */
import sharp from 'sharp';
import type { ImageSource } from '../data/manifest.js';
import { DmlError, type DmlErrorCode } from '../errors.js';
import type { Preprocessing } from './preprocessing.js';
import type { RawImage } from './raw-image.js';
import { loadEvalImage } from './eval-image.js';

/** What a child is started with (argv[2], JSON). */
export interface DecodeWorkerConfig {
  preprocessing: Preprocessing;
  /** Largest width x height an input may declare; decode.ts's default when null. */
  limitInputPixels: number | null;
}

/** One image to decode; `id` is the parent's, echoed in the reply. */
export interface DecodeRequest {
  id: number;
  source: ImageSource;
}

/** A message from a child. */
export type DecodeReply =
  | { type: 'ready' }
  /** The eval transform's output: `height x width x channels` bytes, HWC. */
  | { type: 'image'; id: number; image: RawImage }
  /** A failure; `code` null when it was not a DmlError (then re-created as a plain Error). */
  | { type: 'error'; id: number; code: DmlErrorCode | null; message: string };

if (process.send === undefined) {
  throw new Error('decode-worker is the entry of an image decode child process: start it with ImageDecodePool, not import it');
}

const config = JSON.parse(process.argv[2] as string) as DecodeWorkerConfig;
const { preprocessing } = config;
// This process only decodes: a blocking read costs it less CPU than four asynchronous steps.
const evalOptions = { syncRead: true, ...(config.limitInputPixels !== null ? { limitInputPixels: config.limitInputPixels } : {}) };

/** Decodes and crops one image; every failure becomes an `error` reply. */
async function decode(request: DecodeRequest): Promise<DecodeReply> {
  try {
    return { type: 'image', id: request.id, image: await loadEvalImage(request.source, preprocessing, evalOptions) };
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
process.on('message', (request: DecodeRequest) => {
  void decode(request).then(reply);
});
reply({ type: 'ready' });
