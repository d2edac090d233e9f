/**
 * @file Optimiser updates as ONNX nodes, with PyTorch's formulas (torch.optim, single-tensor form):
 *
 * - `adam` (Adam, L2 weight decay added to the gradient) and `adamw` (AdamW, decoupled decay):
 *
 *       adamw: p ← p (1 - lr λ);   adam: g ← g + λ p
 *       m ← β1 m + (1 - β1) g,   v ← β2 v + (1 - β2) g²
 *       p ← p - (lr / (1 - β1^t)) m / (sqrt(v) / sqrt(1 - β2^t) + ε)
 *
 * - `sgd` (with `momentum` μ, `dampening` τ, `nesterov`, weight decay λ: L2 as PyTorch's SGD, or
 *   decoupled with `decoupledWeightDecay`, p ← p (1 - lr λ) first, SGDW):
 *
 *       g ← g + λ p;   b ← g at the first step, else μ b + (1 - τ) g
 *       d ← g + μ b (nesterov) or b;   p ← p - lr d
 *
 * The per-step scalars (the learning rate, β1 and `1 - β1`, `lr / (1 - β1^t)`, `sqrt(1 - β2^t)`,
 * `1 - lr λ`, the momentum factors) are computed in double precision in JavaScript, as PyTorch computes
 * them in Python, and fed to the step graph as float32 inputs. So a schedule may set the momentum (β1,
 * μ) of every step, as OneCycleLR's `cycle_momentum` does: PyTorch then uses that step's β1 in
 * `1 - β1^t` too. Weight decay applies to the parameters the caller marks
 * `decayed` (by dmlkit's convention convolution and linear weights, not biases or normalisation
 * parameters).
 */
import { invalidParameterError } from '../../errors.js';
import type { StepEmitter } from '../autodiff/emitter.js';

/** A graph optimiser's settings. */
export interface GraphOptimizerSettings {
  readonly kind: 'adam' | 'adamw' | 'sgd';
  /** Adam's β1 and β2 (default 0.9, 0.999). */
  readonly betas?: readonly [number, number];
  /** Adam's ε (default 1e-8). */
  readonly epsilon?: number;
  /** SGD's momentum μ (default 0: plain SGD). */
  readonly momentum?: number;
  /** SGD's dampening τ (default 0). */
  readonly dampening?: number;
  /** SGD with Nesterov momentum (default false). */
  readonly nesterov?: boolean;
  /** λ (default 0): decoupled for `adamw`, added to the gradient for `adam` and `sgd`. */
  readonly weightDecay?: number;
  /** `sgd` only: decay the weights before the step (SGDW) instead of adding λ p to the gradient. */
  readonly decoupledWeightDecay?: boolean;
}

/** The step-graph values of one parameter's update. */
export interface ParameterUpdate {
  /** The parameter after the step. */
  readonly param: string;
  /** Each state slot after the step. */
  readonly slots: Readonly<Record<string, string>>;
}

/** An optimiser the step graph can run. */
export interface GraphOptimizer {
  readonly settings: Required<GraphOptimizerSettings>;
  /** Per-parameter state slots, e.g. `exp_avg`, `exp_avg_sq` (each starts at zeros). */
  readonly slots: readonly string[];
  /** Per-step scalar inputs of the step graph. */
  readonly hyperParameters: readonly string[];
  /**
   * The values of {@link hyperParameters} for 1-based step `t` at learning rate `lr`, with `momentum`
   * (Adam's β1, SGD's μ) when a schedule sets it for this step, else the settings'.
   */
  hyperValues(t: number, lr: number, momentum?: number): Record<string, number>;
  /**
   * The per-step scalars of a parameter group whose learning rate is `scale` times the step's (a
   * PyTorch param group with its own lr): the scalars proportional to the rate scaled, decay factors
   * `1 - scale·lr·λ`; emitted once per group.
   */
  scaledHyper(emit: StepEmitter, hyper: Readonly<Record<string, string>>, scale: number): Record<string, string>;
  /** Emits the update of `param` with gradient `gradient`; `hyper` maps hyperparameters to graph inputs. */
  emitUpdate(emit: StepEmitter, param: string, gradient: string, slots: Readonly<Record<string, string>>, hyper: Readonly<Record<string, string>>, decayed: boolean): ParameterUpdate;
}

