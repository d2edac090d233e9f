/**
 * @file BatchNormalization in training mode (PyTorch's `BatchNorm1d/2d.train()`), forward and backward.
 *
 * Forward, over every axis but the channel axis 1 (n values per channel):
 *
 *     mean = Σx / n,  var = Σ(x - mean)² / n,  invstd = 1 / sqrt(var + ε),
 *     x̂ = (x - mean) invstd,  y = γ x̂ + β  (the inference BatchNormalization kernel fed with mean and var);
 *     running_mean ← (1 - m) running_mean + m mean,  running_var ← (1 - m) running_var + m var n / (n - 1)
 *
 * with PyTorch's momentum m = 1 - the ONNX node's `momentum` attribute (PyTorch exports 0.9 for its
 * default 0.1) and the unbiased variance in the running estimate. Backward (PyTorch's formula):
 *
 *     dβ = Σ dy,  dγ = Σ dy x̂,  dx = γ invstd (dy - x̂ Σ(dy x̂) / n - Σ dy / n).
 *
 * Inference (evaluation, export) keeps the node as it is, reading the running statistics.
 * LayerNormalization, the same in training and inference, and LpNormalization are below (their own comments).
 *
 * Frozen (a node carrying {@link FROZEN_BATCH_NORM_ATTRIBUTE}, as GraphTrainer's `frozenBatchNorm`
 * marks them; PyTorch's BatchNorm in `eval()` inside a training model, Roth et al.'s frozen BN): the
 * forward normalises with the running statistics, which stay as they are, and the backward is that
 * of an affine map: `dx = γ invstd dy`, `dγ = Σ dy x̂`, `dβ = Σ dy` with `invstd = 1 / sqrt(running_var + ε)`.
 */
import { DmlError } from '../../../errors.js';
import { describeNode, elementCount, floatAttribute, intAttribute, type IrNode } from '../../graph/onnx-ir.js';
import type { StepEmitter } from '../emitter.js';
import type { ForwardRecord, GradientRule } from '../rule.js';
import { inputOf, outputGradient } from './elementwise.js';

function geometry(emit: StepEmitter, node: IrNode): { axes: number[]; channelDims: number[]; channels: number; count: number } {
  const dims = emit.dims(inputOf(node, 0));
  if (dims.length < 2) throw new DmlError('E_MODEL', `${describeNode(node)}: input of rank ${dims.length}; batch normalisation needs [N, C, ...]`);
  const channels = dims[1] as number;
  const count = elementCount(dims) / channels;
  if (count < 2) throw new DmlError('E_MODEL', `${describeNode(node)}: training batch normalisation needs more than one value per channel; the batch gives ${count}`);
  return { axes: dims.flatMap((_, i) => (i === 1 ? [] : [i])), channelDims: dims.map((d, i) => (i === 1 ? d : 1)), channels, count };
}

/** The node attribute (not an ONNX one: it never reaches onnxruntime) that marks a BatchNormalization frozen. */
export const FROZEN_BATCH_NORM_ATTRIBUTE = 'dmlkit.frozen';

function isFrozen(node: IrNode): boolean {
  return intAttribute(node, FROZEN_BATCH_NORM_ATTRIBUTE, 0) === 1;
}

/** The frozen forward: the node as inference runs it, plus what the affine backward needs. */
function frozenForward(emit: StepEmitter, node: IrNode): ForwardRecord {
  const [x, scale, , runningMean, runningVar] = [0, 1, 2, 3, 4].map((i) => inputOf(node, i)) as [string, string, string, string, string];
  const dims = emit.dims(x);
  if (dims.length < 2) throw new DmlError('E_MODEL', `${describeNode(node)}: input of rank ${dims.length}; batch normalisation needs [N, C, ...]`);
  const channels = dims[1] as number;
  const channelDims = dims.map((d, i) => (i === 1 ? d : 1));
  const epsilon = floatAttribute(node, 'epsilon', 1e-5);
  const base = node.name;
  const invstd = emit.reshape(emit.op('Reciprocal', [emit.op('Sqrt', [emit.op('Add', [runningVar, emit.scalar(epsilon)], `${base}/running_var_eps`)], `${base}/running_std`)], `${base}/running_invstd`), [channels], channelDims, `${base}/invstd`);
  const centered = emit.op('Sub', [x, emit.reshape(runningMean, [channels], channelDims, `${base}/running_mean_shaped`)], `${base}/centered`);
  const scaleShaped = emit.reshape(scale, [channels], channelDims, `${base}/scale_shaped`);
  // The inference kernel on the running statistics (the marker attribute stays out of the step graph).
  emit.opInto('BatchNormalization', [x, scale, inputOf(node, 2), runningMean, runningVar], node.outputs[0] as string, { epsilon: { f: epsilon } });
  return { saved: { centered, invstd, scaleShaped }, stateUpdates: [] };
}

