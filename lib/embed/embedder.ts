/**
 * @file The image embedder: an ONNX model run with onnxruntime on batches of preprocessed images,
 * producing L2-normalised embeddings.
 *
 * One {@link OnnxEmbedder} holds one inference session, on a worker thread of its own by default
 * (session-thread.ts), so decoding and inference overlap. Images are decoded either in child processes
 * ({@link ImageDecodePool}; by default one per core when there are {@link DECODE_POOL_MIN_ITEMS}
 * images or more), with up to {@link DECODE_PREFETCH_BATCHES} batches decoding while the current one
 * runs inference, or in this process (sharp on the libuv pool), with the next batch decoding while
 * the current one runs inference. Both give the same tensors, so the same embeddings. Models with a
 * fixed batch size get their last batch padded with zeros, and the padded rows are discarded.
 */
import type { ImageSource, ManifestItem } from '../data/manifest.js';
import { DmlError, invalidParameterError } from '../errors.js';
import type { BatchArray, ImageBatch } from '../image/batch-collector.js';
import { loadImageBatch } from '../image/batch-loader.js';
import { defaultDecodeWorkers, ImageDecodePool } from '../image/decode-pool.js';
import type { Preprocessing, TrainAugmentation } from '../image/preprocessing.js';
import { parseDmlMetadata } from '../onnx/dml-metadata.js';
import { readModelMetadata } from '../onnx/metadata.js';
import { readModelFiles, type ExternalDataFile, modelIdentity } from '../onnx/model-files.js';
import { DEFAULT_DEVICE, NORMALIZATION_CHOICES, type DeviceChoice, type ExecutionProviderName, type NormalizationPlace, type ProviderAttempt } from '../onnx/devices.js';
import type { PlainTensor } from '../onnx/feeds.js';
import { openSessionRunner, type SessionRunner } from '../onnx/session-runner.js';
import { normalizationGraph, NORMALIZATION_GRAPH_INPUT, NORMALIZATION_GRAPH_OUTPUT } from '../onnx/normalization-graph.js';
import { BFLOAT16_UNSUPPORTED, widenBfloat16Io } from '../onnx/bfloat16-io.js';
import { canonicalJson } from '../util/hash.js';
import { checkBatchInputMemory } from './batch-memory.js';
import type { EmbeddingSet } from './embedding-set.js';
import { EMBEDDING_OUTPUT_NAMES, preprocessingDefaultsUsed, resolveModelSignature, type ModelSignature, type TokenPooling } from './model-signature.js';
import { poolTokens } from './pooling.js';
import { findPreprocessorConfig, readPreprocessorConfig } from '../image/preprocessor-config.js';
import { normalizeRowsInPlace } from './normalize.js';
import { checkPositiveInteger } from '../util/check.js';
import { concatFloat32 } from '../util/concat.js';
import type { Rng } from '../util/rng.js';
import { DEFAULT_EMBED_BATCH_SIZE } from '../util/defaults.js';

/**
 * Batches an {@link OnnxEmbedder.embedItems} call queues in its decode pool ahead of the one being
 * inferred, so the children never wait for inference (a short inference stall drains one batch,
 * not the whole queue).
 */
export const DECODE_PREFETCH_BATCHES = 3;

/**
 * Batches an {@link OnnxEmbedder.embedItems} call has handed to the inference session at once: the
 * one running and the next, waiting on the session's thread, so the model never waits for the main
 * thread between batches.
 */
const INFERENCES_IN_FLIGHT = 2;

/**
 * Fewest images for which {@link OnnxEmbedder.embedItems} starts a decode pool when `workers` is not
 * given; smaller calls decode in this process, where the pool's start would cost more than it saves.
 * Measured on 2 vCPUs (dist build, 480x320 JPEGs to 224x224, medians of 3 runs): starting 1-2 children
 * takes 0.21-0.29 s; decoding runs at 260 img/s in process and 311 img/s with 2 children, so the pool
 * pays for itself here from ~450 images. On 16 cores, where 16 processes decode 1,677 img/s and the
 * threads of one process at most ~550 (docs/stack.md §9), it does from ~250 images: the threshold is set
 * for the machines where the pool matters; on 2 cores the choice changes a 256-image call by ~0.1 s.
 * Tiny images gain nothing from processes on 2 vCPUs (600 28x28 PNGs: 0.93 s in process, 0.87 s with
 * 2 children plus their 0.45 s start); there `workers: 0` is the faster choice.
 */
