/**
 * @file Learning-rate schedules of the trainer, evaluated per optimiser step with PyTorch's formulas
 * (`optimizer.schedule`, `optimizer.warmup`, `optimizer.milestones`):
 *
 * - `milestones` (default): `lr * gamma^(number of milestones <= t)` (MultiStepLR), where t is the
 *   0-based epoch in an `epochs` run and the 0-based step in a `steps` run; with a warm-up it is
 *   multiplied by the warm-up factor (ChainedScheduler of LinearLR and MultiStepLR).
 * - `cosine`: `minLearningRate + (lr - minLearningRate) (1 + cos(pi t / T)) / 2` over the T steps of
 *   the run (CosineAnnealingLR, T_max = T); with a warm-up of w steps, the linear warm-up for t < w
 *   and then the cosine over the remaining T - w steps (SequentialLR of LinearLR and CosineAnnealingLR).
 * - `onecycle`: OneCycleLR (two phases) with `max_lr = lr` over T steps: from `lr / divFactor` up to
 *   `lr` until step `pctStart * T - 1`, then down to `lr / divFactor / finalDivFactor` at step T - 1,
 *   each phase annealed by cosine or linearly. With `cycleMomentum` (the default for `adam` and
 *   `momentum`, as OneCycleLR's `cycle_momentum=True`), the momentum runs the other way over the same
 *   phases: from `maxMomentum` (0.95) down to `baseMomentum` (0.85) and back up, and replaces Adam's
 *   β1 or SGD's momentum at every step ({@link scheduledMomentum}). PyTorch's OneCycleLR would also
 *   give a plain SGD (momentum 0) this momentum; dmlkit's `sgd` stays plain (use `momentum`).
 * - warm-up (LinearLR): the factor `startFactor + (1 - startFactor) min(t, w) / w`.
 *
 * `t` is the number of optimiser steps taken before the step the rate is for (a scheduler's
 * `last_epoch` after `t` calls of `scheduler.step()`). scripts/reference/torch_lr_schedules.py writes
 * PyTorch's own values, which the spec compares step by step.
 */
import { DmlError } from '../errors.js';

import { z } from 'zod';
import type { OptimizerKind } from './optimizers/registry.js';

/** The fields of the training config's `optimizer` section that the schedule reads. */
export interface ScheduledOptimizer {
  readonly kind: OptimizerKind;
  readonly learningRate: number;
  readonly milestones: readonly number[];
  readonly gamma: number;
  readonly schedule: z.infer<typeof scheduleSchema>;
  readonly warmup?: { readonly steps: number; readonly startFactor: number } | undefined;
}

type OptimizerConfig = ScheduledOptimizer;

/** Where a step lies in the run. */
export interface SchedulePosition {
  /** Optimiser steps taken before this one (0-based global step). */
  step: number;
  /** The 0-based epoch the step belongs to. */
  epoch: number;
  /** Steps of the whole run (needed by `cosine` and `onecycle`). */
  totalSteps: number;
  /** What `optimizer.milestones` count: epochs (an `epochs` run) or steps (a `steps` run). */
  milestoneUnit: 'epochs' | 'steps';
}

/** The linear warm-up factor after `t` steps of a warm-up of `steps` steps from `startFactor` (LinearLR). */
export function warmupFactor(t: number, steps: number, startFactor: number): number {
  if (steps === 0) return 1;
  return startFactor + ((1 - startFactor) * Math.min(t, steps)) / steps;
}

/** CosineAnnealingLR's closed form: `min + (base - min) (1 + cos(pi t / tMax)) / 2`. */
export function cosineAnnealing(base: number, min: number, t: number, tMax: number): number {
  if (tMax <= 0) return base;
  return min + ((base - min) * (1 + Math.cos((Math.PI * t) / tMax))) / 2;
}

/** OneCycleLR's annealing between `start` and `end` at fraction `pct` of a phase. */
function anneal(kind: 'cos' | 'linear', start: number, end: number, pct: number): number {
  return kind === 'cos' ? end + ((start - end) / 2) * (Math.cos(Math.PI * pct) + 1) : (end - start) * pct + start;
}

/** OneCycleLR's two phases (`three_phase=False`): the value at step `t` of `total` going from `start` to `peak` until step `pctStart * total - 1`, then to `end` at step `total - 1`. */
function oneCyclePhases(t: number, total: number, pctStart: number, kind: 'cos' | 'linear', start: number, peak: number, end: number): number {
  const phases = [
    { end: pctStart * total - 1, from: start, to: peak },
    { end: total - 1, from: peak, to: end },
  ];
  let phaseStart = 0;
  for (let i = 0; i < phases.length; i++) {
    const phase = phases[i] as (typeof phases)[number];
    if (t <= phase.end || i === phases.length - 1) return anneal(kind, phase.from, phase.to, (t - phaseStart) / (phase.end - phaseStart));
    phaseStart = phase.end;
  }
  throw new Error('unreachable');
}

/** OneCycleLR (two phases, `three_phase=False`) at step `t` of `total`, with `max_lr = maxLr`. */
export function oneCycle(maxLr: number, t: number, total: number, options: { pctStart: number; divFactor: number; finalDivFactor: number; anneal: 'cos' | 'linear' }): number {
  const initial = maxLr / options.divFactor;
  return oneCyclePhases(t, total, options.pctStart, options.anneal, initial, maxLr, initial / options.finalDivFactor);
}

