/**
 * @file The training of a loss's own parameters (proxies, class weights, the margin loss's β) beside
 * the network, as a PyTorch parameter group of them would: an optimiser of the run's kind
 * (`optimizer.kind`, its momentum) of their own, at `learningRateScale` x each step's learning rate,
 * with decoupled weight decay `weightDecay` applied to all of them at that scaled rate (AdamW / SGDW:
 * p ← p (1 − rate · weightDecay); lib/train/losses/parameter-options.ts). The network's optimiser never
 * sees them, so its state, its weight decay and its checkpoint stay as they are.
 *
 * The step is the trainer's: on TensorFlow.js backends the loss's gradients come out of the batch's
 * gradient map ({@link LossOptimizer.applyOwnGradients}); on the graph trainer's two-run path
 * (lib/train/graph-network.ts) the loss's TensorFlow.js code gives them and {@link LossOptimizer.optimizer}
 * applies them; after a step that applied, {@link LossOptimizer.decay}.
 *
 * Checkpoints hold the parameters as float32 arrays (`loss/<index>` in the checkpoint's arrays, bit
 * for bit) and the optimiser's state (`loss-optimizer.json`/`.bin`); {@link LossOptimizer.restore}
 * puts both back, so a resumed run continues bit for bit. Older checkpoints kept the values in the
 * state's `lossVariables` (JSON numbers, also exact) and the slots in the network's optimiser: the
 * values are read from there, the slots start afresh. `dml export` writes the network alone.
 */
import * as tf from '@tensorflow/tfjs';
import { DmlError } from '../errors.js';
import { restoreOptimizerState, type OptimizerStateFiles } from './checkpoint-io.js';
import type { MetricLoss } from './losses/metric-loss.js';
import type { LossParameterTraining } from './losses/parameter-options.js';
import { applyWeightDecay, appliesWeightDecay, createOptimizer, setLearningRate, setMomentum, type OptimizerConfig } from './optimizer.js';

/** The checkpoint array name of the loss's `index`-th variable. */
const arrayName = (index: number): string => `loss/${index}`;

/** The optimiser of a loss's parameters (see the file comment). */
export class LossOptimizer {
  private constructor(
    private readonly variables: readonly tf.Variable[],
    private readonly settings: LossParameterTraining,
    /** The optimiser of the loss's parameters (the graph trainer's path applies its gradients with it). */
    readonly optimizer: tf.Optimizer,
  ) {}

  /**
   * The optimiser of `loss`'s trainable variables, or undefined when it has none; `fused` as the
   * network's optimiser (the fused optimisers apply the decay in their step).
   */
  static create(loss: MetricLoss, config: OptimizerConfig, learningRate: number, fused: boolean): LossOptimizer | undefined {
    if (loss.trainableVariables.length === 0) return undefined;
    const settings = loss.parameterTraining ?? { learningRateScale: 1, weightDecay: 0 };
    const optimizer = createOptimizer(
      { kind: config.kind, momentum: config.momentum, weightDecay: settings.weightDecay },
      learningRate * settings.learningRateScale,
      { fused, decayed: () => true },
    );
    return new LossOptimizer(loss.trainableVariables, settings, optimizer);
  }

  /** Sets the rate of the following steps: `learningRate` x the loss's learningRateScale. */
  setLearningRate(learningRate: number): void {
    setLearningRate(this.optimizer, learningRate * this.settings.learningRateScale);
  }

  /** Sets the momentum (Adam's β1) of the next step, as a schedule sets the network's (OneCycle's cycleMomentum, for every parameter group as PyTorch's). */
  setMomentum(momentum: number): void {
    setMomentum(this.optimizer, momentum);
  }

  /**
   * Applies the gradients of the loss's variables in `grads` (a batch's gradient map, by variable
   * name) and returns the map without them, for the network's optimiser.
   */
  applyOwnGradients(grads: tf.NamedTensorMap): tf.NamedTensorMap {
    const own = new Set(this.variables.map((v) => v.name));
    const mine: tf.NamedTensorMap = {};
    const rest: tf.NamedTensorMap = {};
    for (const [name, gradient] of Object.entries(grads)) (own.has(name) ? mine : rest)[name] = gradient;
    this.optimizer.applyGradients(mine);
    return rest;
  }

  /** After a step that applied: the decoupled weight decay at the scaled rate (the fused optimisers applied it already). */
  decay(learningRate: number): void {
    if (!appliesWeightDecay(this.optimizer)) applyWeightDecay(this.variables, learningRate * this.settings.learningRateScale, this.settings.weightDecay);
  }

  /** The parameters' values for a checkpoint's arrays (`loss/<index>`). */
  arrays(): Map<string, Float32Array> {
    return new Map(this.variables.map((v, i) => [arrayName(i), Float32Array.from(v.dataSync())]));
  }

  /**
   * Puts a checkpoint's parameters and optimiser state back (see the file comment): the values from
   * its arrays, or an older checkpoint's `legacyValues`; E_ARG naming the parameter when it holds
   * none of the right size.
   */
  async restore(
    checkpoint: { arrays?: ReadonlyMap<string, Float32Array> | undefined; lossOptimizer?: OptimizerStateFiles | undefined },
    legacyValues: number[][] | undefined,
    where: string,
  ): Promise<void> {
    this.variables.forEach((v, i) => {
      const values = checkpoint.arrays?.get(arrayName(i)) ?? legacyValues?.[i];
      if (values?.length !== v.size) throw new DmlError('E_ARG', `Cannot resume from ${where}: it holds no value for the loss parameter ${i} (${v.shape.join(' x ')})`);
      const restored = tf.tensor(values, v.shape, v.dtype);
      v.assign(restored);
      restored.dispose();
    });
    if (checkpoint.lossOptimizer !== undefined) await restoreOptimizerState(checkpoint.lossOptimizer, `Checkpoint ${where}`, this.optimizer);
  }
}
