/**
 * @file Gradient rules of matrix products.
 *
 * - Gemm `Y = alpha op(A) op(B) + beta C`: dA and dB are Gemms of dY with the other operand (the
 *   transpose flags chosen so that the result has the operand's own layout), dC is `beta dY` summed to
 *   C's shape.
 * - MatMul (operands of rank 2 or more, batch dimensions broadcast): `dA = dY Bᵀ`, `dB = Aᵀ dY`, each
 *   summed over the batch dimensions its operand was broadcast along.
 */
import { floatAttribute, intAttribute } from '../../graph/onnx-ir.js';
import type { StepEmitter } from '../emitter.js';
import type { GradientRule } from '../rule.js';
import { inputOf, outputGradient } from './elementwise.js';

const gemm: GradientRule = {
  differentiableInputs: (node) => node.inputs.map((_, i) => i),
  backward: (emit, node, dys, needed) => {
    const g = outputGradient(node, dys);
    const [a, b] = [inputOf(node, 0), inputOf(node, 1)];
    const alpha = floatAttribute(node, 'alpha', 1);
    const beta = floatAttribute(node, 'beta', 1);
    const transA = intAttribute(node, 'transA', 0);
    const transB = intAttribute(node, 'transB', 0);
    const base = `${node.name}/grad`;
    const product = (left: string, right: string, tl: number, tr: number, name: string): string =>
      emit.op('Gemm', [left, right], name, { alpha: { f: alpha }, transA: { i: tl }, transB: { i: tr } });
    const results: (string | undefined)[] = node.inputs.map(() => undefined);
    if (needed[0]) results[0] = transA ? product(b, g, transB, 1, `${base}_a`) : product(g, b, 0, transB ? 0 : 1, `${base}_a`);
    if (needed[1]) results[1] = transB ? product(g, a, 1, transA, `${base}_b`) : product(a, g, transA ? 0 : 1, 0, `${base}_b`);
    if (needed[2] && node.inputs[2]) {
      const scaled = beta === 1 ? g : emit.op('Mul', [g, emit.scalar(beta)], `${base}_c/scaled`);
      results[2] = emit.reduceToShape(scaled, emit.dims(node.outputs[0] as string), emit.dims(node.inputs[2]), `${base}_c`);
    }
    return results;
  },
};

/** `value` with its last two axes swapped. */
function swapLast(emit: StepEmitter, value: string, rank: number, base: string): string {
  const perm = Array.from({ length: rank }, (_, i) => i);
  perm[rank - 2] = rank - 1;
  perm[rank - 1] = rank - 2;
  return emit.op('Transpose', [value], base, { perm: { ints: perm } });
}

const matMul: GradientRule = {
  differentiableInputs: () => [0, 1],
  backward: (emit, node, dys, needed) => {
    const g = outputGradient(node, dys);
    const [a, b] = [inputOf(node, 0), inputOf(node, 1)];
    const y = emit.dims(node.outputs[0] as string);
    const base = `${node.name}/grad`;
    const aDims = emit.dims(a);
    const bDims = emit.dims(b);
    // The full-rank product before the broadcast batch axes are summed: [...batch of Y, m, k] and [..., k, n].
    const fullA = [...y.slice(0, -2), aDims[aDims.length - 2] as number, aDims[aDims.length - 1] as number];
    const fullB = [...y.slice(0, -2), bDims[bDims.length - 2] as number, bDims[bDims.length - 1] as number];
    return [
      needed[0] ? emit.reduceToShape(emit.op('MatMul', [g, swapLast(emit, b, bDims.length, `${base}_a/b_t`)], `${base}_a/full`), fullA, aDims, `${base}_a`) : undefined,
      needed[1] ? emit.reduceToShape(emit.op('MatMul', [swapLast(emit, a, aDims.length, `${base}_b/a_t`), g], `${base}_b/full`), fullB, bDims, `${base}_b`) : undefined,
    ];
  },
};

/** Rules of this file by operator type. */
export const LINEAR_RULES: Readonly<Record<string, GradientRule>> = { Gemm: gemm, MatMul: matMul };
