/**
 * @file Every ONNX operator the graph trainer differentiates or runs through, one entry each: its
 * gradient rule (written in the file of its family), how many of its outputs carry a gradient, and
 * what to know about it on onnxruntime's WebGPU provider. Its shape function is in
 * lib/engine/graph/shapes.ts, which also reads graphs that are never trained; the registry spec
 * (spec/engine/autodiff/operator-registry.spec.ts) fails for an entry without a shape function or
 * without a gradient case in spec/fixtures/operator-gradients. Adding an operator: its rule in its
 * family's file, its entry here, its shape function, its case in scripts/reference/torch_operator_gradients.py.
 */
import type { GradientRule } from '../rule.js';
import { ACTIVATION_RULES } from './activations.js';
import { CONVOLUTION_RULES } from './convolution.js';
import { ELEMENTWISE_RULES } from './elementwise.js';
import { LINEAR_RULES } from './linear.js';
import { NORMALIZATION_RULES } from './normalization.js';
import { POOLING_RULES } from './pooling.js';
import { REDUCTION_RULES } from './reductions.js';
import { SHAPE_RULES } from './shape-ops.js';

/** What the graph trainer knows of one operator (see the file comment). */
export interface OperatorEntry {
  /**
   * Its gradient rule, or `none` for an operator whose outputs carry no gradient whatever its inputs
   * (comparisons, index and shape computations): it runs in the step graph as it is.
   */
  readonly gradient: GradientRule | 'none';
  /** How many of its outputs, the first ones, carry a gradient; default all (BatchNormalization's running statistics and MaxPool's indices do not). */
  readonly gradientOutputs?: number;
  /** What to know about it on onnxruntime's WebGPU provider (docs/graph-trainer.md, "On a GPU"). */
  readonly webgpu?: string;
}

/** Entries of the rules of one family, with nothing more to say. */
function plain(rules: Readonly<Record<string, GradientRule>>): Record<string, OperatorEntry> {
  return Object.fromEntries(Object.entries(rules).map(([op, gradient]) => [op, { gradient }]));
}

const NO_GRADIENT: OperatorEntry = { gradient: 'none' };

/** Every operator by type. */
export const OPERATORS: Readonly<Record<string, OperatorEntry>> = {
  ...plain(ELEMENTWISE_RULES),
  ...plain(ACTIVATION_RULES),
  ...plain(CONVOLUTION_RULES),
  ...plain(LINEAR_RULES),
  ...plain(SHAPE_RULES),
  ...plain(REDUCTION_RULES),
  ...plain(POOLING_RULES),
  ...plain(NORMALIZATION_RULES),
  BatchNormalization: { gradient: NORMALIZATION_RULES.BatchNormalization as GradientRule, gradientOutputs: 1 },
  MaxPool: {
    gradient: POOLING_RULES.MaxPool as GradientRule,
    gradientOutputs: 1,
    webgpu: "its rule never uses MaxPool's Indices output, which the WebGPU provider does not compute ('The Indices output is not supported yet'), nor ArgMax, which gave wrong gradients there: each window's first maximum is found with float comparisons",
  },
  GlobalMaxPool: { gradient: REDUCTION_RULES.GlobalMaxPool as GradientRule, webgpu: 'the first maximum is found with float comparisons, not ArgMax (wrong gradients on the WebGPU provider)' },
  ReduceMax: { gradient: REDUCTION_RULES.ReduceMax as GradientRule, webgpu: 'the first maximum is found with float comparisons, not ArgMax (wrong gradients on the WebGPU provider)' },
  ReduceMin: { gradient: REDUCTION_RULES.ReduceMin as GradientRule, webgpu: 'the first minimum is found with float comparisons, not ArgMin' },
  Sum: { gradient: ELEMENTWISE_RULES.Sum as GradientRule, webgpu: 'onnxruntime placed some Sum nodes of the backward on the CPU provider (measured on an H100, 2026-11-26)' },
  Equal: { gradient: 'none', webgpu: 'int64 Equal nodes ran on the CPU provider (measured on an H100, 2026-11-26)' },
  Shape: NO_GRADIENT,
  Greater: NO_GRADIENT,
  Less: NO_GRADIENT,
  GreaterOrEqual: NO_GRADIENT,
  LessOrEqual: NO_GRADIENT,
  Not: NO_GRADIENT,
  And: NO_GRADIENT,
  Or: NO_GRADIENT,
  ArgMax: NO_GRADIENT,
  ArgMin: NO_GRADIENT,
  Size: NO_GRADIENT,
  ConstantOfShape: NO_GRADIENT,
  Range: NO_GRADIENT,
};

/** The entry of `opType`, or undefined for an operator the graph trainer does not know. */
export function operatorEntry(opType: string): OperatorEntry | undefined {
  return Object.hasOwn(OPERATORS, opType) ? OPERATORS[opType] : undefined;
}

/** The gradient rule of `opType`, or undefined (no entry, or an operator without gradients). */
export function gradientRule(opType: string): GradientRule | undefined {
  const gradient = operatorEntry(opType)?.gradient;
  return gradient === 'none' ? undefined : gradient;
}

/** Operator types with a gradient rule, sorted (for documentation and errors). */
export function differentiableOperators(): string[] {
  return Object.keys(OPERATORS)
    .filter((op) => OPERATORS[op]?.gradient !== 'none')
    .sort();
}