export const DECODE_POOL_MIN_ITEMS = 256;

/**
 * Decode processes an embedding of `itemCount` images uses: `workers` when given (0 = decode in this
 * process), else one per core from {@link DECODE_POOL_MIN_ITEMS} images on and none below; none for
 * no images.
 */
export function decodeProcessCount(itemCount: number, workers: number | undefined): number {
  if (itemCount === 0) return 0;
  if (workers !== undefined) return Math.min(workers, itemCount); // never more processes than images
  return itemCount >= DECODE_POOL_MIN_ITEMS ? defaultDecodeWorkers() : 0;
}

/** Options of {@link OnnxEmbedder.open}. */
export interface EmbedderOptions {
  /** Execution provider choice: `auto` = CUDA if it loads, else CPU. Default `auto`. */
  device?: DeviceChoice;
  /** onnxruntime intra-op threads (default: onnxruntime's own choice). */
  threads?: number;
  /** Images per inference call for dynamic-batch models (default 32). Fixed-batch models use their own. */
  batchSize?: number;
  /** Preprocessing fields that override the model's metadata and declared shape. */
  preprocessing?: Partial<Preprocessing>;
  /**
   * Name of the output holding the embeddings (default: a 2-D output named like an embedding, such as
   * `image_embeds` or `pooler_output`, else the first output).
   */
  outputName?: string;
  /** Pool a token output [N, T, D] into [N, D] (see {@link TokenPooling}); default none. */
  pooling?: TokenPooling;
  /**
   * A Hugging Face `preprocessor_config.json` to read preprocessing from (below `preprocessing`, above
   * the model's metadata); default: the one beside the model or in its parent folder, if any
   * ({@link findPreprocessorConfig}); false: none.
   */
  preprocessorConfig?: string | false;
  /**
   * Where a batch is normalised ({@link NormalizationPlace}): `host` (default) in JavaScript before
   * inference, `device` by a graph in front of the model on its execution provider (uint8 crops go
   * in). `device` needs a float32 image input (E_ARG otherwise).
   */
  normalization?: NormalizationPlace;
  /**
   * Run the model on a worker thread of its own (default true), so this thread's event loop keeps
   * running during inference: decode processes keep getting work, a server keeps answering. false runs
   * it on the calling thread (for callers that are themselves a worker thread doing only this).
   */
  inferenceThread?: boolean;
}

/** Options of {@link OnnxEmbedder.embedItems}. */
export interface EmbedItemsOptions {
  /** Skip images that cannot be decoded, and report them, instead of failing. Default false. */
  skipBadImages?: boolean;
  /** Decodes in flight when decoding in this process (default 4); a decode pool's children take 2 each. */
  concurrency?: number;
  /**
   * Image decode child processes: 0 = decode in this process. Default: one per core
   * ({@link defaultDecodeWorkers}) for {@link DECODE_POOL_MIN_ITEMS} images or more, in this process
   * below. The pool is started for the call and closed before it returns.
   */
  workers?: number;
  /**
   * An open decode pool to decode with instead (the caller closes it), for callers that embed many
   * small chunks, each too small to start a pool for. It must have this embedder's preprocessing;
   * its own pixel limit applies (`limitInputPixels`, `concurrency` and `workers` are not used).
   */
  decodePool?: ImageDecodePool;
  /** Pixel limit per image (decompression-bomb guard); the image loader's default when absent. */
  limitInputPixels?: number;
  /**
   * The seeded train augmentation instead of the eval transform (as `loadImageBatch` applies it: one
   * generator per image, forked from `rng` in item order). Decodes in this process: the decode pool
   * applies the eval transform only, so `workers` and `decodePool` must not be given with it.
   */
  augment?: { augmentation: TrainAugmentation; rng: Rng };
  /** Called after each batch is decoded and handed to inference, with (items done, items total). */
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

/** An image left out of an embedding run (with `skipBadImages`), and why. */
export interface SkippedImage {
  id: string;
  message: string;
}

/** An embedder bound to one ONNX model. Call {@link release} when done. */
export class OnnxEmbedder {
  /** Model path as given. */
  readonly modelPath: string;
  /**
   * The model's identity: SHA-256 of the model file, or, for a model with external data files, of
   * its file's and their hashes (see {@link modelIdentity}).
   */
  readonly modelSha256: string;
  /** The model's external data files (weights stored beside it), with their hashes; empty for most models. */
  readonly externalData: readonly ExternalDataFile[];
  /**
   * The element types of the model's image input and embedding output as its file declares them
   * (`float32`, `float16`, `bfloat16`: bfloat16 ones run cast to float32 inside the graph).
   */
  readonly ioTypes: { input: string; output: string };
  /** Execution provider that actually runs the model. */
  readonly provider: ExecutionProviderName;
  /** Where {@link embedItems} normalises its batches (see {@link NormalizationPlace}). */
  readonly normalization: NormalizationPlace;
  /** Providers tried before, with their errors (empty when the first choice loaded). */
  readonly providerAttempts: ProviderAttempt[];
  readonly signature: ModelSignature;
  /** The model's metadata_props. */
  readonly metadataProps: Record<string, string>;
  /** The `preprocessor_config.json` the preprocessing was read from, if any. */
  readonly preprocessorConfigPath: string | undefined;
  readonly batchSize: number;
  /**
   * Warnings about how the model is used, for the caller to show and record (nothing is printed): the
   * first of several outputs taken because no `outputName` was given.
   */
  readonly warnings: readonly string[];
  private readonly session: SessionRunner;
  private dim: number | null;

