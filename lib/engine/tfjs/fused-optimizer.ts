/**
 * @file Fused optimiser steps: SGD, SGD with momentum and Adam, with decoupled weight decay, that
 * update each variable in one pass over typed arrays instead of a dozen tensor ops.
 *
 * tfjs's optimisers run each update as separate kernels (Adam: about 14 per variable), each
 * allocating a full-size array: on a 2048 x 512 kernel that is 10-26 ms per op in JavaScript. These
 * classes do the same arithmetic element by element, **in the same float32 operation order as tfjs**
 * (`Math.fround` after every operation tfjs performs as a separate kernel), so their results equal
 * tfjs's `AdamOptimizer` / `MomentumOptimizer` / `SGDOptimizer` followed by the trainer's
 * `w <- w * (1 - lr * weightDecay)` (optimizer.ts) bit for bit; the spec checks it.
 *
 * They report tfjs's class names and slot names (`Adam`, `<variable>/m`, `<variable>/v`;
 * `Momentum`, `<variable>/momentum`), so checkpoints move between them and tfjs's optimisers.
 *
 * They read and write tensors through `dataSync()`, which on backends whose tensors live in
 * JavaScript memory (`cpu`, `ort-cpu`) is the stored array itself; a variable's array is updated in
 * place when the variable is its only owner, otherwise a new tensor is assigned. The trainer uses them
 * on those backends only: elsewhere each `dataSync()` would copy device memory.
 */