const batchNormalization: GradientRule = {
  differentiableInputs: () => [0, 1, 2],
  forward: (emit, node): ForwardRecord => {
    if (isFrozen(node)) return frozenForward(emit, node);
    const [x, scale, bias, runningMean, runningVar] = [0, 1, 2, 3, 4].map((i) => inputOf(node, i)) as [string, string, string, string, string];
    const { axes, channelDims, channels, count } = geometry(emit, node);
    const epsilon = floatAttribute(node, 'epsilon', 1e-5);
    const momentum = 1 - floatAttribute(node, 'momentum', 0.9);
    const base = node.name;
    const mean = emit.op('ReduceMean', [x], `${base}/batch_mean`, { axes: { ints: axes }, keepdims: { i: 1 } });
    const centered = emit.op('Sub', [x, mean], `${base}/centered`);
    const variance = emit.op('Mul', [emit.op('ReduceSumSquare', [centered], `${base}/sum_squares`, { axes: { ints: axes }, keepdims: { i: 1 } }), emit.scalar(1 / count)], `${base}/batch_var`);
    const invstd = emit.op('Reciprocal', [emit.op('Sqrt', [emit.op('Add', [variance, emit.scalar(epsilon)], `${base}/var_eps`)], `${base}/std`)], `${base}/invstd`);
    const scaleShaped = emit.reshape(scale, [channels], channelDims, `${base}/scale_shaped`);
    // The normalisation itself by onnxruntime's inference kernel fed with the batch statistics: one pass,
    // y = x (γ invstd) + (β - mean γ invstd), as PyTorch's CPU kernel computes it.
    const flatMean = emit.reshape(mean, channelDims, [channels], `${base}/mean_flat`);
    const flatVariance = emit.reshape(variance, channelDims, [channels], `${base}/var_flat`);
    emit.opInto('BatchNormalization', [x, scale, bias, flatMean, flatVariance], node.outputs[0] as string, { epsilon: { f: epsilon } });
    const blend = (running: string, batch: string, factor: number, name: string): string =>
      emit.op('Add', [emit.op('Mul', [running, emit.scalar(1 - momentum)], `${name}/kept`), emit.op('Mul', [batch, emit.scalar(momentum * factor)], `${name}/added`)], `${name}/next`);
    return {
      saved: { centered, invstd, scaleShaped },
      stateUpdates: [
        { state: runningMean, next: blend(runningMean, flatMean, 1, `${base}/running_mean`) },
        { state: runningVar, next: blend(runningVar, flatVariance, count / (count - 1), `${base}/running_var`) },
      ],
    };
  },
  backward: (emit, node, dys, needed, record) => {
    const g = outputGradient(node, dys);
    const { centered, invstd, scaleShaped } = record.saved as { centered: string; invstd: string; scaleShaped: string };
    const base = `${node.name}/grad`;
    if (isFrozen(node)) return frozenBackward(emit, node, g, needed, { centered, invstd, scaleShaped });
    const { axes, channels, count } = geometry(emit, node);
    // With x̂ = (x - mean) invstd: Σ dy x̂ = invstd Σ dy (x - mean), so x̂ itself is never formed.
    const sumG = emit.op('ReduceSum', [g, emit.ints(axes)], `${base}/sum_dy`, { keepdims: { i: 1 } });
    const sumGC = emit.op('ReduceSum', [emit.op('Mul', [g, centered], `${base}/dy_centered`), emit.ints(axes)], `${base}/sum_dy_centered`, { keepdims: { i: 1 } });
    const sumGX = emit.op('Mul', [sumGC, invstd], `${base}/sum_dy_xhat`);
    const results: (string | undefined)[] = node.inputs.map(() => undefined);
    if (needed[0]) {
      const projectionScale = emit.op('Mul', [sumGX, emit.op('Mul', [invstd, emit.scalar(1 / count)], `${base}/invstd_over_n`)], `${base}/projection_scale`);
      const projection = emit.op('Mul', [centered, projectionScale], `${base}/projection`);
      const residual = emit.op('Sub', [emit.op('Sub', [g, projection], `${base}/dy_minus_projection`), emit.op('Mul', [sumG, emit.scalar(1 / count)], `${base}/mean_dy`)], `${base}/residual`);
      results[0] = emit.op('Mul', [residual, emit.op('Mul', [invstd, scaleShaped], `${base}/gain`)], `${base}_input`);
    }
    if (needed[1]) results[1] = emit.op('Reshape', [sumGX, emit.ints([channels])], `${base}_scale`);
    if (needed[2]) results[2] = emit.op('Reshape', [sumG, emit.ints([channels])], `${base}_bias`);
    return results;
  },
};