  private constructor(init: {
    modelPath: string;
    modelSha256: string;
    externalData: ExternalDataFile[];
    ioTypes: { input: string; output: string };
    provider: ExecutionProviderName;
    normalization: NormalizationPlace;
    providerAttempts: ProviderAttempt[];
    signature: ModelSignature;
    metadataProps: Record<string, string>;
    preprocessorConfigPath?: string;
    batchSize: number;
    session: SessionRunner;
    warnings: string[];
  }) {
    this.modelPath = init.modelPath;
    this.modelSha256 = init.modelSha256;
    this.externalData = init.externalData;
    this.ioTypes = init.ioTypes;
    this.provider = init.provider;
    this.normalization = init.normalization;
    this.providerAttempts = init.providerAttempts;
    this.signature = init.signature;
    this.metadataProps = init.metadataProps;
    this.preprocessorConfigPath = init.preprocessorConfigPath;
    this.batchSize = init.batchSize;
    this.session = init.session;
    this.warnings = init.warnings;
    this.dim = init.signature.outputDim;
  }

  /** Loads the model, reads its metadata and signature, and creates the session. */
  static async open(modelPath: string, options: EmbedderOptions = {}): Promise<OnnxEmbedder> {
    const batchSize = options.batchSize ?? DEFAULT_EMBED_BATCH_SIZE;
    checkPositiveInteger('batchSize', batchSize);
    const normalization = options.normalization ?? 'host';
    if (!NORMALIZATION_CHOICES.includes(normalization)) {
      throw invalidParameterError('normalization', `one of ${NORMALIZATION_CHOICES.map((c) => `'${c}'`).join(', ')}`, normalization);
    }
    const files = await readModelFiles(modelPath);
    const meta = readModelMetadata(files.bytes, modelPath);
    const dmlMeta = parseDmlMetadata(meta.metadataProps, modelPath);
    const configPath = options.preprocessorConfig === false ? undefined : (options.preprocessorConfig ?? (await findPreprocessorConfig(modelPath)));
    const config = configPath !== undefined ? await readPreprocessorConfig(configPath) : undefined;
    const sessionOptions = {
      device: options.device ?? DEFAULT_DEVICE,
      name: modelPath,
      thread: options.inferenceThread ?? true,
      ...(options.threads !== undefined ? { threads: options.threads } : {}),
      // Decoding shares the cores with inference (decode processes, or sharp's threads here): a spinning
      // onnxruntime thread would take one from it (docs/benchmarks.md, "Evaluation: the image pipeline").
      spinning: false,
    };
    let session: SessionRunner;
    /** The inputs and outputs the file declares bfloat16 (cast to float32 inside the graph in memory). */
    let bfloat16Io = new Set<string>();
    try {
      // By path, so that onnxruntime finds external data files beside the model.
      session = await openSessionRunner(modelPath, sessionOptions);
    } catch (err) {
      // onnxruntime-node cannot open bfloat16 inputs or outputs: run the model with them cast inside the graph.
      if (!(err instanceof DmlError) || !BFLOAT16_UNSUPPORTED.test(err.message)) throw err;
      const widened = widenBfloat16Io(files.bytes, modelPath);
      if (widened === undefined) throw err;
      if (files.externalData.length > 0) {
        throw new DmlError('E_MODEL', `${modelPath}: bfloat16 inputs or outputs need the model rewritten in memory, which cannot carry its external data files; expected a model with float32 or float16 inputs and outputs, or one without external data`, { cause: err });
      }
      session = await openSessionRunner(widened.bytes, sessionOptions);
      bfloat16Io = new Set([...widened.inputs, ...widened.outputs]);
    }
    const { io } = session;
    const overrides = {
      ...(options.preprocessing ?? {}),
      ...(options.outputName !== undefined ? { outputName: options.outputName } : {}),
      ...(options.pooling !== undefined ? { pooling: options.pooling } : {}),
    };
    let signature: ModelSignature;
    try {
      signature = resolveModelSignature(modelPath, io.inputs, io.outputs, dmlMeta.preprocessing, overrides, config);
      checkBatchInputMemory(signature.fixedBatch ?? batchSize, signature.preprocessing);
      if (normalization === 'device') {
        const inputType = bfloat16Io.has(signature.inputName) ? 'bfloat16' : signature.inputType;
        if (inputType !== 'float32') {
          throw invalidParameterError('normalization', `'host' for ${modelPath}, whose image input "${signature.inputName}" takes ${inputType} ('device' needs a float32 input)`, normalization);
        }
        await session.addInputStage({ model: normalizationGraph(signature.preprocessing), input: NORMALIZATION_GRAPH_INPUT, output: NORMALIZATION_GRAPH_OUTPUT, feeds: signature.inputName });
      }
    } catch (err) {
      await session.release();
      throw err;
    }
    const embedder = new OnnxEmbedder({
      modelPath,
      modelSha256: files.sha256,
      externalData: files.externalData,
      ioTypes: {
        input: bfloat16Io.has(signature.inputName) ? 'bfloat16' : signature.inputType,
        output: bfloat16Io.has(signature.outputName) ? 'bfloat16' : (io.outputs.find((o) => o.name === signature.outputName)?.type ?? 'float32'),
      },
      provider: session.provider,
      normalization,
      providerAttempts: session.attempts,
      signature,
      metadataProps: meta.metadataProps,
      batchSize: signature.fixedBatch ?? batchSize,
      session,
      ...(configPath !== undefined ? { preprocessorConfigPath: configPath } : {}),
      warnings: [
        // Said only when the first output was taken for want of a better rule (not by name, not as the token output to pool).
        ...(options.outputName === undefined && options.pooling === undefined && io.outputs.length > 1 && signature.outputName === io.outputs[0]?.name && !EMBEDDING_OUTPUT_NAMES.includes(signature.outputName)
          ? [
              `${modelPath} has ${io.outputs.length} outputs (${io.outputs.map((o) => o.name).join(', ')}); using the first, "${signature.outputName}", as the embedding; pass --output-name <name> (option outputName) to use another`,
            ]
          : []),
        ...defaultsWarning(modelPath, signature),
      ],
    });
    if (io.outputs.find((o) => o.name === signature.outputName)?.shape.length === 0) {
      try {
        await embedder.#probeOutputShape();
      } catch (err) {
        await session.release();
        throw err;
      }
    }
    return embedder;
  }

