/**
 * @file The bookkeeping of one image batch, whoever decodes its images: {@link loadImageBatch} in this
 * process, or {@link ImageDecodePool} in child processes. Both hand every decoded image (HWC uint8, the
 * output of the eval or train transform) or failure to one {@link BatchCollector}, which normalises
 * images into their slot of the batch tensor (or copies their bytes, for a uint8 batch), applies the
 * `skipBadImages` rule and builds the result, so both paths give the same tensor, the same failures and
 * the same error by construction.
 *
 * Rules: image i always lands in slot i whatever order the images arrive in. Without `skipBadImages`
 * the failure of the lowest index is thrown; with it, per-image problems (codes E_IMAGE, E_NOT_FOUND,
 * E_IO, E_DATASET) are left out of `data` and reported in `failures`, in index order, and anything else
 * is thrown. A caller starts images in index order and stops starting new ones once {@link
 * BatchCollector.stopped} is true, so when the first failure is seen every lower index has started and
 * is settled before {@link BatchCollector.finish}: the error kept is always the one of the lowest bad
 * index.
 */
import type { ImageSource } from '../data/manifest.js';
import { DmlError, invalidParameterError } from '../errors.js';
import type { DmlErrorCode } from '../errors.js';
import { describeImageSource } from './decode.js';
import type { Preprocessing } from './preprocessing.js';
import type { RawImage } from './raw-image.js';
import { toTensor } from './to-tensor.js';

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

/**
 * What a batch is written as: the model's normalised float32 input (the default), or the uint8 crops
 * themselves, HWC as the transform made them, for a normalisation graph on the model's device
 * (lib/onnx/normalization-graph.ts). The caller's `output` array picks the kind.
 */
export type BatchArray = Float32Array | Uint8Array;

/** A loaded batch. */
export interface ImageBatch<A extends BatchArray = Float32Array> {
  /**
   * `loaded.length` images, each `height * width * channels` values: normalised in `layout` (float32),
   * or the crops' bytes in HWC order (uint8). A view of the caller's `output` array when one was given
   * and no image was skipped.
   */
  data: A;
  /**
   * Tensor shape: [n, channels, height, width] (float32, NCHW) or [n, height, width, channels]
   * (float32, NHWC; and uint8 crops whatever the layout).
   */
  shape: [number, number, number, number];
  /** Indices into `sources` of the images in `data`, ascending. */
  loaded: number[];
  /** Images left out (only with `skipBadImages`), ascending by index. */
  failures: ImageFailure[];
}

const SKIPPABLE: ReadonlySet<DmlErrorCode> = new Set(['E_IMAGE', 'E_NOT_FOUND', 'E_IO', 'E_DATASET']);

/**
 * The array a batch of `length` values is written into: the first `length` values of the caller's
 * `output` (a Float32Array for normalised input, a Uint8Array for the crops' bytes), or a new
 * Float32Array. Reusing one array for batch after batch saves more than the allocation: normalising
 * 224x224 RGB into a fresh array took 0.37-0.56 ms per image against 0.15-0.21 ms into one already
 * written (2 vCPUs; the first touch of each fresh page costs the difference). Errors: E_ARG when
 * `output` is not a Float32Array or Uint8Array of at least `length` values.
 */
export function batchOutput<A extends BatchArray = Float32Array>(output: A | undefined, length: number): A {
  if (output === undefined) return new Float32Array(length) as A;
  if (!(output instanceof Float32Array || output instanceof Uint8Array) || output.length < length) {
    throw invalidParameterError('output', `a Float32Array or Uint8Array of at least ${length} values (the batch's images x their size)`, output);
  }
  return output.subarray(0, length) as A;
}

/** The E_CANCELLED error of a batch whose signal was aborted with `loaded` of `total` images done. */
export function batchCancelledError(loaded: number, total: number): DmlError {
  return new DmlError('E_CANCELLED', `Image loading cancelled (${loaded} of ${total} images loaded)`);
}