/** The affine backward of a frozen BatchNormalization (see the file comment). */
function frozenBackward(emit: StepEmitter, node: IrNode, g: string, needed: readonly boolean[], saved: { centered: string; invstd: string; scaleShaped: string }): (string | undefined)[] {
  const dims = emit.dims(inputOf(node, 0));
  const channels = dims[1] as number;
  const axes = dims.flatMap((_, i) => (i === 1 ? [] : [i]));
  const base = `${node.name}/grad`;
  const results: (string | undefined)[] = node.inputs.map(() => undefined);
  if (needed[0]) results[0] = emit.op('Mul', [g, emit.op('Mul', [saved.invstd, saved.scaleShaped], `${base}/gain`)], `${base}_input`);
  if (needed[1]) {
    const xhat = emit.op('Mul', [saved.centered, saved.invstd], `${base}/xhat`);
    results[1] = emit.op('Reshape', [emit.op('ReduceSum', [emit.op('Mul', [g, xhat], `${base}/dy_xhat`), emit.ints(axes)], `${base}/sum_dy_xhat`, { keepdims: { i: 1 } }), emit.ints([channels])], `${base}_scale`);
  }
  if (needed[2]) results[2] = emit.op('Reshape', [emit.op('ReduceSum', [g, emit.ints(axes)], `${base}/sum_dy`, { keepdims: { i: 1 } }), emit.ints([channels])], `${base}_bias`);
  return results;
}

/**
 * LayerNormalization (the same in training and inference; transformers, ConvNeXt): over the axes from
 * `axis` to the last (n values per position), with x̂ and invstd recomputed from x,
 *
 *     dx = invstd (dy γ - Σ(dy γ) / n - x̂ Σ(dy γ x̂) / n),  dγ = Σ dy x̂,  dβ = Σ dy
 *
 * (the scale and bias sums over the leading axes, down to their shapes).
 */
