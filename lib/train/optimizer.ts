/**
 * @file Optimisers for the trainer: SGD, SGD with momentum and Adam, setting the learning rate a
 * schedule gives (lr-schedule.ts) and decoupled weight decay.
 *
 * tfjs optimisers have no weight decay (docs/stack.md section 3), so it is applied after each step as
 * w <- w * (1 - lr * weightDecay) on kernels only (SGDW / AdamW style, Loshchilov & Hutter).
 *
 * Two implementations give the same numbers: tfjs's optimisers followed by {@link applyWeightDecay},
 * and the fused optimisers of fused-optimizer.ts, which do the step and the decay in one pass over
 * each variable's array. The fused ones are used on backends whose tensors live in JavaScript memory
 * ({@link FUSED_OPTIMIZER_BACKENDS}), where they save a dozen full-size kernels per variable.
 */
import * as tf from '@tensorflow/tfjs';
import { isFusedOptimizer, runningPower } from '../engine/tfjs/fused-optimizer.js';
import type { OptimizerOptions } from './optimizers/optimizer-entry.js';
import { OPTIMIZER_KINDS, optimizerEntry } from './optimizers/registry.js';
import { ORT_CPU_BACKEND_NAME } from '../engine/tfjs/ort-cpu/ort-cpu-backend.js';
import { z } from 'zod';
import { positiveIntegerField } from '../util/zod-fields.js';
import { scheduleSchema } from './lr-schedule.js';

/**
 * tfjs backends on which the trainer uses the fused optimisers. `cpu` keeps tfjs's own optimisers,
 * so the ort-cpu parity spec compares the fused step against tfjs's.
 */
export const FUSED_OPTIMIZER_BACKENDS: ReadonlySet<string> = new Set([ORT_CPU_BACKEND_NAME]);

/** The fields of `optimizer` that choose the optimiser (the learning rate is given separately). */
type OptimizerKindConfig = Pick<OptimizerConfig, 'kind' | 'momentum' | 'weightDecay'>;

/**
 * A fresh optimiser of the configured kind at learning rate `lr` (its entry in lib/train/optimizers/);
 * with `options.fused`, the fused implementation, which applies the weight decay itself
 * ({@link appliesWeightDecay}).
 */
export function createOptimizer(config: OptimizerKindConfig, lr: number, options?: OptimizerOptions): tf.Optimizer {
  return optimizerEntry(config.kind).tfjs(config, lr, options);
}

/**
 * An optimiser like `optimizer` at learning rate `lr`. tfjs keeps the rate private (only SGD has a
 * setter), so a new optimiser of the same kind is made and the old one's state (moments, step count)
 * copied into it; the old one is disposed.
 */
export async function withLearningRate(optimizer: tf.Optimizer, config: OptimizerKindConfig, lr: number, options?: OptimizerOptions): Promise<tf.Optimizer> {
  const next = createOptimizer(config, lr, options);
  const weights = await optimizer.getWeights();
  if (weights.length > 0) await setOptimizerWeights(next, weights);
  optimizer.dispose();
  return next;
}

/** tfjs's Adam's bias-correction products (TypeScript-private fields of tf.AdamOptimizer). */
interface AdamProducts {
  readonly beta1: number;
  readonly beta2: number;
  readonly accBeta1: tf.Variable;
  readonly accBeta2: tf.Variable;
}

/**
 * `optimizer.setWeights(weights)`, after which tfjs's own Adam holds the bias-correction products an
 * uninterrupted run would hold (the float32 running products of fused-optimizer.ts's runningPower, not
 * tf.pow's), so that a run resumed from a checkpoint or moved to a new learning rate continues bit for bit.
 */
export async function setOptimizerWeights(optimizer: tf.Optimizer, weights: Array<{ name: string; tensor: tf.Tensor }>): Promise<void> {
  await optimizer.setWeights(weights);
  // tfjs's optimisers answer instanceof by duck typing: tell them apart by class name.
  if (optimizer.getClassName() !== 'Adam' || isFusedOptimizer(optimizer)) return;
  const adam = optimizer as unknown as AdamProducts;
  const steps = (optimizer as unknown as { iterations: number }).iterations;
  adam.accBeta1.assign(tf.scalar(runningPower(adam.beta1, steps)));
  adam.accBeta2.assign(tf.scalar(runningPower(adam.beta2, steps)));
}

/**
 * Sets the learning rate of `optimizer`'s following steps in place, keeping its state (a per-step
 * schedule would otherwise copy every moment each step through {@link withLearningRate}). The fused
 * optimisers have a setter; tfjs's SGD and Momentum have `setLearningRate`, which rebuilds the
 * scalar they multiply by; tfjs's Adam reads its `learningRate` field in every step.
 */
export function setLearningRate(optimizer: tf.Optimizer, lr: number): void {
  const target = optimizer as tf.Optimizer & { setLearningRate?: (lr: number) => void; learningRate?: number };
  if (typeof target.setLearningRate === 'function') target.setLearningRate(lr);
  else if (optimizer.getClassName() === 'Adam') target.learningRate = lr;
  else throw new Error(`cannot set the learning rate of a ${optimizer.getClassName()} optimizer`);
}

/** tfjs's Adam's and Momentum's fields a momentum schedule sets (TypeScript-private fields of tf.AdamOptimizer and tf.MomentumOptimizer). */
interface MomentumFields {
  beta1: number;
  readonly accBeta1: tf.Variable;
  momentum: number;
  m: tf.Scalar;
  readonly iterations: number;
}