  /**
   * For a model that does not declare its output's rank: runs it once on a batch of blank images (two,
   * so the batch axis shows, or the fixed batch) and checks that the output is [N, D], naming the real
   * shape when it is not; sets the embedding dimension.
   */
  async #probeOutputShape(): Promise<void> {
    const p = this.signature.preprocessing;
    const count = this.signature.fixedBatch ?? 2;
    const dims = p.layout === 'NCHW' ? [count, p.channels, p.height, p.width] : [count, p.height, p.width, p.channels];
    const name = this.signature.outputName;
    let out: PlainTensor | undefined;
    try {
      const result = await this.session.run({ [this.signature.inputName]: { data: new Float32Array(count * p.channels * p.height * p.width), dims } }, [name], { transferInputs: false });
      out = result.outputs[name];
    } catch (err) {
      throw new DmlError('E_MODEL', `${this.modelPath}: inference failed: ${(err as Error).message.split('\n')[0]}`, { cause: err });
    }
    const rank = this.signature.pooling === null ? 2 : 3;
    if (!out || out.dims.length !== rank || out.dims[0] !== count) {
      throw new DmlError(
        'E_MODEL',
        `${this.modelPath}: output "${name}" has shape [${out?.dims.join(', ') ?? ''}] on a batch of ${count} images (the model does not declare it); expected ${rank === 2 ? `[N, D] embeddings, here [${count}, D]` : `[N, T, D] tokens to pool, here [${count}, T, D]`}`,
      );
    }
    this.dim = out.dims[rank - 1] as number;
  }