/** Collects the decoded images and failures of one batch (see the file comment). */
export class BatchCollector<A extends BatchArray = Float32Array> {
  readonly #sources: readonly ImageSource[];
  readonly #preprocessing: Preprocessing;
  readonly #skipBadImages: boolean;
  readonly #perImage: number;
  readonly #data: A;
  readonly #done: Uint8Array;
  readonly #failures: ImageFailure[] = [];
  #fatal: { index: number; error: unknown } | undefined;

  /**
   * `preprocessing` must already be validated (its size, channels, layout, mean and std are used as is).
   * `output`, when given, is written instead of a new array (see {@link batchOutput}).
   */
  constructor(sources: readonly ImageSource[], preprocessing: Preprocessing, skipBadImages: boolean, output?: A) {
    this.#sources = sources;
    this.#preprocessing = preprocessing;
    this.#skipBadImages = skipBadImages;
    this.#perImage = preprocessing.height * preprocessing.width * preprocessing.channels;
    this.#data = batchOutput(output, sources.length * this.#perImage);
    this.#done = new Uint8Array(sources.length);
  }

  /** True once a failure that will be thrown was recorded: start no new image. */
  get stopped(): boolean {
    return this.#fatal !== undefined;
  }

  /**
   * Normalises image `index` (HWC uint8 of the output size) into its slot, or copies its bytes there
   * for a uint8 batch; a failure if it does not fit.
   */
  store(index: number, image: RawImage): void {
    try {
      if (this.#data instanceof Uint8Array) {
        const { height, width, channels } = this.#preprocessing;
        if (image.width !== width || image.height !== height || image.channels !== channels || image.data.length !== this.#perImage) {
          throw invalidParameterError('image', `${width}x${height}x${channels} uint8 pixels (the batch's image size)`, `${image.width}x${image.height}x${image.channels}, ${image.data.length} bytes`);
        }
        this.#data.set(image.data, index * this.#perImage);
      } else {
        toTensor(image, this.#preprocessing, this.#data, index * this.#perImage);
      }
      this.#done[index] = 1;
    } catch (error) {
      this.fail(index, error);
    }
  }

  /** Records that image `index` failed with `error`: skipped and reported, or kept to be thrown. */
  fail(index: number, error: unknown): void {
    if (this.#skipBadImages && error instanceof DmlError && SKIPPABLE.has(error.code)) {
      const source = this.#sources[index] as ImageSource;
      this.#failures.push({ index, source, name: describeImageSource(source), code: error.code, message: error.message });
    } else if (this.#fatal === undefined || index < this.#fatal.index) {
      this.#fatal = { index, error };
    }
  }

  /**
   * The batch, once every started image is settled. Throws the kept failure, or E_CANCELLED when
   * `signal` is aborted and some images were never started.
   */
  finish(signal: AbortSignal | undefined): ImageBatch<A> {
    if (this.#fatal !== undefined) throw this.#fatal.error;
    const loaded: number[] = [];
    this.#done.forEach((ok, index) => {
      if (ok === 1) loaded.push(index);
    });
    const total = this.#sources.length;
    if (signal?.aborted && loaded.length + this.#failures.length < total) throw batchCancelledError(loaded.length, total);
    const failures = [...this.#failures].sort((a, b) => a.index - b.index);
    const { height, width, channels, layout } = this.#preprocessing;
    const shape: [number, number, number, number] =
      layout === 'NCHW' && this.#data instanceof Float32Array ? [loaded.length, channels, height, width] : [loaded.length, height, width, channels];
    if (loaded.length === total) return { data: this.#data, shape, loaded, failures };
    const per = this.#perImage;
    const packed = (this.#data instanceof Uint8Array ? new Uint8Array(loaded.length * per) : new Float32Array(loaded.length * per)) as A;
    loaded.forEach((index, slot) => packed.set(this.#data.subarray(index * per, (index + 1) * per), slot * per));
    return { data: packed, shape, loaded, failures };
  }
}
