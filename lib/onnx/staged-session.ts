/**
 * @file A model session with an optional input stage: a second, small model run first on the same
 * thread and execution provider, whose output feeds one of the model's inputs. The embedder's stage is
 * the normalisation graph (normalization-graph.ts): uint8 crops go in, and on a provider with IO
 * binding (WebGPU, {@link ExecutionDevice.outputLocation}) the normalised tensor stays in device memory
 * between the two runs, so only the crops cross to the device. On the CPU provider the stage's output
 * comes back to JavaScript memory and is fed on: the same code and the same numbers, one copy more.
 *
 * Both session runners use it: on the calling thread ({@link InProcessSessionRunner}) and on a worker
 * thread (session-thread-worker.ts), where a device tensor must stay, since it cannot cross threads.
 */
import { DmlError } from '../errors.js';
import ort from './ort.js';
import { createSession, describeIo, type CreatedSession, type CreateSessionOptions, type IoDescription } from './session.js';
import type { ExecutionProviderName, ProviderAttempt } from './devices.js';
import { ortFeeds, PrivateInputCopies, type RunInputs } from './feeds.js';

/** A model run before the main one (see the file comment). */
export interface InputStage {
  /** The stage model's bytes. */
  model: Uint8Array;
  /** The stage's input, fed by callers under this name. */
  input: string;
  /** The stage's output. */
  output: string;
  /** The main model's input that the stage's output feeds. */
  feeds: string;
}

/** A session and its input stage, if any (see the file comment). */
export class StagedSession {
  readonly provider: ExecutionProviderName;
  readonly attempts: ProviderAttempt[];
  readonly io: IoDescription;
  readonly #main: ort.InferenceSession;
  readonly #options: CreateSessionOptions;
  #stage: { spec: InputStage; session: ort.InferenceSession } | undefined;
  readonly #copies = new PrivateInputCopies();

  /** Wraps `created`, opened with `options` (the stage opens with them too, on the same provider). */
  constructor(created: CreatedSession, options: CreateSessionOptions) {
    this.#main = created.session;
    this.provider = created.provider;
    this.attempts = created.attempts;
    this.io = describeIo(created.session);
    this.#options = options;
  }

  /** Opens `stage` on this session's provider, its output left on the device where the provider can. */
  async addInputStage(stage: InputStage): Promise<void> {
    if (this.#stage !== undefined) throw new DmlError('E_ARG', `${this.#options.name ?? 'model'}: an input stage is already set`);
    if (!this.io.inputs.some((i) => i.name === stage.feeds)) {
      throw new DmlError('E_ARG', `${this.#options.name ?? 'model'}: the input stage feeds "${stage.feeds}", which is not an input of the model (${this.io.inputs.map((i) => i.name).join(', ')})`);
    }
    const { session } = await createSession(stage.model, {
      ...this.#options,
      device: this.provider,
      name: `${this.#options.name ?? 'model'} (input stage)`,
      deviceOutputs: [stage.output],
    });
    this.#stage = { spec: stage, session };
  }

  /**
   * Runs the model on `inputs`. With an input stage and its input among `inputs`, the stage runs first
   * and its output feeds the model (then is released, if on the device); other inputs go to the model.
   * Inputs in shared memory are copied first ({@link PrivateInputCopies}).
   */
  async run(inputs: RunInputs, outputNames: string[]): Promise<ort.InferenceSession.ReturnType> {
    const copies = this.#copies.of(inputs);
    try {
      return await this.#run(copies.inputs, outputNames);
    } finally {
      copies.release();
    }
  }

  /** {@link run} on inputs onnxruntime takes (none in shared memory). */
  async #run(inputs: RunInputs, outputNames: string[]): Promise<ort.InferenceSession.ReturnType> {
    const stage = this.#stage;
    if (stage === undefined || inputs[stage.spec.input] === undefined) return this.#main.run(ortFeeds(inputs, this.io.inputs), outputNames);
    const { [stage.spec.input]: stageInput, ...rest } = inputs;
    const staged = (await stage.session.run(ortFeeds({ [stage.spec.input]: stageInput as RunInputs[string] }), [stage.spec.output]))[stage.spec.output] as ort.Tensor;
    try {
      return await this.#main.run({ ...ortFeeds(rest, this.io.inputs), [stage.spec.feeds]: staged }, outputNames);
    } finally {
      if (staged.location !== 'cpu' && staged.location !== 'cpu-pinned') staged.dispose();
    }
  }

  /** Frees both sessions. */
  async release(): Promise<void> {
    await this.#stage?.session.release();
    await this.#main.release();
  }
}
