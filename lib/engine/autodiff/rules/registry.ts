/**
 * @file Every gradient rule by ONNX operator type: the one place to add an operator the graph trainer
 * can differentiate (write its rule in the file of its family, add the family's table here once).
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

const RULES: ReadonlyMap<string, GradientRule> = new Map(
  Object.entries({
    ...ELEMENTWISE_RULES,
    ...ACTIVATION_RULES,
    ...CONVOLUTION_RULES,
    ...NORMALIZATION_RULES,
    ...POOLING_RULES,
    ...REDUCTION_RULES,
    ...LINEAR_RULES,
    ...SHAPE_RULES,
  }),
);

/**
 * Operators whose outputs carry no gradient whatever their inputs: comparisons, index and shape
 * computations. They run in the step graph as they are.
 */
export const NON_DIFFERENTIABLE_OPERATORS: ReadonlySet<string> = new Set([
  'Shape', 'Equal', 'Greater', 'Less', 'GreaterOrEqual', 'LessOrEqual', 'Not', 'And', 'Or', 'ArgMax', 'ArgMin', 'Size', 'ConstantOfShape', 'Range',
]);

/** The gradient rule of `opType`, or undefined. */
export function gradientRule(opType: string): GradientRule | undefined {
  return RULES.get(opType);
}

/** Operator types with a gradient rule, sorted (for documentation and errors). */
export function differentiableOperators(): string[] {
  return [...RULES.keys()].sort();
}
