/**
 * @file Gradient rules of reductions: ReduceSum and ReduceMean (the gradient, divided by the count
 * for a mean, broadcast back), ReduceL2 (`g x / y`), and ReduceMax / ReduceMin, whose gradient goes to
 * the first extreme element of each reduced group (PyTorch's `max(dim)` and adaptive max pooling;
 * `torch.amax` would split it among ties). GlobalAveragePool and GlobalMaxPool are the same reductions
 * over the spatial axes.
 */
import { elementCount, type IrNode } from '../../graph/onnx-ir.js';
import { reductionAxes } from '../../graph/shapes.js';
import type { StepEmitter } from '../emitter.js';
import type { GradientRule } from '../rule.js';
import { inputOf, outputGradient } from './elementwise.js';

/** The reduced axes of `node` over its input `x` (Global*Pool: every axis after the channel axis). */
function axesOf(emit: StepEmitter, node: IrNode): number[] {
  const rank = emit.dims(inputOf(node, 0)).length;
  if (node.opType.startsWith('Global')) return Array.from({ length: rank - 2 }, (_, i) => i + 2);
  return reductionAxes(node, rank, (i) => emit.constant(node.inputs[i] ?? ''));
}

/** The output gradient reshaped to the keepdims form of the reduction (a 1 at every reduced axis). */
function keptGradient(emit: StepEmitter, node: IrNode, g: string, axes: readonly number[]): string {
  const x = emit.dims(inputOf(node, 0));
  return emit.reshape(g, emit.dims(node.outputs[0] as string), x.map((d, i) => (axes.includes(i) ? 1 : d)), `${node.name}/grad_kept`);
}

function broadcastBack(scale: (count: number) => number): GradientRule {
  return {
    differentiableInputs: () => [0],
    backward: (emit, node, dys, needed) => {
      if (!needed[0]) return [undefined];
      const axes = axesOf(emit, node);
      const x = emit.dims(inputOf(node, 0));
      const count = elementCount(axes.map((a) => x[a] as number));
      let g = keptGradient(emit, node, outputGradient(node, dys), axes);
      const factor = scale(count);
      if (factor !== 1) g = emit.op('Mul', [g, emit.scalar(factor)], `${node.name}/grad_scaled`);
      return [emit.op('Expand', [g, emit.ints(x)], `${node.name}/grad`)];
    },
  };
}

const reduceL2: GradientRule = {
  differentiableInputs: () => [0],
  backward: (emit, node, dys, needed) => {
    if (!needed[0]) return [undefined];
    const axes = axesOf(emit, node);
    const g = keptGradient(emit, node, outputGradient(node, dys), axes);
    const y = keptGradient(emit, node, node.outputs[0] as string, axes);
    return [emit.op('Mul', [inputOf(node, 0), emit.op('Div', [g, y], `${node.name}/grad_over_norm`)], `${node.name}/grad`)];
  },
};

/**
 * Gradient of a max/min reduction: the reduced axes are moved last and flattened ([K, R]); ArgMax/ArgMin
 * picks the first extreme of each row; ScatterElements puts the gradient there; the layout is restored.
 */
function extremeReduction(select: 'ArgMax' | 'ArgMin'): GradientRule {
  return {
    differentiableInputs: () => [0],
    backward: (emit, node, dys, needed) => {
      if (!needed[0]) return [undefined];
      const x = inputOf(node, 0);
      const dims = emit.dims(x);
      const axes = axesOf(emit, node);
      const kept = dims.flatMap((_, i) => (axes.includes(i) ? [] : [i]));
      const perm = [...kept, ...axes];
      const identity = perm.every((p, i) => p === i);
      const base = `${node.name}/grad`;
      const transposed = identity ? x : emit.op('Transpose', [x], `${base}/x_t`, { perm: { ints: perm } });
      const rows = elementCount(kept.map((a) => dims[a] as number));
      const width = elementCount(axes.map((a) => dims[a] as number));
      const flat = emit.reshape(transposed, perm.map((p) => dims[p] as number), [rows, width], `${base}/x_rows`);
      const index = emit.op(select, [flat], `${base}/index`, { axis: { i: 1 }, keepdims: { i: 1 } });
      const g = emit.reshape(outputGradient(node, dys), emit.dims(node.outputs[0] as string), [rows, 1], `${base}/g_rows`);
      const scattered = emit.op('ScatterElements', [emit.zeros([rows, width]), index, g], `${base}/scattered`, { axis: { i: 1 } });
      const back = emit.reshape(scattered, [rows, width], perm.map((p) => dims[p] as number), `${base}/unflat`);
      if (identity) return [back];
      const inverse = perm.map((_, i) => perm.indexOf(i));
      return [emit.op('Transpose', [back], base, { perm: { ints: inverse } })];
    },
  };
}

/** Rules of this file by operator type. */
export const REDUCTION_RULES: Readonly<Record<string, GradientRule>> = {
  ReduceSum: broadcastBack(() => 1),
  ReduceMean: broadcastBack((count) => 1 / count),
  GlobalAveragePool: broadcastBack((count) => 1 / count),
  ReduceL2: reduceL2,
  ReduceMax: extremeReduction('ArgMax'),
  GlobalMaxPool: extremeReduction('ArgMax'),
  ReduceMin: extremeReduction('ArgMin'),
};