  /** Preprocessing this embedder applies. */
  get preprocessing(): Preprocessing {
    return this.signature.preprocessing;
  }

  /**
   * Runs the model on `count` preprocessed images in `batch` (layout and size per {@link preprocessing})
   * and returns their L2-normalised embeddings (count x dim). `firstRow` numbers rows in error messages.
   */
  async embedTensor(batch: Float32Array, count: number, firstRow = 0): Promise<Float32Array> {
    return (await this.#embedBatch(batch, count, firstRow, false)).vectors;
  }

  /**
   * {@link embedTensor} for a batch of either kind ({@link BatchArray}: normalised float32 input, or
   * uint8 HWC crops for the normalisation graph of `normalization: 'device'`), also answering the input
   * array the model ran on. With `handOver`, `batch`'s buffer goes to the inference thread (detached
   * here) and comes back as `input`'s buffer.
   */
  async #embedBatch(batch: BatchArray, count: number, firstRow: number, handOver: boolean): Promise<{ vectors: Float32Array; input: BatchArray }> {
    const p = this.signature.preprocessing;
    const per = p.channels * p.height * p.width;
    if (batch.length < count * per) throw invalidParameterError('batch', `at least ${count * per} values`, batch.length);
    const runCount = this.signature.fixedBatch ?? count;
    if (count > runCount) throw invalidParameterError('count', `at most the model's fixed batch ${runCount}`, count);
    const pixels = batch instanceof Uint8Array;
    let data = batch.subarray(0, count * per);
    if (runCount > count) {
      data = pixels ? new Uint8Array(runCount * per) : new Float32Array(runCount * per);
      data.set(batch.subarray(0, count * per));
    }
    // uint8 crops are HWC whatever the model's layout: the graph in front of the model transposes them.
    const inputName = pixels ? NORMALIZATION_GRAPH_INPUT : this.signature.inputName;
    const dims = p.layout === 'NCHW' && !pixels ? [runCount, p.channels, p.height, p.width] : [runCount, p.height, p.width, p.channels];
    let out: PlainTensor | undefined;
    let input: BatchArray;
    try {
      const result = await this.session.run({ [inputName]: { data, dims } }, [this.signature.outputName], { transferInputs: handOver });
      out = result.outputs[this.signature.outputName];
      input = (result.inputs[inputName] as { data: BatchArray }).data;
    } catch (err) {
      throw new DmlError('E_MODEL', `${this.modelPath}: inference failed: ${(err as Error).message.split('\n')[0]}`, { cause: err });
    }
    const pooling = this.signature.pooling;
    const rank = pooling === null ? 2 : 3;
    if (!out || out.dims.length !== rank || out.dims[0] !== runCount || !(out.data instanceof Float32Array)) {
      throw new DmlError(
        'E_MODEL',
        `${this.modelPath}: output "${this.signature.outputName}" came back as ${out?.type ?? 'nothing'} [${out?.dims.join(', ') ?? ''}]; expected float32 [${runCount}, ${rank === 2 ? 'D' : 'T, D'}]`,
      );
    }
    const dim = out.dims[rank - 1] as number;
    if (this.dim !== null && dim !== this.dim) {
      throw new DmlError('E_MODEL', `${this.modelPath}: output dimension changed from ${this.dim} to ${dim}`);
    }
    this.dim = dim;
    const vectors =
      pooling === null ? out.data.slice(0, count * dim) : poolTokens(out.data.subarray(0, count * (out.dims[1] as number) * dim), count, out.dims[1] as number, dim, pooling, this.modelPath);
    normalizeRowsInPlace(vectors, count, dim, this.modelPath, firstRow);
    return { vectors, input };
  }

