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
 * A boolean mask of `values` (dimensions `dims`) that is true at the first position along `axis` where
 * `values` equals `extreme` (the reduction's result, broadcast along `axis`): the element PyTorch's
 * max/min backward gives the gradient to. Written with float comparisons only (no ArgMax and no int64
 * values: onnxruntime's WebGPU provider returned wrong gradients with ArgMax-based selection): positions
 * that match score `count - index`, and the highest score wins.
 */
export function firstMatch(emit: StepEmitter, values: string, extreme: string, dims: readonly number[], axis: number, base: string): string {
  const count = dims[axis] as number;
  const scoreDims = dims.map((_, i) => (i === axis ? count : 1));
  const scores = emit.floats(`${base}/first_scores`, scoreDims, Array.from({ length: count }, (_, k) => count - k));
  const matched = emit.op('Where', [emit.op('Equal', [values, extreme], `${base}/matches`), scores, emit.scalar(0)], `${base}/match_scores`);
  const best = emit.op('ReduceMax', [matched], `${base}/best_score`, { axes: { ints: [axis] }, keepdims: { i: 1 } });
  return emit.op('Equal', [matched, best], `${base}/first`);
}

/**
 * Gradient of a max/min reduction: the reduced axes are moved last and flattened ([K, R]); the first
 * extreme of each row ({@link firstMatch}) gets the row's gradient, as in PyTorch; the layout is restored.
 */
function extremeReduction(): GradientRule {
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
      const outDims = emit.dims(node.outputs[0] as string);
      const extreme = emit.reshape(node.outputs[0] as string, outDims, [rows, 1], `${base}/y_rows`);
      const chosen = firstMatch(emit, flat, extreme, [rows, width], 1, base);
      const g = emit.reshape(outputGradient(node, dys), outDims, [rows, 1], `${base}/g_rows`);
      const routed = emit.op('Where', [chosen, g, emit.scalar(0)], `${base}/routed`);
      const back = emit.reshape(routed, [rows, width], perm.map((p) => dims[p] as number), `${base}/unflat`);
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
  ReduceMax: extremeReduction(),
  GlobalMaxPool: extremeReduction(),
  ReduceMin: extremeReduction(),
};
