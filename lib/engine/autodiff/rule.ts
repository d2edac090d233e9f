/**
 * @file The contract of a gradient rule: how one ONNX operator runs in a training step (its forward,
 * usually the node itself) and how gradients flow back through it, written as more ONNX nodes.
 *
 * A rule sees the forward node and the step graph under construction ({@link StepEmitter}); forward
 * values keep their names in the step graph, so a backward rule refers to the node's inputs and
 * outputs by name and asks the emitter for their static dimensions. Rules follow PyTorch's autograd
 * formulas (which element of a tied maximum gets the gradient, which side of a clip boundary passes
 * it), so that a step matches PyTorch's.
 */
import type { IrNode } from '../graph/onnx-ir.js';
import type { StepEmitter } from './emitter.js';

/** A running value a training-mode forward updates (BatchNormalization's statistics). */
export interface StateUpdate {
  /** The forward graph's initializer holding the value before the step. */
  readonly state: string;
  /** The step graph's value holding it after the step. */
  readonly next: string;
}

/** What a rule's training-mode forward leaves for its backward. */
export interface ForwardRecord {
  /** Step-graph values the backward needs beyond the node's inputs and outputs. */
  readonly saved: Readonly<Record<string, string>>;
  /** Running values the step updates. */
  readonly stateUpdates: readonly StateUpdate[];
}

/** One operator's training behaviour. */
export interface GradientRule {
  /** The input slots of `node` gradients flow through (others are sizes, indices, running statistics). */
  differentiableInputs(node: IrNode): readonly number[];
  /**
   * Emits the node's training-mode forward under its own output names. Absent: the node is copied
   * unchanged (operators that behave the same in training and inference).
   */
  forward?(emit: StepEmitter, node: IrNode): ForwardRecord;
  /**
   * Emits the gradients of the node's inputs. `outputGradients[i]` is the gradient of output i
   * (undefined: no gradient reaches it); `needed[j]` says whether input j's gradient is wanted.
   * Returns one entry per input (undefined where not needed).
   */
  backward(emit: StepEmitter, node: IrNode, outputGradients: readonly (string | undefined)[], needed: readonly boolean[], record: ForwardRecord): (string | undefined)[];
}

/** The record of a node whose forward is the node itself. */
export const PLAIN_FORWARD: ForwardRecord = { saved: {}, stateUpdates: [] };
