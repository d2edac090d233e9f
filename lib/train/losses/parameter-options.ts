/**
 * @file The options every loss with trainable parameters of its own takes (proxies, class weights,
 * the margin loss's β): how they train beside the network. They train with the run's optimiser kind
 * (`optimizer.kind`, its momentum) in an optimiser of their own, at `learningRateScale` x the run's
 * learning rate of each step (Proxy-Anchor's recipe trains its proxies at 100x), with decoupled weight
 * decay `weightDecay` (AdamW / SGDW: p ← p (1 − rate · weightDecay), rate = the scaled rate), as a
 * PyTorch parameter group of the loss's parameters would (lib/train/loss-optimizer.ts).
 */
import { z } from 'zod';

/** How a loss's own parameters train (see the file comment). */
export interface LossParameterTraining {
  /** Factor of the run's learning rate for the loss's parameters (1: the rate). */
  readonly learningRateScale: number;
  /** Decoupled weight decay of the loss's parameters (0: none). */
  readonly weightDecay: number;
}

/** The zod fields of {@link LossParameterTraining}, spread into the options schema of each loss with parameters. */
export const parameterTrainingFields = {
  /** Factor of the run's learning rate for the loss's parameters (default 1). */
  learningRateScale: z.number().positive().default(1),
  /** Decoupled weight decay of the loss's parameters (default 0). */
  weightDecay: z.number().min(0).default(0),
};

/** A seed of a loss's parameter initialisation (or of its draws): an integer in [0, 2^32), default 0. */
export const lossSeedField = z.int().min(0).max(0xffffffff).default(0);
