/**
 * @file One loss in the registry (registry.ts): its name as written in a config, the strict schema of
 * its options (their defaults filled in on parse; the loss file documents each), how to build it, and
 * its form as ONNX nodes for the graph trainer's fused step where it has one.
 * Each loss file defines its entries next to its class; adding a loss is that file plus one line in
 * the registry's list.
 */
import { z } from 'zod';
import type { GraphLoss } from '../../engine/graph-trainer/graph-trainer.js';
import type { MetricLoss } from './metric-loss.js';

/** What the run knows when it builds its loss, for options a loss may leave to it. */
export interface LossContext {
  /** The model's embedding dimension, when its spec gives it (the default of a loss's `embeddingSize`). */
  readonly embeddingDim?: number | undefined;
}

/** A registered loss: `name`, its options' schema, its spec's schema and its constructor. */
export interface LossEntry {
  /** The name a config or `createLoss` spec gives (`ephn`, `triplet-margin`, ...). */
  readonly name: string;
  /** The loss's options (without `name`): a strict object with every default. */
  readonly options: z.ZodObject;
  /** The spec as a config writes it: the options plus `name`. */
  readonly spec: z.ZodObject;
  /** Builds the loss from options as written in a config; the loss parses and checks them. */
  create(options: Record<string, unknown>, context?: LossContext): MetricLoss;
  /**
   * The loss written as ONNX nodes for the graph trainer's fused step (lib/train/graph-loss.ts), from
   * its parsed options (the loss's `config`); absent: it keeps the two-run step.
   */
  readonly graph?: ((config: Readonly<Record<string, unknown>>) => GraphLoss) | undefined;
}

/**
 * A registry entry (see {@link LossEntry}), typed by its name and options so that the registry's
 * `lossSpecSchema` and `LossSpec` know each loss's options.
 */
export function defineLoss<const Name extends string, Shape extends z.core.$ZodShape>(
  name: Name,
  options: z.ZodObject<Shape, z.core.$strict>,
  create: (options: z.input<z.ZodObject<Shape, z.core.$strict>>, context?: LossContext) => MetricLoss,
  graph?: (config: Readonly<Record<string, unknown>>) => GraphLoss,
) {
  return { name, options, spec: options.extend({ name: z.literal(name) }), create, graph } as const;
}
