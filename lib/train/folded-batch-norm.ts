/**
 * @file The warning for a network to fine-tune whose BatchNorm was probably folded away at export.
 *
 * `torch.onnx.export(model.eval(), x, f)` with PyTorch's defaults (eval mode, constant folding) folds
 * every BatchNorm that follows a convolution into the convolution's weight and bias. The file computes
 * what the network computed in eval mode, so it evaluates correctly; but fine-tuned from it, the
 * network trains without normalisation, and with a metric-learning loss it collapses (PyTorch
 * collapses too, from the same file). Nothing in the file says that it happened, so the check is a
 * heuristic: a network whose convolutions mostly feed no normalisation layer.
 */
import type { IrGraph, IrNode } from '../engine/graph/onnx-ir.js';

/**
 * Operators that normalise the value they read: the normalisation layers, and ReduceMean, the first
 * node of a LayerNorm or GroupNorm written out in operators (operator sets before 17 have no
 * LayerNormalization).
 */
const NORMALISATIONS: ReadonlySet<string> = new Set(['BatchNormalization', 'InstanceNormalization', 'LayerNormalization', 'GroupNormalization', 'ReduceMean']);

/** Operators that only move values (a convolution's output may pass them before its normalisation). */
const LAYOUT_OPERATORS: ReadonlySet<string> = new Set(['Transpose', 'Reshape', 'Identity', 'Squeeze', 'Unsqueeze', 'Flatten']);

/** The export call that keeps BatchNorm as its own layer. */
export const BATCH_NORM_EXPORT_CALL = 'torch.onnx.export(model.eval(), x, f, training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)';

/**
 * The warning for `graph` (the network in file `name`) when its BatchNorm was probably folded into its
 * convolutions at export: two convolutions or more, and fewer than half of them feeding a
 * normalisation (directly or through layout operators). Undefined otherwise.
 */
export function foldedBatchNormWarning(graph: IrGraph, name: string): string | undefined {
  const consumers = new Map<string, IrNode[]>();
  for (const n of graph.nodes) for (const i of n.inputs) consumers.set(i, [...(consumers.get(i) ?? []), n]);
  const normalised = (value: string): boolean =>
    (consumers.get(value) ?? []).some((c) => NORMALISATIONS.has(c.opType) || (LAYOUT_OPERATORS.has(c.opType) && c.outputs.some(normalised)));
  const convolutions = graph.nodes.filter((n) => n.opType === 'Conv' || n.opType === 'ConvTranspose');
  const kept = convolutions.filter((n) => n.outputs.some(normalised)).length;
  if (convolutions.length < 2 || 2 * kept >= convolutions.length) return undefined;
  return (
    `${name}: ${convolutions.length - kept} of its ${convolutions.length} convolutions feed no normalisation layer. If the network was trained with BatchNorm, ` +
    `the export probably folded it into the convolutions (torch.onnx.export's default in eval mode), and fine-tuned without normalisation it tends to collapse; ` +
    `export it with ${BATCH_NORM_EXPORT_CALL} (docs/graph-trainer.md, "Exporting from PyTorch for fine-tuning")`
  );
}
