/**
 * @file Gradient rules of operators that move values without computing: Flatten, Reshape, Squeeze,
 * Unsqueeze (the gradient reshaped back), Transpose (transposed back), Expand (summed back), Concat
 * (split), Split (concatenated, zeros for parts without a gradient), Slice with step 1 (padded back
 * with zeros), constant Pad (sliced back) and Gather with constant indices (scattered back).
 */
import { DmlError } from '../../../errors.js';
import { describeNode, intAttribute, intsAttribute } from '../../graph/onnx-ir.js';
import { sliceGeometry, splitSizes } from '../../graph/shapes.js';
import type { GradientRule } from '../rule.js';
import { inputOf, outputGradient } from './elementwise.js';

const reshapeBack: GradientRule = {
  differentiableInputs: () => [0],
  backward: (emit, node, dys, needed) => [
    needed[0] ? emit.reshape(outputGradient(node, dys), emit.dims(node.outputs[0] as string), emit.dims(inputOf(node, 0)), `${node.name}/grad`) : undefined,
  ],
};

const transpose: GradientRule = {
  differentiableInputs: () => [0],
  backward: (emit, node, dys, needed) => {
    if (!needed[0]) return [undefined];
    const rank = emit.dims(inputOf(node, 0)).length;
    const perm = intsAttribute(node, 'perm', Array.from({ length: rank }, (_, i) => rank - 1 - i));
    return [emit.op('Transpose', [outputGradient(node, dys)], `${node.name}/grad`, { perm: { ints: perm.map((_, i) => perm.indexOf(i)) } })];
  },
};

const expand: GradientRule = {
  differentiableInputs: () => [0],
  backward: (emit, node, dys, needed) => [
    needed[0] ? emit.reduceToShape(outputGradient(node, dys), emit.dims(node.outputs[0] as string), emit.dims(inputOf(node, 0)), `${node.name}/grad`) : undefined,
  ],
};

const concat: GradientRule = {
  differentiableInputs: (node) => node.inputs.map((_, i) => i),
  backward: (emit, node, dys, needed) => {
    const rank = emit.dims(node.outputs[0] as string).length;
    const rawAxis = intAttribute(node, 'axis', 0);
    const axis = rawAxis < 0 ? rawAxis + rank : rawAxis;
    const sizes = node.inputs.map((name) => emit.dims(name)[axis] as number);
    const parts = emit.ops('Split', [outputGradient(node, dys), emit.ints(sizes)], node.inputs.map((_, i) => `${node.name}/grad${i}`), { axis: { i: axis } });
    return parts.map((p, i) => (needed[i] ? p : undefined));
  },
};

const split: GradientRule = {
  differentiableInputs: () => [0],
  backward: (emit, node, dys, needed) => {
    if (!needed[0]) return [undefined];
    const dims = emit.dims(inputOf(node, 0));
    const rawAxis = intAttribute(node, 'axis', 0);
    const axis = rawAxis < 0 ? rawAxis + dims.length : rawAxis;
    const sizes = splitSizes(node, dims[axis] as number, (i) => emit.constant(node.inputs[i] ?? ''));
    const parts = sizes.map((size, i) => dys[i] ?? emit.zeros(dims.map((d, k) => (k === axis ? size : d))));
    return [emit.op('Concat', parts, `${node.name}/grad`, { axis: { i: axis } })];
  },
};

const slice: GradientRule = {
  differentiableInputs: () => [0],
  backward: (emit, node, dys, needed) => {
    if (!needed[0]) return [undefined];
    const dims = emit.dims(inputOf(node, 0));
    const geometry = sliceGeometry(node, dims, (i) => emit.constant(node.inputs[i] ?? ''));
    if (geometry.steps.some((s) => s !== 1)) throw new DmlError('E_MODEL', `${describeNode(node)}: the graph trainer differentiates Slice with step 1 only`);
    const after = dims.map((d, i) => d - (geometry.starts[i] as number) - (geometry.dims[i] as number));
    return [emit.op('Pad', [outputGradient(node, dys), emit.ints([...geometry.starts, ...after])], `${node.name}/grad`)];
  },
};

const pad: GradientRule = {
  differentiableInputs: () => [0],
  backward: (emit, node, dys, needed) => {
    if (!needed[0]) return [undefined];
    const mode = node.attributes.get('mode');
    if (mode && 's' in mode && mode.s !== 'constant') throw new DmlError('E_MODEL', `${describeNode(node)}: the graph trainer differentiates constant padding only, not '${mode.s}'`);
    const dims = emit.dims(inputOf(node, 0));
    const pads = emit.constant(inputOf(node, 1));
    if (!pads) throw new DmlError('E_MODEL', `${describeNode(node)}: its pads must be constant`);
    const begin = Array.from(pads.data.slice(0, dims.length));
    return [emit.op('Slice', [outputGradient(node, dys), emit.ints(begin), emit.ints(dims.map((d, i) => d + (begin[i] as number))), emit.ints(dims.map((_, i) => i))], `${node.name}/grad`)];
  },
};

/**
 * Gather with constant indices (a class token taken from a sequence, rows picked by a fixed list): the
 * gradient is scattered back to the gathered positions and zero elsewhere; positions gathered more
 * than once add up (ScatterND with reduction `add`).
 */
const gather: GradientRule = {
  differentiableInputs: () => [0],
  backward: (emit, node, dys, needed) => {
    if (!needed[0]) return [undefined];
    const base = `${node.name}/grad`;
    const dims = emit.dims(inputOf(node, 0));
    const indices = emit.constant(inputOf(node, 1));
    if (!indices) throw new DmlError('E_MODEL', `${describeNode(node)}: the graph trainer differentiates Gather with constant indices only`);
    const rawAxis = intAttribute(node, 'axis', 0);
    const axis = rawAxis < 0 ? rawAxis + dims.length : rawAxis;
    const size = dims[axis] as number;
    const picked = Array.from(indices.data, (i) => (Number(i) < 0 ? Number(i) + size : Number(i)));
    // The gradient with the gathered axis in front, as [picked.length, ...the other axes].
    const rest = dims.filter((_, i) => i !== axis);
    const perm = [axis, ...dims.map((_, i) => i).filter((i) => i !== axis)];
    const rows = emit.reshape(outputGradient(node, dys), emit.dims(node.outputs[0] as string), [...dims.slice(0, axis), picked.length, ...dims.slice(axis + 1)], `${base}/rows`);
    const front = emit.op('Transpose', [rows], `${base}/front`, { perm: { ints: perm } });
    const unique = new Set(picked).size === picked.length;
    const scattered = emit.op('ScatterND', [emit.zeros([size, ...rest]), emit.int64s(`${base}/indices`, [picked.length, 1], picked), front], `${base}/scattered`, unique ? {} : { reduction: { s: 'add' } });
    return [emit.op('Transpose', [scattered], base, { perm: { ints: perm.map((_, i) => perm.indexOf(i)) } })];
  },
};

/** Rules of this file by operator type. */
export const SHAPE_RULES: Readonly<Record<string, GradientRule>> = {
  Flatten: reshapeBack,
  Reshape: reshapeBack,
  Squeeze: reshapeBack,
  Unsqueeze: reshapeBack,
  Transpose: transpose,
  Expand: expand,
  Concat: concat,
  Split: split,
  Slice: slice,
  Pad: pad,
  Gather: gather,
};