/** `1 - scale·lr·λ` from the step's decay factor `1 - lr·λ`: `scale·factor + (1 - scale)`. */
function scaledDecayFactor(emit: StepEmitter, factor: string, scale: number): string {
  return emit.op('Add', [emit.op('Mul', [factor, emit.scalar(scale)], `${factor}/x${scale}`), emit.scalar(1 - scale)], `${factor}/scaled${scale}`);
}

function check(name: string, value: number, ok: boolean, expected: string): number {
  if (!ok) throw invalidParameterError(`optimizer.${name}`, expected, value);
  return value;
}

/** The graph optimiser for `settings` (defaults filled in, values checked). */
export function createGraphOptimizer(settings: GraphOptimizerSettings): GraphOptimizer {
  const [beta1, beta2] = settings.betas ?? [0.9, 0.999];
  const full: Required<GraphOptimizerSettings> = {
    kind: settings.kind,
    betas: [check('betas[0]', beta1, beta1 >= 0 && beta1 < 1, 'a number in [0, 1)'), check('betas[1]', beta2, beta2 >= 0 && beta2 < 1, 'a number in [0, 1)')],
    epsilon: check('epsilon', settings.epsilon ?? 1e-8, (settings.epsilon ?? 1e-8) > 0, 'a positive number'),
    momentum: check('momentum', settings.momentum ?? 0, (settings.momentum ?? 0) >= 0, 'a non-negative number'),
    dampening: check('dampening', settings.dampening ?? 0, (settings.dampening ?? 0) >= 0 && (settings.dampening ?? 0) <= 1, 'a number in [0, 1]'),
    nesterov: settings.nesterov ?? false,
    weightDecay: check('weightDecay', settings.weightDecay ?? 0, (settings.weightDecay ?? 0) >= 0, 'a non-negative number'),
    decoupledWeightDecay: settings.decoupledWeightDecay ?? false,
  };
  if (full.nesterov && (full.momentum === 0 || full.dampening !== 0)) throw invalidParameterError('optimizer.nesterov', 'momentum > 0 and dampening 0 (as PyTorch requires)', full.nesterov);
  if (full.kind === 'sgd') return sgd(full);
  if (full.kind === 'adam' || full.kind === 'adamw') return adam(full);
  throw invalidParameterError('optimizer.kind', "'adam', 'adamw' or 'sgd'", full.kind);
}

