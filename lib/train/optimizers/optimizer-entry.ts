/**
 * @file One optimiser kind of the training config (`optimizer.kind`), in one place: how TensorFlow.js
 * runs it (tfjs's optimiser, or the fused one on backends whose tensors live in JavaScript memory)
 * and how the graph trainer runs it (torch.optim's formulas as ONNX nodes, lib/engine/graph-trainer/
 * optimizer-graph.ts). Each kind is a file of this folder and a line in registry.ts; the config, the
 * TensorFlow.js path and the graph trainer take its name from there.
 */
import type * as tf from '@tensorflow/tfjs';
import type { DecayFilter } from '../../engine/tfjs/fused-optimizer.js';
import type { GraphOptimizerSettings } from '../../engine/graph-trainer/optimizer-graph.js';

/** The settings of the config's `optimizer` section an optimiser reads (the learning rate is given per step). */
export interface OptimizerSettings {
  readonly kind: string;
  /** SGD's momentum (the `momentum` kind). */
  readonly momentum: number;
  /** Decoupled weight decay (AdamW / SGDW), on the variables `decayed` names. */
  readonly weightDecay: number;
}

/** How the trainer wants a TensorFlow.js optimiser built. */
export interface OptimizerOptions {
  /** Use the fused optimiser (which then also applies the weight decay). */
  fused: boolean;
  /** The variables that get weight decay (by tfjs variable name). */
  decayed: DecayFilter;
}

/** One optimiser kind (see the file comment). */
export interface OptimizerEntry<Name extends string = string> {
  /** Its `optimizer.kind`. */
  readonly name: Name;
  /** TensorFlow.js's optimiser at learning rate `lr`; with `options.fused` the fused one, which applies the weight decay itself. */
  tfjs(settings: OptimizerSettings, lr: number, options: OptimizerOptions | undefined): tf.Optimizer;
  /** The graph trainer's optimiser: torch.optim's, with dmlkit's decoupled weight decay. */
  graph(settings: OptimizerSettings): GraphOptimizerSettings;
}

/** An optimiser kind, typed by its name (registry.ts lists them). */
export function defineOptimizer<const Name extends string>(entry: OptimizerEntry<Name>): OptimizerEntry<Name> {
  return entry;
}