const layerNormalization: GradientRule = {
  differentiableInputs: (node) => node.inputs.map((_, i) => i).filter((i) => i < 3 && node.inputs[i]),
  backward: (emit, node, dys, needed) => {
    const x = inputOf(node, 0);
    const dims = emit.dims(x);
    const rawAxis = intAttribute(node, 'axis', -1);
    const axis = rawAxis < 0 ? rawAxis + dims.length : rawAxis;
    const axes = dims.flatMap((_, i) => (i >= axis ? [i] : []));
    const count = elementCount(dims.slice(axis));
    const epsilon = floatAttribute(node, 'epsilon', 1e-5);
    const g = outputGradient(node, dys);
    const base = `${node.name}/grad`;
    const mean = (value: string, name: string): string => emit.op('ReduceMean', [value], name, { axes: { ints: axes }, keepdims: { i: 1 } });
    const centered = emit.op('Sub', [x, mean(x, `${base}/mean`)], `${base}/centered`);
    const variance = mean(emit.op('Mul', [centered, centered], `${base}/squares`), `${base}/var`);
    const invstd = emit.op('Reciprocal', [emit.op('Sqrt', [emit.op('Add', [variance, emit.scalar(epsilon)], `${base}/var_eps`)], `${base}/std`)], `${base}/invstd`);
    const xhat = emit.op('Mul', [centered, invstd], `${base}/xhat`);
    const results: (string | undefined)[] = node.inputs.map(() => undefined);
    if (needed[0]) {
      if (count < 2) throw new DmlError('E_MODEL', `${describeNode(node)}: normalises ${count} value per position; the graph trainer needs 2 or more`);
      const gScaled = emit.op('Mul', [g, inputOf(node, 1)], `${base}/dy_scale`);
      const projection = emit.op('Mul', [xhat, mean(emit.op('Mul', [gScaled, xhat], `${base}/dy_scale_xhat`), `${base}/mean_dy_scale_xhat`)], `${base}/projection`);
      const residual = emit.op('Sub', [emit.op('Sub', [gScaled, mean(gScaled, `${base}/mean_dy_scale`)], `${base}/dy_centered`), projection], `${base}/residual`);
      results[0] = emit.op('Mul', [residual, invstd], `${base}_input`);
    }
    if (needed[1]) results[1] = emit.reduceToShape(emit.op('Mul', [g, xhat], `${base}/dy_xhat`), dims, emit.dims(inputOf(node, 1)), `${base}_scale`);
    if (needed[2]) results[2] = emit.reduceToShape(g, dims, emit.dims(inputOf(node, 2)), `${base}_bias`);
    return results;
  },
};

/**
 * LpNormalization (`y = x / ‖x‖_p` along `axis`, p 1 or 2, no ε: ONNX's and onnxruntime's; tf2onnx and
 * sklearn-onnx write it, and dmlkit's shipped model ends with it), from the output y and the norm
 * recomputed from x:
 *
 *     p = 2:  dx = (dy - y Σ(dy y)) / ‖x‖₂,   p = 1:  dx = (dy - sign(x) Σ(dy y)) / ‖x‖₁
 *
 * A zero vector (norm 0) has no gradient there; PyTorch's `x / x.norm(p, dim, keepdim=True)` gives NaN too.
 */
const lpNormalization: GradientRule = {
  differentiableInputs: () => [0],
  backward: (emit, node, dys, needed) => {
    if (!needed[0]) return [undefined];
    const x = inputOf(node, 0);
    const rank = emit.dims(x).length;
    const rawAxis = intAttribute(node, 'axis', -1);
    const axes = emit.ints([rawAxis < 0 ? rawAxis + rank : rawAxis]);
    const p = intAttribute(node, 'p', 2);
    if (p !== 1 && p !== 2) throw new DmlError('E_MODEL', `${describeNode(node)}: p ${p}; ONNX's LpNormalization takes p 1 or 2`);
    const y = node.outputs[0] as string;
    const g = outputGradient(node, dys);
    const base = `${node.name}/grad`;
    const sum = (value: string, name: string): string => emit.op('ReduceSum', [value, axes], name, { keepdims: { i: 1 } });
    const norm = p === 2 ? emit.op('Sqrt', [sum(emit.op('Mul', [x, x], `${base}/squares`), `${base}/sum_squares`)], `${base}/norm`) : sum(emit.op('Abs', [x], `${base}/abs`), `${base}/norm`);
    const dot = sum(emit.op('Mul', [g, y], `${base}/dy_y`), `${base}/sum_dy_y`);
    const direction = p === 2 ? y : emit.op('Sign', [x], `${base}/sign`);
    const residual = emit.op('Sub', [g, emit.op('Mul', [direction, dot], `${base}/projection`)], `${base}/residual`);
    return [emit.op('Div', [residual, norm], base)];
  },
};

/** Rules of this file by operator type. */
export const NORMALIZATION_RULES: Readonly<Record<string, GradientRule>> = { BatchNormalization: batchNormalization, LayerNormalization: layerNormalization, LpNormalization: lpNormalization };