/**
 * Sets the momentum of `optimizer`'s next step in place (a schedule's, OneCycle's `cycle_momentum`),
 * keeping its state: Adam's β1, with the bias correction `1 - β1^t` of that step t computed from it
 * (as PyTorch does), or SGD's momentum. tfjs's own `setMomentum` leaves the scalar its step multiplies
 * by unchanged, so the fields are set here.
 */
export function setMomentum(optimizer: tf.Optimizer, momentum: number): void {
  const fused = optimizer as tf.Optimizer & { setBeta1?: (beta1: number) => void; setMomentum?: (momentum: number) => void };
  const fields = optimizer as unknown as MomentumFields;
  if (isFusedOptimizer(optimizer) && fused.setBeta1) fused.setBeta1(momentum);
  else if (isFusedOptimizer(optimizer) && fused.setMomentum) fused.setMomentum(momentum);
  else if (!isFusedOptimizer(optimizer) && optimizer.getClassName() === 'Adam') {
    fields.beta1 = momentum;
    fields.accBeta1.assign(tf.scalar(Math.fround(momentum ** (fields.iterations + 1))));
  } else if (!isFusedOptimizer(optimizer) && optimizer.getClassName() === 'Momentum') {
    fields.momentum = momentum;
    fields.m.dispose();
    fields.m = tf.keep(tf.scalar(momentum));
  } else throw new Error(`cannot set the momentum of a ${optimizer.getClassName()} optimizer`);
}

/**
 * The variables of `model` that get weight decay: its kernels (`kernel`, `depthwise_kernel`, ...),
 * not biases or normalisation parameters. Matched on the layer weight's original name: tfjs suffixes
 * the names of later models' weights (`dense/kernel_1`) when a process builds more than one model.
 */
export function decayedVariables(model: tf.LayersModel): tf.Variable[] {
  return model.trainableWeights.filter((w) => (w as unknown as { originalName: string }).originalName.endsWith('kernel')).map((w) => w.read() as tf.Variable);
}

/** Whether `optimizer` applies the weight decay in its own step (the fused optimisers do). */
export function appliesWeightDecay(optimizer: tf.Optimizer): boolean {
  return isFusedOptimizer(optimizer);
}

/** Multiplies every kernel in `kernels` by (1 - lr * decay). */
export function applyWeightDecay(kernels: readonly tf.Variable[], lr: number, decay: number): void {
  if (decay === 0) return;
  const factor = 1 - lr * decay;
  tf.tidy(() => {
    for (const v of kernels) v.assign(tf.mul(v, factor));
  });
}

/** Optimiser with decoupled weight decay and a learning-rate schedule. */
export const optimizerSchema = z
  .object({
    /** The optimiser (lib/train/optimizers/: sgd, momentum, adam). */
    kind: z.enum(OPTIMIZER_KINDS).default('adam'),
    learningRate: z.number().positive(),
    /** Momentum of `momentum` (SGD with momentum). */
    momentum: z.number().min(0).max(1).default(0.9),
    /**
     * Decoupled weight decay (AdamW / SGDW style): after each step every kernel (not biases, not
     * normalisation parameters) is multiplied by (1 - lr * weightDecay).
     */
    weightDecay: z.number().min(0).default(0),
    /**
     * With the `milestones` schedule: the epochs (an `epochs` run) or steps (a `steps` run), counted
     * from the start, after which the learning rate is multiplied by gamma.
     */
    milestones: z.array(positiveIntegerField).default([]),
    gamma: z.number().positive().default(0.1),
    /** The schedule of the learning rate over the run; default `milestones`. */
    schedule: scheduleSchema.default({ kind: 'milestones' }),
    /**
     * Linear warm-up over the first `steps` optimiser steps from `startFactor` x the rate (LinearLR),
     * with the `milestones` and `cosine` schedules (`onecycle` has its own, `schedule.pctStart`).
     */
    warmup: z
      .object({
        steps: positiveIntegerField,
        startFactor: z.number().gt(0).max(1).default(1 / 3),
      })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((o, context) => {
    if (o.schedule.kind !== 'milestones' && o.milestones.length > 0) {
      context.addIssue({ code: 'custom', path: ['milestones'], message: `milestones apply to the milestones schedule only, got [${o.milestones.join(', ')}] with schedule ${o.schedule.kind}` });
    }
    if (o.schedule.kind === 'onecycle' && o.schedule.cycleMomentum === true && o.kind === 'sgd') {
      context.addIssue({
        code: 'custom',
        path: ['schedule', 'cycleMomentum'],
        message: "kind sgd has no momentum to cycle; use kind momentum (PyTorch's OneCycleLR gives SGD with momentum 0 a momentum of 0.85-0.95), or remove cycleMomentum (got true)",
      });
    }
    if (o.schedule.kind === 'onecycle' && o.warmup !== undefined) {
      context.addIssue({ code: 'custom', path: ['warmup'], message: `onecycle warms up by itself (schedule.pctStart); remove optimizer.warmup (got ${JSON.stringify(o.warmup)})` });
    }
  });

/** The training config's `optimizer` section, resolved. */
export type OptimizerConfig = z.infer<typeof optimizerSchema>;

export type { OptimizerOptions } from './optimizers/optimizer-entry.js';
