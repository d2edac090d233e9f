/**
 * @file What runs an inference session for the embedder, apart from where it runs: a
 * {@link SessionRunner} answers `run` with plain tensors, whether the onnxruntime session lives on this
 * thread ({@link InProcessSessionRunner}) or on a worker thread of its own ({@link SessionThread},
 * session-thread.ts). onnxruntime-node's `run()` blocks the thread it is called on for the whole
 * inference (its `run` is a synchronous native call behind a `setImmediate`), so a session on the main
 * thread stops everything else there: the replies of image decode processes, a server's requests.
 */
import ort from './ort.js';
import { createSession, describeIo, type CreateSessionOptions, type IoDescription, type IoValueInfo } from './session.js';
import { fromHalfArray, toHalfArray } from '../util/half-float.js';
import type { ExecutionProviderName, ProviderAttempt } from './devices.js';
import { SessionThread } from './session-thread.js';

/** A tensor as it crosses threads: element type, dimensions and data. */
export interface PlainTensor {
  type: ort.Tensor.Type;
  dims: readonly number[];
  data: ort.Tensor.DataType;
}

/** Float32 inputs of one run, by input name. */
export type FloatInputs = Record<string, { data: Float32Array; dims: readonly number[] }>;

/**
 * {@link FloatInputs} as onnxruntime tensors: float32, or cast to float16 when `inputs` (the model's
 * declared inputs) says the input takes float16, so that half-precision exports (`model_fp16.onnx`)
 * run as they are.
 */
export function ortFeeds(inputs: FloatInputs, declared: readonly IoValueInfo[] = []): Record<string, ort.Tensor> {
  const feeds: Record<string, ort.Tensor> = {};
  for (const [name, { data, dims }] of Object.entries(inputs)) {
    const type = declared.find((d) => d.name === name)?.type;
    feeds[name] = type === 'float16' ? new ort.Tensor('float16', toHalfArray(data), dims) : new ort.Tensor('float32', data, dims);
  }
  return feeds;
}

/**
 * The outputs named in `outputNames` of an onnxruntime result, as {@link PlainTensor}s; float16
 * outputs are widened to float32 (exactly), so callers see float32 whatever the model's precision.
 */
export function plainOutputs(result: ort.InferenceSession.ReturnType, outputNames: string[]): Record<string, PlainTensor> {
  const outputs: Record<string, PlainTensor> = {};
  for (const name of outputNames) {
    const out = result[name];
    if (out === undefined) continue;
    outputs[name] =
      out.type === 'float16' && out.data instanceof Uint16Array
        ? { type: 'float32', dims: out.dims, data: fromHalfArray(out.data) }
        : { type: out.type, dims: out.dims, data: out.data };
  }
  return outputs;
}

/** What {@link SessionRunner.run} answers. */
export interface RunResult {
  /** The outputs asked for, by name. */
  outputs: Record<string, PlainTensor>;
  /**
   * The inputs, usable again: the caller's own arrays, or, when they were handed over to a session
   * thread, the same buffers handed back (so a caller can reuse its input arrays batch after batch).
   */
  inputs: FloatInputs;
}

/** Options of {@link SessionRunner.run}. */
export interface RunOptions {
  /**
   * Hand the inputs' buffers over instead of copying them: they are detached here until the run answers
   * with them in {@link RunResult.inputs}. Default false (a session thread gets a copy).
   */
  transferInputs?: boolean;
}

/** An inference session, wherever it runs. */
export interface SessionRunner {
  /** The execution provider that runs the model. */
  readonly provider: ExecutionProviderName;
  /** Every provider tried, in order; the last one succeeded. */
  readonly attempts: ProviderAttempt[];
  /** The model's declared inputs and outputs. */
  readonly io: IoDescription;
  /** Runs the model on float32 `inputs` (cast to float16 for a float16 input), answering the outputs named in `outputNames`. Rejects with onnxruntime's error. */
  run(inputs: FloatInputs, outputNames: string[], options?: RunOptions): Promise<RunResult>;
  /** Frees the session (and ends its thread). */
  release(): Promise<void>;
}

/** Options of {@link openSessionRunner}: {@link CreateSessionOptions} and where the session runs. */
export interface SessionRunnerOptions extends CreateSessionOptions {
  /** Run the session on a worker thread of its own ({@link SessionThread}). Default true. */
  thread?: boolean;
}

/** A session on the calling thread. */
export class InProcessSessionRunner implements SessionRunner {
  readonly provider: ExecutionProviderName;
  readonly attempts: ProviderAttempt[];
  readonly io: IoDescription;
  readonly #session: ort.InferenceSession;

  constructor(created: { session: ort.InferenceSession; provider: ExecutionProviderName; attempts: ProviderAttempt[] }) {
    this.#session = created.session;
    this.provider = created.provider;
    this.attempts = created.attempts;
    this.io = describeIo(created.session);
  }

  async run(inputs: FloatInputs, outputNames: string[]): Promise<RunResult> {
    return { outputs: plainOutputs(await this.#session.run(ortFeeds(inputs, this.io.inputs), outputNames), outputNames), inputs };
  }

  release(): Promise<void> {
    return this.#session.release();
  }
}

/**
 * Creates a session for `model` (a path, so that onnxruntime finds external data files beside it, or
 * the model's bytes) as {@link createSession} does, on a thread of its own unless `options.thread` is
 * false. Errors: those of {@link createSession}, with the same codes and messages.
 */
export async function openSessionRunner(model: string | Uint8Array, options: SessionRunnerOptions): Promise<SessionRunner> {
  const { thread = true, ...sessionOptions } = options;
  if (thread) return SessionThread.create(model, sessionOptions);
  return new InProcessSessionRunner(await createSession(model, sessionOptions));
}
