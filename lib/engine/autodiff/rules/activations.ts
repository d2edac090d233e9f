/**
 * @file Gradient rules of activations, with PyTorch's conventions at the kinks: Relu (`y > 0` passes;
 * written as `g * float(y > 0)`, whose Mul onnxruntime's CPU provider runs on every thread where it
 * runs Where on one: 18-20 -> 10 ms of a Recipe R step on 2 threads; it differs from PyTorch only for
 * a non-finite `g` at an inactive unit, NaN there instead of 0),
 * Clip (ReLU6: strictly inside the bounds passes, as hardtanh), LeakyRelu (`x > 0` passes, else
 * `alpha`), Sigmoid (`g (1 - y) y`; SiLU is exported as `x * Sigmoid(x)` and differentiates through
 * Mul), Tanh (`g (1 - y²)`), Softplus (`g sigmoid(x)`), Erf (`g 2/√π exp(-x²)`; GELU is exported as
 * `0.5 x (1 + erf(x/√2))` and differentiates through it), Softmax (opset 13's, over one axis:
 * `y (g - Σ g y)`), HardSigmoid (`g α` strictly inside
 * `0 < αx + β < 1`, PyTorch's hardsigmoid at α = 1/6, β = 1/2), HardSwish (MobileNetV3's; PyTorch's
 * hardswish_backward: 0 below -3, `g (x/3 + 1/2)` on [-3, 3), `g` from 3 on).
 */
import type { GradientRule } from '../rule.js';
import type { StepEmitter } from '../emitter.js';
import { floatAttribute, intAttribute } from '../../graph/onnx-ir.js';
import { inputOf, outputGradient } from './elementwise.js';

function activation(f: (emit: StepEmitter, g: string, x: string, y: string, base: string, alpha: number, bounds: readonly (string | undefined)[]) => string): GradientRule {
  return {
    differentiableInputs: () => [0],
    backward: (emit, node, dys, needed) => {
      if (!needed[0]) return [undefined];
      const base = `${node.name}/grad`;
      return [f(emit, outputGradient(node, dys), inputOf(node, 0), node.outputs[0] as string, base, floatAttribute(node, 'alpha', 0.01), [node.inputs[1] || undefined, node.inputs[2] || undefined])];
    },
  };
}

/** Rules of this file by operator type. */
export const ACTIVATION_RULES: Readonly<Record<string, GradientRule>> = {
  Relu: activation((emit, g, _x, y, base) => emit.op('Mul', [g, emit.op('Cast', [emit.op('Greater', [y, emit.scalar(0)], `${base}/active`)], `${base}/active_f`, { to: { i: 1 } })], base)),
  Clip: activation((emit, g, x, _y, base, _alpha, [min, max]) => {
    let pass: string | undefined;
    if (min) pass = emit.op('Greater', [x, min], `${base}/above_min`);
    if (max) {
      const below = emit.op('Less', [x, max], `${base}/below_max`);
      pass = pass ? emit.op('And', [pass, below], `${base}/inside`) : below;
    }
    return pass ? emit.op('Where', [pass, g, emit.scalar(0)], base) : g;
  }),
  LeakyRelu: activation((emit, g, x, _y, base, alpha) =>
    emit.op('Where', [emit.op('Greater', [x, emit.scalar(0)], `${base}/positive`), g, emit.op('Mul', [g, emit.scalar(alpha)], `${base}/leak`)], base),
  ),
  Sigmoid: activation((emit, g, _x, y, base) => emit.op('Mul', [g, emit.op('Mul', [emit.op('Sub', [emit.scalar(1), y], `${base}/one_minus_y`), y], `${base}/slope`)], base)),
  Tanh: activation((emit, g, _x, y, base) => emit.op('Mul', [g, emit.op('Sub', [emit.scalar(1), emit.op('Mul', [y, y], `${base}/y2`)], `${base}/slope`)], base)),
  Softplus: activation((emit, g, x, _y, base) => emit.op('Mul', [g, emit.op('Sigmoid', [x], `${base}/sigmoid`)], base)),
  Erf: activation((emit, g, x, _y, base) => {
    const gauss = emit.op('Exp', [emit.op('Neg', [emit.op('Mul', [x, x], `${base}/x2`)], `${base}/minus_x2`)], `${base}/gauss`);
    return emit.op('Mul', [g, emit.op('Mul', [gauss, emit.scalar(2 / Math.sqrt(Math.PI))], `${base}/slope`)], base);
  }),
  Softmax: {
    differentiableInputs: () => [0],
    backward: (emit, node, dys, needed) => {
      if (!needed[0]) return [undefined];
      const base = `${node.name}/grad`;
      const rank = emit.dims(inputOf(node, 0)).length;
      const rawAxis = intAttribute(node, 'axis', -1);
      const y = node.outputs[0] as string;
      const g = outputGradient(node, dys);
      const dot = emit.op('ReduceSum', [emit.op('Mul', [g, y], `${base}/dy_y`), emit.ints([rawAxis < 0 ? rawAxis + rank : rawAxis])], `${base}/sum_dy_y`, { keepdims: { i: 1 } });
      return [emit.op('Mul', [y, emit.op('Sub', [g, dot], `${base}/dy_centered`)], base)];
    },
  },
  HardSigmoid: {
    differentiableInputs: () => [0],
    backward: (emit, node, dys, needed) => {
      if (!needed[0]) return [undefined];
      const base = `${node.name}/grad`;
      const alpha = floatAttribute(node, 'alpha', 0.2);
      const beta = floatAttribute(node, 'beta', 0.5);
      const linear = emit.op('Add', [emit.op('Mul', [inputOf(node, 0), emit.scalar(alpha)], `${base}/ax`), emit.scalar(beta)], `${base}/ax_b`);
      const inside = emit.op('And', [emit.op('Greater', [linear, emit.scalar(0)], `${base}/above_0`), emit.op('Less', [linear, emit.scalar(1)], `${base}/below_1`)], `${base}/inside`);
      return [emit.op('Where', [inside, emit.op('Mul', [outputGradient(node, dys), emit.scalar(alpha)], `${base}/g_alpha`), emit.scalar(0)], base)];
    },
  },
  HardSwish: activation((emit, g, x, _y, base) => {
    const ramp = emit.op('Mul', [g, emit.op('Add', [emit.op('Mul', [x, emit.scalar(1 / 3)], `${base}/x_third`), emit.scalar(0.5)], `${base}/slope`)], `${base}/ramp`);
    const upper = emit.op('Where', [emit.op('Less', [x, emit.scalar(3)], `${base}/below_3`), ramp, g], `${base}/upper`);
    return emit.op('Where', [emit.op('Less', [x, emit.scalar(-3)], `${base}/below_minus_3`), emit.scalar(0), upper], base);
  }),
};