/** OneCycleLR's momentum (`cycle_momentum=True`) at step `t` of `total`: from `maxMomentum` down to `baseMomentum` while the rate rises, back up while it falls. */
export function oneCycleMomentum(t: number, total: number, options: { pctStart: number; baseMomentum: number; maxMomentum: number; anneal: 'cos' | 'linear' }): number {
  return oneCyclePhases(t, total, options.pctStart, options.anneal, options.maxMomentum, options.baseMomentum, options.maxMomentum);
}

/** Whether `config`'s schedule cycles the momentum (OneCycle with `cycleMomentum`, by default for `adam` and `momentum`). */
function cyclesMomentum(config: OptimizerConfig): boolean {
  return config.schedule.kind === 'onecycle' && (config.schedule.cycleMomentum ?? config.kind !== 'sgd');
}

/**
 * The momentum of the step at `position` when the schedule sets it (Adam's β1, SGD's momentum;
 * see the file comment), else undefined: the optimiser's own.
 */
export function scheduledMomentum(config: OptimizerConfig, position: SchedulePosition): number | undefined {
  const schedule = config.schedule;
  if (schedule.kind !== 'onecycle' || !cyclesMomentum(config)) return undefined;
  return oneCycleMomentum(position.step, position.totalSteps, schedule);
}

/** The learning rate of the step at `position` under `config`'s schedule (see the file comment). */
export function scheduledLearningRate(config: OptimizerConfig, position: SchedulePosition): number {
  const base = config.learningRate;
  const { step: t, totalSteps } = position;
  const warmup = config.warmup;
  const schedule = config.schedule;
  switch (schedule.kind) {
    case 'milestones': {
      const counter = position.milestoneUnit === 'epochs' ? position.epoch : t;
      const passed = config.milestones.filter((m) => m <= counter).length;
      const factor = warmup ? warmupFactor(t, warmup.steps, warmup.startFactor) : 1;
      return base * factor * config.gamma ** passed;
    }
    case 'cosine': {
      const w = warmup?.steps ?? 0;
      if (warmup && t < w) return base * warmupFactor(t, w, warmup.startFactor);
      return cosineAnnealing(base, schedule.minLearningRate, t - w, totalSteps - w);
    }
    case 'onecycle':
      return oneCycle(base, t, totalSteps, schedule);
  }
}

/**
 * Checks `config`'s schedule against the run's `totalSteps` (0 when no schedule needs it); throws
 * E_ARG naming the field. OneCycle needs a rising phase that ends after step 0 (pctStart x steps > 1,
 * PyTorch divides by zero otherwise); a warm-up must end before the run does (before a cosine, it
 * must leave steps for the cosine).
 */
export function checkSchedule(config: OptimizerConfig, totalSteps: number): void {
  const schedule = config.schedule;
  if (schedule.kind === 'onecycle' && !(schedule.pctStart * totalSteps > 1)) {
    throw new DmlError('E_ARG', `optimizer.schedule.pctStart: pctStart x the run's steps must be above 1 (the rising phase ends at step pctStart x steps - 1), got ${schedule.pctStart} x ${totalSteps} steps`);
  }
  if (config.warmup && config.warmup.steps >= totalSteps) {
    throw new DmlError('E_ARG', `optimizer.warmup.steps: must be below the run's ${totalSteps} steps (a longer warm-up never reaches the learning rate), got ${config.warmup.steps}`);
  }
}

/** Whether the schedule needs the run's total number of steps. */
export function needsTotalSteps(config: OptimizerConfig): boolean {
  return config.schedule.kind !== 'milestones';
}

/** Learning-rate schedule (lib/train/lr-schedule.ts has the formulas, PyTorch's). */
export const scheduleSchema = z.discriminatedUnion('kind', [
  /** Multiply by `optimizer.gamma` at each of `optimizer.milestones` (MultiStepLR). */
  z.object({ kind: z.literal('milestones') }).strict(),
  /** Cosine annealing from the learning rate to `minLearningRate` over the run's steps (CosineAnnealingLR). */
  z.object({ kind: z.literal('cosine'), minLearningRate: z.number().min(0).default(0) }).strict(),
  /** OneCycleLR (two phases) with max_lr = `optimizer.learningRate`, over the run's steps. */
  z
    .object({
      kind: z.literal('onecycle'),
      /** Fraction of the steps spent rising from learningRate / divFactor to learningRate. */
      pctStart: z.number().gt(0).lt(1).default(0.3),
      /** The initial learning rate is learningRate / divFactor. */
      divFactor: z.number().positive().default(25),
      /** The final learning rate is the initial one / finalDivFactor. */
      finalDivFactor: z.number().positive().default(1e4),
      /** Annealing within each phase: cosine (PyTorch's default) or linear. */
      anneal: z.enum(['cos', 'linear']).default('cos'),
      /**
       * Cycle the momentum (Adam's β1, SGD's momentum) the other way, as OneCycleLR's `cycle_momentum`;
       * default true for `adam` and `momentum`; `sgd` has no momentum to cycle.
       */
      cycleMomentum: z.boolean().optional(),
      /** The momentum at the top of the learning rate (OneCycleLR's `base_momentum`). */
      baseMomentum: z.number().min(0).lt(1).default(0.85),
      /** The momentum at the start and the end (OneCycleLR's `max_momentum`). */
      maxMomentum: z.number().min(0).lt(1).default(0.95),
    })
    .strict(),
]);