  /**
   * Embeds manifest items in order. Skipped images (with `skipBadImages`) are left out of the set and
   * reported. Decoding happens in child processes or in this process per `workers` and `decodePool`.
   */
  async embedItems(items: ManifestItem[], options: EmbedItemsOptions = {}): Promise<{ set: EmbeddingSet; failures: SkippedImage[] }> {
    const p = this.signature.preprocessing;
    const { workers, decodePool } = options;
    if (workers !== undefined && (!Number.isInteger(workers) || workers < 0)) {
      throw invalidParameterError('workers', 'a non-negative integer', workers);
    }
    if (options.augment !== undefined && ((workers !== undefined && workers !== 0) || decodePool !== undefined)) {
      throw invalidParameterError('augment', 'no workers or decodePool with it (augmented images decode in this process)', options.augment);
    }
    if (decodePool !== undefined) {
      if (!(decodePool instanceof ImageDecodePool)) throw invalidParameterError('decodePool', 'an ImageDecodePool', decodePool);
      if (canonicalJson(decodePool.preprocessing) !== canonicalJson(p)) {
        throw invalidParameterError('decodePool', `a pool with the preprocessing of ${this.modelPath} (${canonicalJson(p)})`, canonicalJson(decodePool.preprocessing));
      }
      return this.#embedBatches(items, options, (sources, output) => decodePool.loadBatch<BatchArray>(sources, { ...poolOptions(options), output }), DECODE_PREFETCH_BATCHES);
    }
    const processes = options.augment !== undefined ? 0 : decodeProcessCount(items.length, workers);
    if (processes === 0) {
      const loadOptions = {
        skipBadImages: options.skipBadImages ?? false,
        ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
        ...(options.limitInputPixels !== undefined ? { limitInputPixels: options.limitInputPixels } : {}),
        ...(options.signal !== undefined ? { signal: options.signal } : {}),
        ...(options.augment !== undefined ? { augment: options.augment } : {}),
      };
      return this.#embedBatches(items, options, (sources, output) => loadImageBatch<BatchArray>(sources, p, { ...loadOptions, output }), 1);
    }
    const pool = await ImageDecodePool.start({ workers: processes, preprocessing: p, limitInputPixels: options.limitInputPixels });
    try {
      return await this.#embedBatches(items, options, (sources, output) => pool.loadBatch<BatchArray>(sources, { ...poolOptions(options), output }), DECODE_PREFETCH_BATCHES);
    } finally {
      await pool.close();
    }
  }

