/**
 * @file What runs an inference session for the embedder, apart from where it runs: a
 * {@link SessionRunner} answers `run` with plain tensors, whether the onnxruntime session lives on this
 * thread ({@link InProcessSessionRunner}) or on a worker thread of its own ({@link SessionThread},
 * session-thread.ts). onnxruntime-node's `run()` blocks the thread it is called on for the whole
 * inference (its `run` is a synchronous native call behind a `setImmediate`), so a session on the main
 * thread stops everything else there: the replies of image decode processes, a server's requests.
 */
import { createSession, type CreateSessionOptions, type IoDescription } from './session.js';
import type { ExecutionProviderName, ProviderAttempt } from './devices.js';
import { plainOutputs, type PlainTensor, type RunInputs } from './feeds.js';
import { SessionThread } from './session-thread.js';
import { StagedSession, type InputStage } from './staged-session.js';

/** What {@link SessionRunner.run} answers. */
export interface RunResult {
  /** The outputs asked for, by name. */
  outputs: Record<string, PlainTensor>;
  /**
   * The inputs, usable again: the caller's own arrays, or, when they were handed over to a session
   * thread, the same buffers handed back (so a caller can reuse its input arrays batch after batch).
   */
  inputs: RunInputs;
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
  /**
   * Runs the model on `inputs` (float32, cast to float16 for a float16 input; or the input stage's
   * uint8 input), answering the outputs named in `outputNames`. Rejects with onnxruntime's error.
   */
  run(inputs: RunInputs, outputNames: string[], options?: RunOptions): Promise<RunResult>;
  /**
   * Opens `stage` in front of the model, on its thread and provider (see {@link StagedSession}): a run
   * whose inputs hold the stage's input runs the stage first. Rejects with onnxruntime's error, or
   * E_ARG when a stage is already set or `stage.feeds` is not an input of the model.
   */
  addInputStage(stage: InputStage): Promise<void>;
  /** Frees the session (and its input stage, and ends its thread). */
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
  readonly #session: StagedSession;

  constructor(session: StagedSession) {
    this.#session = session;
    this.provider = session.provider;
    this.attempts = session.attempts;
    this.io = session.io;
  }

  async run(inputs: RunInputs, outputNames: string[]): Promise<RunResult> {
    return { outputs: plainOutputs(await this.#session.run(inputs, outputNames), outputNames), inputs };
  }

  addInputStage(stage: InputStage): Promise<void> {
    return this.#session.addInputStage(stage);
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
  return new InProcessSessionRunner(new StagedSession(await createSession(model, sessionOptions), sessionOptions));
}