function adam(settings: Required<GraphOptimizerSettings>): GraphOptimizer {
  const [beta1, beta2] = settings.betas;
  const decoupled = settings.kind === 'adamw';
  return {
    settings,
    slots: ['exp_avg', 'exp_avg_sq'],
    hyperParameters: ['beta1', 'one_minus_beta1', 'step_size', 'bias_correction2_sqrt', 'decay_factor'],
    hyperValues: (t, lr, momentum = beta1) => ({
      beta1: momentum,
      one_minus_beta1: 1 - momentum,
      step_size: lr / (1 - momentum ** t),
      bias_correction2_sqrt: Math.sqrt(1 - beta2 ** t),
      decay_factor: 1 - lr * settings.weightDecay,
    }),
    scaledHyper: (emit, hyper, scale) => ({
      ...hyper,
      step_size: emit.op('Mul', [hyper.step_size as string, emit.scalar(scale)], `${hyper.step_size}/x${scale}`),
      decay_factor: scaledDecayFactor(emit, hyper.decay_factor as string, scale),
    }),
    emitUpdate: (emit, param, gradient, slots, hyper, decayed) => {
      const base = `${param}/adam`;
      const decay = decayed && settings.weightDecay > 0;
      let p = param;
      let g = gradient;
      if (decay && decoupled) p = emit.op('Mul', [param, hyper.decay_factor as string], `${base}/decayed`);
      if (decay && !decoupled) g = emit.op('Add', [gradient, emit.op('Mul', [param, emit.scalar(settings.weightDecay)], `${base}/l2`)], `${base}/g_l2`);
      const m = emit.op('Add', [emit.op('Mul', [slots.exp_avg as string, hyper.beta1 as string], `${base}/m_kept`), emit.op('Mul', [g, hyper.one_minus_beta1 as string], `${base}/m_added`)], `${base}/exp_avg`);
      const v = emit.op('Add', [emit.op('Mul', [slots.exp_avg_sq as string, emit.scalar(beta2)], `${base}/v_kept`), emit.op('Mul', [emit.op('Mul', [g, g], `${base}/g2`), emit.scalar(1 - beta2)], `${base}/v_added`)], `${base}/exp_avg_sq`);
      const denominator = emit.op('Add', [emit.op('Div', [emit.op('Sqrt', [v], `${base}/v_sqrt`), hyper.bias_correction2_sqrt as string], `${base}/v_corrected`), emit.scalar(settings.epsilon)], `${base}/denominator`);
      const step = emit.op('Div', [emit.op('Mul', [m, hyper.step_size as string], `${base}/m_scaled`), denominator], `${base}/step`);
      return { param: emit.op('Sub', [p, step], `${base}/param`), slots: { exp_avg: m, exp_avg_sq: v } };
    },
  };
}

function sgd(settings: Required<GraphOptimizerSettings>): GraphOptimizer {
  const { momentum, dampening, nesterov, weightDecay } = settings;
  return {
    settings,
    slots: momentum > 0 ? ['momentum_buffer'] : [],
    hyperParameters: momentum > 0 ? ['lr', 'decay_factor', 'momentum', 'buffer_keep', 'buffer_add'] : ['lr', 'decay_factor'],
    // The first step copies the gradient into the buffer (keep 0, add 1), as PyTorch does.
    hyperValues: (t, lr, stepMomentum = momentum) => ({
      lr,
      decay_factor: 1 - lr * weightDecay,
      ...(momentum > 0 ? { momentum: stepMomentum, buffer_keep: t === 1 ? 0 : stepMomentum, buffer_add: t === 1 ? 1 : 1 - dampening } : {}),
    }),
    scaledHyper: (emit, hyper, scale) => ({
      ...hyper,
      lr: emit.op('Mul', [hyper.lr as string, emit.scalar(scale)], `${hyper.lr}/x${scale}`),
      decay_factor: scaledDecayFactor(emit, hyper.decay_factor as string, scale),
    }),
    emitUpdate: (emit, param, gradient, slots, hyper, decayed) => {
      const base = `${param}/sgd`;
      let g = gradient;
      let p = param;
      if (decayed && weightDecay > 0 && settings.decoupledWeightDecay) p = emit.op('Mul', [param, hyper.decay_factor as string], `${base}/decayed`);
      else if (decayed && weightDecay > 0) g = emit.op('Add', [gradient, emit.op('Mul', [param, emit.scalar(weightDecay)], `${base}/l2`)], `${base}/g_l2`);
      let direction = g;
      const nextSlots: Record<string, string> = {};
      if (momentum > 0) {
        const buffer = emit.op('Add', [emit.op('Mul', [slots.momentum_buffer as string, hyper.buffer_keep as string], `${base}/kept`), emit.op('Mul', [g, hyper.buffer_add as string], `${base}/added`)], `${base}/buffer`);
        nextSlots.momentum_buffer = buffer;
        direction = nesterov ? emit.op('Add', [g, emit.op('Mul', [buffer, hyper.momentum as string], `${base}/lookahead`)], `${base}/nesterov`) : buffer;
      }
      return { param: emit.op('Sub', [p, emit.op('Mul', [direction, hyper.lr as string], `${base}/step`)], `${base}/param`), slots: nextSlots };
    },
  };
}
