/**
 * @file Loads a batch of images into one Float32 tensor: decode, transform (eval, or seeded train
 * augmentation) and normalise each image, a bounded number at a time.
 *
 * Determinism: image i always lands in slot i whatever order the decodes finish in, and with
 * augmentation each source gets its own generator, forked from the caller's `rng` in source order
 * before any work starts; the caller's `rng` advances by exactly one draw per source.
 * Failures: by default the first bad image (lowest index) is thrown; with `skipBadImages` bad images are
 * left out of `data` and reported in `failures`, in index order. Only per-image problems are skipped
 * (codes E_IMAGE, E_NOT_FOUND, E_IO, E_DATASET); anything else is thrown.
 */
import sharp from 'sharp';
import type { ImageSource } from '../data/manifest.js';
import type { Preprocessing, TrainAugmentation } from './preprocessing.js';
import type { Rng } from '../util/rng.js';
import { DmlError, invalidParameterError } from '../errors.js';
import type { DmlErrorCode } from '../errors.js';
import { decodeImageSource, describeImageSource } from './decode.js';
import { evalTransform, trainTransform } from './transform.js';
import { toTensor } from './to-tensor.js';
import { validateAugmentation, validatePreprocessing } from './validate.js';

/** Options of {@link loadImageBatch}. */
export interface LoadImageBatchOptions {
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
}

/** One image that could not be loaded. */
export interface ImageFailure {
  /** Position in `sources`. */
  index: number;
  source: ImageSource;
  /** The source as messages name it: the path, or `<file>[<index>]` for an IDX item. */
  name: string;
  /** Error code of the failure (E_IMAGE, E_NOT_FOUND, ...). */
  code: DmlErrorCode;
  /** The one-line message; it starts with the file's name. */
  message: string;
}

/** A loaded batch. */
export interface ImageBatch {
  /** `loaded.length` images, each `height * width * channels` values, in `layout`. */
  data: Float32Array;
  /** Tensor shape: [n, channels, height, width] (NCHW) or [n, height, width, channels] (NHWC). */
  shape: [number, number, number, number];
  /** Indices into `sources` of the images in `data`, ascending. */
  loaded: number[];
  /** Images left out (only with `skipBadImages`), ascending by index. */
  failures: ImageFailure[];
}

const SKIPPABLE: ReadonlySet<DmlErrorCode> = new Set(['E_IMAGE', 'E_NOT_FOUND', 'E_IO', 'E_DATASET']);

/** Loads `sources` into one tensor as `preprocessing` describes. */
export async function loadImageBatch(
  sources: readonly ImageSource[],
  preprocessing: Preprocessing,
  options: LoadImageBatchOptions = {},
): Promise<ImageBatch> {
  if (!Array.isArray(sources)) throw invalidParameterError('sources', 'an array of image sources', sources);
  validatePreprocessing(preprocessing);
  const { concurrency = 4, skipBadImages = false, limitInputPixels, augment, signal } = options;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw invalidParameterError('concurrency', 'a positive integer', concurrency);
  }
  if (augment !== undefined) {
    validateAugmentation(augment.augmentation, 'augment.augmentation');
    if (typeof augment.rng?.fork !== 'function') throw invalidParameterError('augment.rng', 'an Rng', augment.rng);
  }
  if (signal?.aborted) throw cancelled(0, sources.length);

  // Many distinct files, each read once: libvips' operation cache would only hold memory.
  sharp.cache(false);
  const { height, width, channels, layout } = preprocessing;
  const perImage = height * width * channels;
  const data = new Float32Array(sources.length * perImage);
  const done = new Uint8Array(sources.length);
  const train =
    augment === undefined
      ? undefined
      : { augmentation: augment.augmentation, rngs: sources.map(() => augment.rng.fork()) };
  const failures: ImageFailure[] = [];
  let fatal: { index: number; error: unknown } | undefined;
  // Indices start in order, so when a worker sees an error every lower index has started and settles
  // before the workers return: the error kept is always the one of the lowest bad index.
  const keepLowest = (index: number, error: unknown): void => {
    if (fatal === undefined || index < fatal.index) fatal = { index, error };
  };
  let next = 0;

  const loadOne = async (index: number): Promise<void> => {
    const source = sources[index] as ImageSource;
    const raw = await decodeImageSource(source, { channels, limitInputPixels });
    const image =
      train === undefined
        ? await evalTransform(raw, preprocessing)
        : await trainTransform(raw, preprocessing, train.augmentation, train.rngs[index] as Rng);
    toTensor(image, preprocessing, data, index * perImage);
    done[index] = 1;
  };

  const worker = async (): Promise<void> => {
    while (fatal === undefined && !signal?.aborted && next < sources.length) {
      const index = next++;
      try {
        await loadOne(index);
      } catch (error) {
        if (skipBadImages && error instanceof DmlError && SKIPPABLE.has(error.code)) {
          const source = sources[index] as ImageSource;
          failures.push({ index, source, name: describeImageSource(source), code: error.code, message: error.message });
        } else {
          keepLowest(index, error);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, sources.length) }, worker));

  if (fatal !== undefined) throw fatal.error;
  const loaded: number[] = [];
  done.forEach((ok, index) => {
    if (ok === 1) loaded.push(index);
  });
  if (signal?.aborted && loaded.length + failures.length < sources.length) {
    throw cancelled(loaded.length, sources.length);
  }
  failures.sort((a, b) => a.index - b.index);
  const shape: [number, number, number, number] =
    layout === 'NCHW' ? [loaded.length, channels, height, width] : [loaded.length, height, width, channels];
  if (loaded.length === sources.length) return { data, shape, loaded, failures };
  const packed = new Float32Array(loaded.length * perImage);
  loaded.forEach((index, slot) => packed.set(data.subarray(index * perImage, (index + 1) * perImage), slot * perImage));
  return { data: packed, shape, loaded, failures };
}

function cancelled(loaded: number, total: number): DmlError {
  return new DmlError('E_CANCELLED', `Image loading cancelled (${loaded} of ${total} images loaded)`);
}
