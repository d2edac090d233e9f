/**
 * @file A run's network trained by TensorFlow.js (training-network.ts): the model's loss and
 * gradients (batch-step.ts), tfjs's optimiser or the fused one (optimizer.ts) set to each step's
 * learning rate and momentum, decoupled weight decay on the kernels, the loss's own parameters by
 * their optimiser (loss-optimizer.ts).
 *
 * Opening it probes one step: a kernel the backend lacks (e.g. the gradient of gather on wasm) moves
 * the work to a backend that has it, with a warning. The probe's forward pass in training mode moves
 * batch-norm statistics and the loss's per-step state (a cross-batch memory); both are put back after
 * it, so that a resumed run continues from its checkpoint's, as an uninterrupted run does. A resume loads the checkpoint's weights into
 * the model built by the same builders and its optimiser state into a fresh optimiser; the first step
 * then moves that state to an optimiser at the step's learning rate.
 */
import * as tf from '@tensorflow/tfjs';
import { DmlError } from '../errors.js';
import { ensureBackendSupports } from '../engine/tfjs/backend.js';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import type { InputDraw } from './batch-step.js';
import { loadCheckpoint, type CheckpointContents } from './checkpoint-io.js';
import type { LossOptimizer } from './loss-optimizer.js';
import { restoreLossState } from './loss-state.js';
import { applyWeightDecay, appliesWeightDecay, createOptimizer, decayedVariables, FUSED_OPTIMIZER_BACKENDS, setLearningRate, setMomentum, withLearningRate, type OptimizerConfig, type OptimizerOptions } from './optimizer.js';
import { embedAll } from './run-inputs.js';
import type { TrainingData } from './training-data.js';
import type { BatchOutcome, NetworkSetup, StepSettings, TrainingNetwork } from './training-network.js';

/** The name of a weight of `model` holding NaN or Inf, or undefined. */
export function nonFiniteModelWeight(model: tf.LayersModel): string | undefined {
  for (const w of model.weights) {
    const bad = tf.tidy(() => tf.any(tf.logicalNot(tf.isFinite(w.read()))).dataSync()[0]);
    if (bad) return w.name;
  }
  return undefined;
}

/** A network trained by TensorFlow.js (see the file comment). */
export class TfjsTrainingNetwork implements TrainingNetwork {
  readonly device = undefined;
  /** The learning rate the optimiser is at; NaN after a resume, until the first step sets it. */
  private currentLearningRate: number;

  private constructor(
    private readonly setup: NetworkSetup,
    private readonly model: tf.LayersModel,
    private optimizer: tf.Optimizer,
    private readonly options: OptimizerOptions,
    /** The variables that take weight decay (kernels). */
    private readonly kernels: readonly tf.Variable[],
    resumed: boolean,
  ) {
    this.currentLearningRate = resumed ? Number.NaN : setup.initialLearningRate;
  }

  /** Opens the network of `setup` (a TensorFlow.js model), restored from `setup.checkpointDir` when given, and probes one step. */
  static async open(setup: NetworkSetup): Promise<TfjsTrainingNetwork> {
    if (!('model' in setup.network)) throw new DmlError('E_ARG', `${setup.network.name} is an ONNX network: the graph trainer trains it, not TensorFlow.js`);
    const { model } = setup.network;
    const kernelNames = new Set<string>();
    const options: OptimizerOptions = { fused: FUSED_OPTIMIZER_BACKENDS.has(tf.getBackend()), decayed: (name) => kernelNames.has(name) };
    let optimizer = createOptimizer(setup.optimizer, setup.initialLearningRate, options);
    if (setup.checkpointDir !== undefined) {
      const loaded = await loadCheckpoint(setup.checkpointDir, { optimizer, into: model });
      optimizer = loaded.optimizer ?? optimizer;
      await restoreLossState(setup.loss, setup.lossOptimizer, loaded, setup.checkpointDir);
    }
    const kernels = decayedVariables(model);
    for (const v of kernels) kernelNames.add(v.name);
    const network = new TfjsTrainingNetwork(setup, model, optimizer, options, kernels, setup.checkpointDir !== undefined);
    await network.probe();
    return network;
  }