import * as tf from '@tensorflow/tfjs';
import { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import { AdamKernel, type AdamScalars } from './wasm/adam-kernel.js';
import { float32Values } from './ort-cpu/float32-values.js';

const f32 = Math.fround;

/** x <- x * factor per element, rounded to float32 (the decoupled weight decay of SGD and momentum). */
function scaleInPlace(x: Float32Array, factor: number): void {
  for (let j = 0; j < x.length; j++) x[j] = f32((x[j] as number) * factor);
}

/** A tensor with the name it is saved under (tfjs's optimizer weight format). */
type NamedTensor = { name: string; tensor: tf.Tensor };

type VariableGradients = tf.NamedTensorMap | NamedTensor[];

/** Decides which variables get weight decay (the trainer decays kernels, not biases). */
export type DecayFilter = (variableName: string) => boolean;

/** Weight decay of the fused optimisers: w <- w * (1 - lr * rate) after the step, on matching variables. */
export interface FusedWeightDecay {
  rate: number;
  appliesTo: DecayFilter;
}

function gradientEntries(variableGradients: VariableGradients): Array<{ name: string; gradient: tf.Tensor | undefined }> {
  if (Array.isArray(variableGradients)) return variableGradients.map((g) => ({ name: g.name, gradient: g.tensor }));
  return Object.entries(variableGradients).map(([name, gradient]) => ({ name, gradient }));
}

function registeredVariable(name: string): tf.Variable {
  const variable = tf.engine().registeredVariables[name];
  if (!variable) throw new Error(`fused optimizer: no variable named ${name}`);
  return variable;
}

/**
 * The float32 array to write `variable`'s new value into: its own storage when nothing else shares it
 * (cpu-family backend, reference count 1), else a fresh array to assign afterwards.
 */
function writableValues(variable: tf.Variable): { values: Float32Array; inPlace: boolean } {
  const backend = tf.backend();
  if (backend instanceof MathBackendCPU && backend.refCount(variable.dataId) === 1) {
    const values = backend.data.get(variable.dataId).values;
    // A variable assigned a cast of integers may hold them in an integer array (float32-values.ts).
    if (values instanceof Float32Array) return { values, inPlace: true };
  }
  return { values: new Float32Array(variable.dataSync() as Float32Array), inPlace: false };
}

/**
 * The float32 values of `gradient` for reading during this update: the backend's own array on a
 * cpu-family backend (not a copy; read before the gradient is disposed), else `dataSync()`.
 */
function gradientValues(gradient: tf.Tensor): Float32Array {
  const backend = tf.backend();
  if (backend instanceof MathBackendCPU && gradient.dtype === 'float32') return float32Values(backend, gradient);
  return gradient.dataSync() as Float32Array;
}

function commit(variable: tf.Variable, values: Float32Array, inPlace: boolean): void {
  if (inPlace) return;
  const next = tf.tensor(values, variable.shape, 'float32');
  variable.assign(next);
  next.dispose();
}

/** Base: slot arrays per variable (in first-seen order), weight decay, tfjs-compatible weights I/O. */
abstract class FusedOptimizer extends tf.Optimizer {
  /** Brand for {@link isFusedOptimizer} (tfjs's `Optimizer[Symbol.hasInstance]` makes `instanceof` true for every optimizer). */
  readonly #fused = true;

  /** Whether `optimizer` is one of the fused optimisers (which apply weight decay themselves). */
  static isFused(optimizer: unknown): boolean {
    return typeof optimizer === 'object' && optimizer !== null && #fused in optimizer;
  }

  protected learningRate: number;
  protected readonly decay: FusedWeightDecay | undefined;
  /** Slot arrays by variable index; `slotSuffixes` names them. */
  protected slots: Array<{ variableName: string; arrays: Float32Array[] }> = [];

  protected constructor(learningRate: number, decay: FusedWeightDecay | undefined) {
    super();
    this.learningRate = learningRate;
    this.decay = decay !== undefined && decay.rate !== 0 ? decay : undefined;
  }

  /** Sets the learning rate of the following steps (a per-step schedule); the state is kept. */
  setLearningRate(learningRate: number): void {
    this.learningRate = learningRate;
  }

  /** Suffixes of the slot names, in tfjs's order (e.g. `m`, `v`). */
  protected abstract readonly slotSuffixes: readonly string[];

  /**
   * Updates `w` (in place) and the slots from gradient `g`, then applies the weight decay
   * `w <- w * decayFactor` (float32) when `decayFactor` is given.
   */
  protected abstract step(w: Float32Array, g: Float32Array, slots: Float32Array[], decayFactor: number | undefined): void;

  /** Called once per applyGradients, after all variables (e.g. Adam's beta powers). */
  protected afterStep(): void {}

  applyGradients(variableGradients: VariableGradients): void {
    const factor = this.decay ? f32(1 - this.learningRate * this.decay.rate) : 1;
    gradientEntries(variableGradients).forEach(({ name, gradient }, i) => {
      const variable = registeredVariable(name);
      const size = variable.size;
      let slot = this.slots[i];
      if (!slot) {
        slot = { variableName: name, arrays: this.slotSuffixes.map(() => new Float32Array(size)) };
        this.slots[i] = slot;
      }
      if (gradient == null) return;
      const g = gradientValues(gradient);
      const { values, inPlace } = writableValues(variable);
      this.step(values, g, slot.arrays, this.decay?.appliesTo(name) ? factor : undefined);
      commit(variable, values, inPlace);
    });
    this.afterStep();
    this.incrementIterations();
  }

  override async getWeights(): Promise<NamedTensor[]> {
    const named: NamedTensor[] = [await this.saveIterations()];
    this.slotSuffixes.forEach((suffix, k) => {
      for (const slot of this.slots) {
        const variable = registeredVariable(slot.variableName);
        named.push({ name: `${slot.variableName}/${suffix}`, tensor: tf.tensor(Float32Array.from(slot.arrays[k] as Float32Array), variable.shape, 'float32') });
      }
    });
    return named;
  }

  override async setWeights(weightValues: NamedTensor[]): Promise<void> {
    const rest = await this.extractIterations(weightValues);
    const count = rest.length / this.slotSuffixes.length;
    if (!Number.isInteger(count)) throw new Error(`${this.getClassName()} state: ${rest.length} slot tensors is not a multiple of ${this.slotSuffixes.length}`);
    const suffix0 = `/${this.slotSuffixes[0]}`;
    this.slots = rest.slice(0, count).map((entry, i) => ({
      variableName: entry.name.endsWith(suffix0) ? entry.name.slice(0, -suffix0.length) : entry.name,
      arrays: this.slotSuffixes.map((_, k) => Float32Array.from(rest[k * count + i]?.tensor.dataSync() as Float32Array)),
    }));
    this.restored();
  }

  /** Called after setWeights (e.g. Adam recomputes its beta powers from the iteration count). */
  protected restored(): void {}

  override dispose(): void {
    this.slots = [];
  }
}

/**
 * beta^(steps + 1) as an Adam optimiser holds it after `steps` steps: the float32 running product of
 * `steps` multiplications by beta (float32 beta). tfjs's Adam restores beta ** (steps + 1) by tf.pow
 * instead, which differs in the last bits, so a run resumed from saved optimizer state would move away
 * from the uninterrupted run (optimizer.ts, setOptimizerWeights, puts the running product back).
 */
export function runningPower(beta: number, steps: number): number {
  const b = f32(beta);
  let acc = b;
  for (let i = 0; i < steps; i++) acc = f32(acc * b);
  return acc;
}

/** Whether `optimizer` is a fused optimiser of this file (and so applies weight decay in its step). */
export function isFusedOptimizer(optimizer: tf.Optimizer): boolean {
  return FusedOptimizer.isFused(optimizer);
}

/** SGD: w <- w - lr * g (tfjs: add(mul(-lr, g), w)). */
export class FusedSgdOptimizer extends FusedOptimizer {
  static get className(): string {
    return 'SGD';
  }
  protected readonly slotSuffixes: readonly string[] = [];

  constructor(learningRate: number, decay?: FusedWeightDecay) {
    super(learningRate, decay);
  }

  protected step(w: Float32Array, g: Float32Array, _slots: Float32Array[], decayFactor: number | undefined): void {
    const c = f32(-this.learningRate);
    for (let j = 0; j < w.length; j++) w[j] = f32(f32(c * (g[j] as number)) + (w[j] as number));
    if (decayFactor !== undefined) scaleInPlace(w, decayFactor);
  }

  getConfig(): tf.serialization.ConfigDict {
    return { learningRate: this.learningRate };
  }
}

/** SGD with momentum: a <- momentum * a + g; w <- w - lr * a (tfjs's MomentumOptimizer, not Nesterov). */
export class FusedMomentumOptimizer extends FusedOptimizer {
  static get className(): string {
    return 'Momentum';
  }
  protected readonly slotSuffixes: readonly string[] = ['momentum'];
  #momentum: number;

  constructor(learningRate: number, momentum: number, decay?: FusedWeightDecay) {
    super(learningRate, decay);
    this.#momentum = f32(momentum);
  }

  protected step(w: Float32Array, g: Float32Array, [a]: Float32Array[], decayFactor: number | undefined): void {
    const c = f32(-this.learningRate);
    const m = this.#momentum;
    const acc = a as Float32Array;
    for (let j = 0; j < w.length; j++) {
      const next = f32(f32(m * (acc[j] as number)) + (g[j] as number));
      acc[j] = next;
      w[j] = f32(f32(c * next) + (w[j] as number));
    }
    if (decayFactor !== undefined) scaleInPlace(w, decayFactor);
  }

  /** Sets the momentum of the following steps (a schedule's, OneCycle's `cycle_momentum`); the state is kept. */
  setMomentum(momentum: number): void {
    this.#momentum = f32(momentum);
  }

  getConfig(): tf.serialization.ConfigDict {
    return { learningRate: this.learningRate, momentum: this.#momentum, useNesterov: false };
  }
}

/**
 * Adam (Kingma & Ba) exactly as tfjs computes it: m <- b1 m + (1 - b1) g; v <- b2 v + (1 - b2) g^2;
 * w <- w - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps), with eps = 1e-7 (tfjs's float32
 * backend epsilon) and b1^t, b2^t kept as float32 running products.
 */
export class FusedAdamOptimizer extends FusedOptimizer {
  static get className(): string {
    return 'Adam';
  }
  protected readonly slotSuffixes: readonly string[] = ['m', 'v'];
  #beta1: number;
  readonly #beta2: number;
  /** 1 - beta, computed in double from the given betas and then rounded, as tfjs does. */
  #oneMinusBeta1: number;
  readonly #oneMinusBeta2: number;
  readonly #epsilon: number;
  #accBeta1: number;
  #accBeta2: number;
  readonly #kernel = new AdamKernel();

  constructor(learningRate: number, decay?: FusedWeightDecay, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-7) {
    super(learningRate, decay);
    this.#beta1 = f32(beta1);
    this.#beta2 = f32(beta2);
    this.#oneMinusBeta1 = f32(1 - beta1);
    this.#oneMinusBeta2 = f32(1 - beta2);
    this.#epsilon = f32(epsilon);
    this.#accBeta1 = this.#beta1;
    this.#accBeta2 = this.#beta2;
  }

  protected step(w: Float32Array, g: Float32Array, [m, v]: Float32Array[], decayFactor: number | undefined): void {
    const scalars: AdamScalars = {
      beta1: this.#beta1,
      beta2: this.#beta2,
      oneMinusBeta1: this.#oneMinusBeta1,
      oneMinusBeta2: this.#oneMinusBeta2,
      bias1: f32(1 - this.#accBeta1),
      bias2: f32(1 - this.#accBeta2),
      epsilon: this.#epsilon,
      negLearningRate: f32(-this.learningRate),
    };
    this.#kernel.step(w, g, m as Float32Array, v as Float32Array, scalars, decayFactor);
  }

  protected override afterStep(): void {
    this.#accBeta1 = f32(this.#accBeta1 * this.#beta1);
    this.#accBeta2 = f32(this.#accBeta2 * this.#beta2);
  }

  protected override restored(): void {
    // The products afterStep would have reached, so that a resumed run continues with exactly the
    // bias corrections of an uninterrupted one (see runningPower).
    this.#accBeta1 = runningPower(this.#beta1, this.iterations);
    this.#accBeta2 = runningPower(this.#beta2, this.iterations);
  }

  /**
   * Sets β1 of the following step (a schedule's, OneCycle's `cycle_momentum`) and, as PyTorch does with
   * a β1 that changes, the bias correction `1 - β1^t` of that step t from it; the moments are kept.
   */
  setBeta1(beta1: number): void {
    this.#beta1 = f32(beta1);
    this.#oneMinusBeta1 = f32(1 - beta1);
    this.#accBeta1 = f32(beta1 ** (this.iterations + 1));
  }

  getConfig(): tf.serialization.ConfigDict {
    return { learningRate: this.learningRate, beta1: this.#beta1, beta2: this.#beta2, epsilon: this.#epsilon };
  }
}
