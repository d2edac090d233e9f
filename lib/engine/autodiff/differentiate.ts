/**
 * @file Reverse-mode differentiation of a shaped forward graph into ONNX nodes.
 *
 * {@link emitTrainingForward} writes the forward in training mode (each node through its rule's
 * forward, or copied), {@link emitBackward} then walks the nodes in reverse from a seed gradient of
 * one output, asking each node's rule for its inputs' gradients and summing the contributions of
 * values used more than once. Only values that depend on a trained weight get gradients: the image
 * input's gradient is never computed. Every operator on such a path must have a rule
 * (lib/engine/autodiff/rules/registry.ts); {@link checkDifferentiable} says which one lacks it before
 * anything is built.
 */
import { DmlError } from '../../errors.js';
import { describeNode, type IrNode } from '../graph/onnx-ir.js';
import type { ShapedGraph } from '../graph/shapes.js';
import type { StepEmitter } from './emitter.js';
import { PLAIN_FORWARD, type ForwardRecord, type StateUpdate } from './rule.js';
import { differentiableOperators, gradientRule, operatorEntry } from './rules/registry.js';

/** Outputs of a node that can carry a gradient (its entry's `gradientOutputs` first ones; all by default). */
function differentiableOutputs(node: IrNode): readonly string[] {
  return node.outputs.slice(0, operatorEntry(node.opType)?.gradientOutputs ?? node.outputs.length);
}

/**
 * The values that depend on a trained weight (`trained`), in a forward pass over `graph`'s nodes.
 * Throws E_MODEL naming the first node on such a path whose operator has no gradient rule.
 */
export function checkDifferentiable(graph: ShapedGraph, trained: ReadonlySet<string>): Set<string> {
  const requiresGrad = new Set(trained);
  for (const node of graph.nodes) {
    const rule = gradientRule(node.opType);
    const reached = node.inputs.some((name, i) => name !== '' && requiresGrad.has(name) && (rule ? rule.differentiableInputs(node).includes(i) : true));
    if (!reached) continue;
    if (!rule) {
      if (operatorEntry(node.opType)?.gradient === 'none') continue;
      throw new DmlError('E_MODEL', `${describeNode(node)}: the graph trainer has no gradient rule for ${node.opType} (it differentiates ${differentiableOperators().join(', ')})`);
    }
    for (const output of differentiableOutputs(node)) if (output) requiresGrad.add(output);
  }
  return requiresGrad;
}

/** What the training forward wrote: each node's record and the running values it updates. */
export interface TrainingForward {
  readonly records: ReadonlyMap<IrNode, ForwardRecord>;
  readonly stateUpdates: readonly StateUpdate[];
}

/** Writes `graph`'s nodes in training mode into `emit`. */
export function emitTrainingForward(emit: StepEmitter, graph: ShapedGraph): TrainingForward {
  const records = new Map<IrNode, ForwardRecord>();
  const stateUpdates: StateUpdate[] = [];
  for (const node of graph.nodes) {
    const rule = gradientRule(node.opType);
    if (node.opType === 'Dropout') throw new DmlError('E_MODEL', `${describeNode(node)}: training with dropout is not supported by the graph trainer; export the network in eval mode (dropout removed)`);
    let record = PLAIN_FORWARD;
    if (rule?.forward) record = rule.forward(emit, node);
    else emit.copy(node);
    records.set(node, record);
    stateUpdates.push(...record.stateUpdates);
  }
  return { records, stateUpdates };
}

/**
 * Writes the backward pass: the gradient of every value in `wanted` (trained weights) given the
 * gradient `seed` of forward value `output`. Returns the gradient of each wanted value that the
 * output depends on (a weight it does not depend on is absent).
 */
export function emitBackward(
  emit: StepEmitter,
  graph: ShapedGraph,
  forward: TrainingForward,
  requiresGrad: ReadonlySet<string>,
  output: string,
  seed: string,
  wanted: readonly string[],
): Map<string, string> {
  const contributions = new Map<string, string[]>([[output, [seed]]]);
  const totals = new Map<string, string>();
  const total = (name: string): string | undefined => {
    const cached = totals.get(name);
    if (cached) return cached;
    const parts = contributions.get(name);
    if (!parts || parts.length === 0) return undefined;
    const sum = parts.length === 1 ? (parts[0] as string) : emit.op('Sum', parts, `${name}/grad_total`);
    totals.set(name, sum);
    return sum;
  };
  for (const node of [...graph.nodes].reverse()) {
    const outputs = differentiableOutputs(node);
    if (!outputs.some((o) => requiresGrad.has(o) && contributions.has(o))) continue;
    const rule = gradientRule(node.opType);
    if (!rule) continue; // a non-differentiable operator: nothing flows back
    const differentiable = rule.differentiableInputs(node);
    const needed = node.inputs.map((name, i) => name !== '' && differentiable.includes(i) && requiresGrad.has(name));
    if (!needed.some(Boolean)) continue;
    const outputGradients = node.outputs.map((o) => (outputs.includes(o) ? total(o) : undefined));
    const gradients = rule.backward(emit, node, outputGradients, needed, forward.records.get(node) ?? PLAIN_FORWARD);
    gradients.forEach((g, i) => {
      const name = node.inputs[i];
      if (g === undefined || !name || !needed[i]) return;
      const list = contributions.get(name) ?? [];
      list.push(g);
      contributions.set(name, list);
    });
  }
  const result = new Map<string, string>();
  for (const name of wanted) {
    const g = total(name);
    if (g !== undefined) result.set(name, g);
  }
  return result;
}