  /**
   * The batch loop of {@link embedItems}: `load` decodes one batch into `output` (uint8 crops with
   * `normalization: 'device'`, normalised float32 input otherwise); up to `prefetch` batches are
   * decoding while the current one runs inference. The batch arrays circulate: each comes back from the
   * inference thread with its embeddings and is filled again (see `batchOutput` in
   * image/batch-collector.ts for why that matters).
   */
  async #embedBatches(
    items: ManifestItem[],
    options: EmbedItemsOptions,
    load: (sources: ImageSource[], output: BatchArray) => Promise<ImageBatch<BatchArray>>,
    prefetch: number,
  ): Promise<{ set: EmbeddingSet; failures: SkippedImage[] }> {
    const p = this.signature.preprocessing;
    const batchLength = this.batchSize * p.channels * p.height * p.width;
    const pixels = this.normalization === 'device';
    const bytesPerValue = pixels ? 1 : 4;
    const spare: BatchArray[] = [];
    const recycle = (buffer: ArrayBufferLike): void => {
      if (buffer.byteLength === batchLength * bytesPerValue) spare.push(pixels ? new Uint8Array(buffer) : new Float32Array(buffer));
    };
    // In shared memory: the session thread gets each batch shared, not transferred, which V8 would count
    // as a fresh allocation every time and collect garbage for (feeds.ts, PrivateInputCopies).
    const newBatchArray = (): BatchArray => {
      const buffer = new SharedArrayBuffer(batchLength * bytesPerValue);
      return pixels ? new Uint8Array(buffer) : new Float32Array(buffer);
    };
    const chunks: Float32Array[] = [];
    const ids: string[] = [];
    const labels: string[] = [];
    const failures: SkippedImage[] = [];
    const queue: Array<{ batch: Promise<ImageBatch<BatchArray>>; output: BatchArray }> = [];
    let queued = 0;
    const refill = (): void => {
      while (queue.length < prefetch && queued < items.length) {
        const output = spare.pop() ?? newBatchArray();
        const batch = load(items.slice(queued, queued + this.batchSize).map((it) => it.source), output);
        // Keep a rejected prefetch from becoming an unhandled rejection while earlier batches run.
        batch.catch(() => undefined);
        queue.push({ batch, output });
        queued += this.batchSize;
      }
    };
    refill();
    // Inference runs on the session's thread: the next batch is handed over as soon as it is decoded,
    // so it waits there while the current one runs (at most INFERENCES_IN_FLIGHT batches).
    const inferring: Array<Promise<{ vectors: Float32Array; input: BatchArray }>> = [];
    const collect = async (): Promise<void> => {
      const { vectors, input } = await (inferring.shift() as Promise<{ vectors: Float32Array; input: BatchArray }>);
      chunks.push(vectors);
      recycle(input.buffer);
    };
    for (let start = 0; start < items.length; start += this.batchSize) {
      if (options.signal?.aborted) throw new DmlError('E_CANCELLED', 'Embedding cancelled');
      const { batch: pending, output } = queue.shift() as { batch: Promise<ImageBatch<BatchArray>>; output: BatchArray };
      const batch = await pending;
      // A batch with skipped images comes packed into a new array: its own array is free again at once.
      if (batch.data.buffer !== output.buffer) recycle(output.buffer);
      refill();
      for (const f of batch.failures) failures.push({ id: (items[start + f.index] as ManifestItem).id, message: f.message });
      if (batch.loaded.length > 0) {
        const inference = this.#embedBatch(batch.data, batch.loaded.length, ids.length, true);
        inference.catch(() => undefined);
        inferring.push(inference);
        for (const i of batch.loaded) {
          const item = items[start + i] as ManifestItem;
          ids.push(item.id);
          labels.push(item.label);
        }
      }
      if (inferring.length >= INFERENCES_IN_FLIGHT) await collect();
      options.onProgress?.(Math.min(start + this.batchSize, items.length), items.length);
    }
    while (inferring.length > 0) await collect();
    return { set: { vectors: concatFloat32(chunks), count: ids.length, dim: this.dim ?? 0, ids, labels }, failures };
  }

  /** Embedding dimension, once known (from the output's declared shape or the first run). */
  get embeddingDim(): number | null {
    return this.dim;
  }

  /** Frees the inference session. */
  async release(): Promise<void> {
    await this.session.release();
  }
}

/**
 * The warning for a model whose preprocessing came partly from dmlkit's defaults
 * ({@link preprocessingDefaultsUsed}); none when nothing was defaulted.
 */
function defaultsWarning(modelPath: string, signature: ModelSignature): string[] {
  const used = preprocessingDefaultsUsed(signature.preprocessing, signature.preprocessingSources);
  if (used.length === 0) return [];
  return [
    `${modelPath} has no preprocessing metadata (dml.preprocessing) and no preprocessor_config.json; using dmlkit's defaults: ${used.join(', ')}; pass --preprocessor-config <file> or --size/--resize/--mean/--std if the model was trained otherwise`,
  ];
}

/** The {@link ImageDecodePool.loadBatch} options of an {@link OnnxEmbedder.embedItems} call. */
function poolOptions(options: EmbedItemsOptions): { skipBadImages: boolean; signal?: AbortSignal } {
  return { skipBadImages: options.skipBadImages ?? false, ...(options.signal !== undefined ? { signal: options.signal } : {}) };
}