  get backend(): string {
    return tf.getBackend();
  }

  /** One step's gradients computed and dropped, moving to a backend that has every kernel they need (see the file comment). */
  private async probe(): Promise<void> {
    const statistics = this.model.nonTrainableWeights.map((w) => tf.clone(w.read()));
    const lossState = this.setup.loss.stepState?.save();
    for (;;) {
      try {
        const probe = this.setup.batch.gradientsOf(this.setup.firstBatch, { valid: 0, total: 0 });
        tf.dispose([probe.value, probe.grads]);
        break;
      } catch (err) {
        const missing = /Kernel '(\w+)' not registered for backend/.exec((err as Error).message)?.[1];
        if (missing === undefined || tf.getBackend() === 'cpu') throw err;
        const moved = await ensureBackendSupports(this.model, { training: true, extraKernels: [missing] });
        if (moved.warning) this.setup.warn(moved.warning);
      }
    }
    this.model.nonTrainableWeights.forEach((w, i) => w.write(statistics[i] as tf.Tensor));
    tf.dispose(statistics);
    if (lossState) this.setup.loss.stepState?.restore(lossState, 'the probe step');
  }

  /** Sets the optimisers to the step's learning rate and momentum. */
  private async setStep(step: StepSettings, config: OptimizerConfig): Promise<void> {
    const lr = step.learningRate;
    if (lr !== this.currentLearningRate) {
      if (Number.isNaN(this.currentLearningRate)) this.optimizer = await withLearningRate(this.optimizer, config, lr, this.options);
      else setLearningRate(this.optimizer, lr);
      this.setup.lossOptimizer?.setLearningRate(lr);
      this.currentLearningRate = lr;
    }
    if (step.momentum !== undefined) {
      setMomentum(this.optimizer, step.momentum);
      this.setup.lossOptimizer?.setMomentum(step.momentum);
    }
  }

  async trainBatch(rows: Int32Array, draw: InputDraw, step: StepSettings): Promise<BatchOutcome> {
    await this.setStep(step, this.setup.optimizer);
    const counts = { valid: 0, total: 0 };
    const computed = this.setup.batch.gradientsOf(rows, counts, draw);
    try {
      const value = (await computed.value.data())[0] as number;
      if (counts.valid > 0 && Number.isFinite(value)) {
        const lossOptimizer: LossOptimizer | undefined = this.setup.lossOptimizer;
        this.optimizer.applyGradients((lossOptimizer?.applyOwnGradients(computed.grads) ?? computed.grads) as Record<string, tf.Tensor>);
        if (!appliesWeightDecay(this.optimizer)) applyWeightDecay(this.kernels, step.learningRate, this.setup.optimizer.weightDecay);
        lossOptimizer?.decay(step.learningRate);
      }
      return { value, validCount: counts.valid, totalCount: counts.total };
    } finally {
      tf.dispose([computed.value, computed.grads]);
    }
  }

  async embedAll(data: TrainingData): Promise<EmbeddingSet> {
    return embedAll(this.model, data, this.setup.inputShape);
  }

  async settle(): Promise<void> {}

  nonFiniteWeight(): string | undefined {
    return nonFiniteModelWeight(this.model);
  }

  checkpoint(): { contents: Omit<CheckpointContents, 'state'>; state: { graphSteps?: number } } {
    const arrays = this.setup.lossOptimizer?.arrays();
    return {
      contents: { model: this.model, optimizer: this.optimizer, lossOptimizer: this.setup.lossOptimizer?.optimizer, ...(arrays && arrays.size > 0 ? { arrays } : {}) },
      state: {},
    };
  }
}
