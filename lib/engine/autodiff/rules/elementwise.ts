/**
 * @file Gradient rules of element-wise arithmetic with numpy broadcasting: Add, Sub, Mul, Div, Sum,
 * Max, Min, Pow (constant exponent), Neg, Sqrt, Exp, Log, Reciprocal, Identity. An operand's gradient is
 * summed over the axes it was broadcast along ({@link StepEmitter.reduceToShape}).
 */
import { DmlError } from '../../../errors.js';
import { describeNode, type IrNode } from '../../graph/onnx-ir.js';
import type { StepEmitter } from '../emitter.js';
import type { GradientRule } from '../rule.js';

/** The gradient of output 0, which the backward pass guarantees exists when it calls a rule. */
export function outputGradient(node: IrNode, outputGradients: readonly (string | undefined)[]): string {
  const g = outputGradients[0];
  if (g === undefined) throw new DmlError('E_MODEL', `${describeNode(node)}: backward called without a gradient of its output`);
  return g;
}

/** Input `i` of `node` (present). */
export function inputOf(node: IrNode, i: number): string {
  const name = node.inputs[i];
  if (!name) throw new DmlError('E_MODEL', `${describeNode(node)}: input ${i} is missing`);
  return name;
}

/** Sums a full-shape gradient `g` of output `y` down to each needed operand's shape. */
function toOperands(emit: StepEmitter, node: IrNode, needed: readonly boolean[], parts: readonly (() => string)[]): (string | undefined)[] {
  const y = node.outputs[0] as string;
  return parts.map((part, i) => (needed[i] ? emit.reduceToShape(part(), emit.dims(y), emit.dims(inputOf(node, i)), `${node.name}/grad${i}`) : undefined));
}

const allInputs = (node: IrNode): number[] => node.inputs.map((_, i) => i);
const firstInput = (): number[] => [0];

const add: GradientRule = {
  differentiableInputs: allInputs,
  backward: (emit, node, dys, needed) => {
    const g = outputGradient(node, dys);
    return toOperands(emit, node, needed, node.inputs.map(() => () => g));
  },
};

const sub: GradientRule = {
  differentiableInputs: allInputs,
  backward: (emit, node, dys, needed) => {
    const g = outputGradient(node, dys);
    return toOperands(emit, node, needed, [() => g, () => emit.op('Neg', [g], `${node.name}/grad_neg`)]);
  },
};

const mul: GradientRule = {
  differentiableInputs: allInputs,
  backward: (emit, node, dys, needed) => {
    const g = outputGradient(node, dys);
    const [a, b] = [inputOf(node, 0), inputOf(node, 1)];
    return toOperands(emit, node, needed, [() => emit.op('Mul', [g, b], `${node.name}/grad_a`), () => emit.op('Mul', [g, a], `${node.name}/grad_b`)]);
  },
};

// PyTorch: d/da = g / b, d/db = -g * a / (b * b).
const div: GradientRule = {
  differentiableInputs: allInputs,
  backward: (emit, node, dys, needed) => {
    const g = outputGradient(node, dys);
    const [a, b] = [inputOf(node, 0), inputOf(node, 1)];
    return toOperands(emit, node, needed, [
      () => emit.op('Div', [g, b], `${node.name}/grad_a`),
      () => emit.op('Div', [emit.op('Neg', [emit.op('Mul', [g, a], `${node.name}/g_a`)], `${node.name}/neg_g_a`), emit.op('Mul', [b, b], `${node.name}/b2`)], `${node.name}/grad_b`),
    ]);
  },
};

