/**
 * @file Loads a batch of images into one Float32 tensor in this process: decode, transform (eval, or
 * seeded train augmentation) and normalise each image, a bounded number at a time.
 * {@link ImageDecodePool} (decode-pool.ts) gives the same batches from child processes.
 *
 * Determinism: image i always lands in slot i whatever order the decodes finish in, and with
 * augmentation each source gets its own generator, forked from the caller's `rng` in source order
 * before any work starts; the caller's `rng` advances by exactly one draw per source.
 * Failures: by default the first bad image (lowest index) is thrown; with `skipBadImages` bad images are
 * left out of `data` and reported in `failures`, in index order. Only per-image problems are skipped
 * (codes E_IMAGE, E_NOT_FOUND, E_IO, E_DATASET); anything else is thrown (see batch-collector.ts).
 */
import sharp from 'sharp';
import type { ImageSource } from '../data/manifest.js';
import type { Preprocessing, TrainAugmentation } from './preprocessing.js';
import type { Rng } from '../util/rng.js';
import { invalidParameterError } from '../errors.js';
import { BatchCollector, batchCancelledError } from './batch-collector.js';
import type { BatchArray, ImageBatch } from './batch-collector.js';
import { decodeImageSource } from './decode.js';
import { loadEvalImage } from './eval-image.js';
import { trainTransform } from './transform.js';
import { validateAugmentation, validatePreprocessing } from './validate.js';

/** Options of {@link loadImageBatch}. */
export interface LoadImageBatchOptions<A extends BatchArray = Float32Array> {
  /** Images decoded at the same time (promises in flight). Default 4. */
  concurrency?: number | undefined;
  /** Leave bad images out and report them instead of throwing. Default false. */
  skipBadImages?: boolean | undefined;
  /** Largest width x height an input may declare; default 40e6 (see decode.ts). */
  limitInputPixels?: number | undefined;
  /** Train augmentation instead of the eval transform (resize shorter side + centre crop). */
  augment?: { augmentation: TrainAugmentation; rng: Rng } | undefined;
  /** Cancels the batch: no new image starts, and the call rejects with E_CANCELLED. */
  signal?: AbortSignal | undefined;
  /**
   * Write the batch into this array (at least images x image size values), e.g. one reused batch after
   * batch: a Float32Array for normalised input, a Uint8Array for the crops' bytes (see {@link BatchArray}).
   */
  output?: A | undefined;
}

/** Loads `sources` into one tensor as `preprocessing` describes. */
export async function loadImageBatch<A extends BatchArray = Float32Array>(
  sources: readonly ImageSource[],
  preprocessing: Preprocessing,
  options: LoadImageBatchOptions<A> = {},
): Promise<ImageBatch<A>> {
  if (!Array.isArray(sources)) throw invalidParameterError('sources', 'an array of image sources', sources);
  validatePreprocessing(preprocessing);
  const { concurrency = 4, skipBadImages = false, limitInputPixels, augment, signal, output } = options;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw invalidParameterError('concurrency', 'a positive integer', concurrency);
  }
  if (augment !== undefined) {
    validateAugmentation(augment.augmentation, 'augment.augmentation');
    if (typeof augment.rng?.fork !== 'function') throw invalidParameterError('augment.rng', 'an Rng', augment.rng);
  }
  if (signal?.aborted) throw batchCancelledError(0, sources.length);

  // Many distinct files, each read once: libvips' operation cache would only hold memory.
  sharp.cache(false);
  const { channels } = preprocessing;
  const train =
    augment === undefined
      ? undefined
      : { augmentation: augment.augmentation, rngs: sources.map(() => augment.rng.fork()) };
  const collector = new BatchCollector<A>(sources, preprocessing, skipBadImages, output);
  let next = 0;

  const loadOne = async (index: number): Promise<void> => {
    const source = sources[index] as ImageSource;
    const image =
      train === undefined
        ? await loadEvalImage(source, preprocessing, { limitInputPixels })
        : await trainTransform(await decodeImageSource(source, { channels, limitInputPixels }), preprocessing, train.augmentation, train.rngs[index] as Rng);
    collector.store(index, image);
  };

  const worker = async (): Promise<void> => {
    while (!collector.stopped && !signal?.aborted && next < sources.length) {
      const index = next++;
      try {
        await loadOne(index);
      } catch (error) {
        collector.fail(index, error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, sources.length) }, worker));
  return collector.finish(signal);
}