/** Max / Min of two operands: the gradient goes to the larger (smaller) one, half to each on a tie (PyTorch's maximum/minimum). */
function extremum(compare: 'Greater' | 'Less'): GradientRule {
  return {
    differentiableInputs: allInputs,
    backward: (emit, node, dys, needed) => {
      if (node.inputs.length !== 2) throw new DmlError('E_MODEL', `${describeNode(node)}: the graph trainer differentiates ${node.opType} of two operands, not ${node.inputs.length}`);
      const g = outputGradient(node, dys);
      const [a, b] = [inputOf(node, 0), inputOf(node, 1)];
      const half = emit.op('Mul', [g, emit.scalar(0.5)], `${node.name}/half`);
      const zero = emit.scalar(0);
      const tie = emit.op('Equal', [a, b], `${node.name}/tie`);
      const share = (wins: string): string => emit.op('Where', [wins, g, emit.op('Where', [tie, half, zero], `${node.name}/tie_share`)], `${node.name}/share`);
      return toOperands(emit, node, needed, [() => share(emit.op(compare, [a, b], `${node.name}/a_wins`)), () => share(emit.op(compare, [b, a], `${node.name}/b_wins`))]);
    },
  };
}

const sum: GradientRule = add;

// Pow with a constant exponent e: g * e * x^(e-1).
const pow: GradientRule = {
  differentiableInputs: firstInput,
  backward: (emit, node, dys, needed) => {
    const exponent = emit.constant(inputOf(node, 1));
    if (!exponent || exponent.data.length !== 1) throw new DmlError('E_MODEL', `${describeNode(node)}: the graph trainer differentiates Pow with a constant scalar exponent only`);
    const e = exponent.data[0] as number;
    const g = outputGradient(node, dys);
    const x = inputOf(node, 0);
    const power = e === 2 ? x : emit.op('Pow', [x, emit.scalar(e - 1)], `${node.name}/x_pow`);
    return toOperands(emit, node, needed, [() => emit.op('Mul', [g, emit.op('Mul', [power, emit.scalar(e)], `${node.name}/e_x_pow`)], `${node.name}/grad`)]);
  },
};

// Where(c, a, b): the gradient goes to a where c holds, to b elsewhere.
const where: GradientRule = {
  differentiableInputs: () => [1, 2],
  backward: (emit, node, dys, needed) => {
    const g = outputGradient(node, dys);
    const condition = inputOf(node, 0);
    const zero = emit.scalar(0);
    return toOperands(emit, node, needed, [
      () => '',
      () => emit.op('Where', [condition, g, zero], `${node.name}/grad_a`),
      () => emit.op('Where', [condition, zero, g], `${node.name}/grad_b`),
    ]);
  },
};

/** A unary rule: input gradient = f(emit, g, x, y). */
function unary(f: (emit: StepEmitter, g: string, x: string, y: string, base: string) => string): GradientRule {
  return {
    differentiableInputs: firstInput,
    backward: (emit, node, dys, needed) => [needed[0] ? f(emit, outputGradient(node, dys), inputOf(node, 0), node.outputs[0] as string, `${node.name}/grad`) : undefined],
  };
}

/** Rules of this file by operator type. */
export const ELEMENTWISE_RULES: Readonly<Record<string, GradientRule>> = {
  Add: add,
  Sub: sub,
  Mul: mul,
  Div: div,
  Sum: sum,
  Max: extremum('Greater'),
  Min: extremum('Less'),
  Pow: pow,
  Where: where,
  Identity: unary((_emit, g) => g),
  Neg: unary((emit, g, _x, _y, base) => emit.op('Neg', [g], base)),
  // PyTorch: g / (2 y).
  Sqrt: unary((emit, g, _x, y, base) => emit.op('Div', [g, emit.op('Mul', [y, emit.scalar(2)], `${base}/two_y`)], base)),
  Exp: unary((emit, g, _x, y, base) => emit.op('Mul', [g, y], base)),
  Log: unary((emit, g, x, _y, base) => emit.op('Div', [g, x], base)),
  // PyTorch: -g * y * y.
  Reciprocal: unary((emit, g, _x, y, base) => emit.op('Neg', [emit.op('Mul', [g, emit.op('Mul', [y, y], `${base}/y2`)], `${base}/g_y2`)], base)),
};
