/**
 * @file Gradient rules of windowed 2-D pooling.
 *
 * - MaxPool: the training forward also emits the node's Indices output (flat positions in the input,
 *   the first maximum of each window, as PyTorch picks); the backward scatter-adds each window's
 *   gradient there (overlapping windows add up).
 * - AveragePool: each output's gradient divided by its window's count (without the padding when
 *   `count_include_pad` is 0, as PyTorch's `count_include_pad=False`) and spread over its window by a
 *   depthwise ConvTranspose with a kernel of ones.
 */
import { DmlError } from '../../../errors.js';
import { describeNode, elementCount, intAttribute, type IrNode } from '../../graph/onnx-ir.js';
import { windowGeometry, type WindowGeometry } from '../../graph/shapes.js';
import type { StepEmitter } from '../emitter.js';
import type { ForwardRecord, GradientRule } from '../rule.js';
import { inputOf, outputGradient } from './elementwise.js';

function spatialOnly(emit: StepEmitter, node: IrNode): readonly number[] {
  const dims = emit.dims(inputOf(node, 0));
  if (dims.length !== 4) throw new DmlError('E_MODEL', `${describeNode(node)}: the graph trainer differentiates 2-D pooling; this one has a rank-${dims.length} input`);
  return dims;
}

const maxPool: GradientRule = {
  differentiableInputs: () => [0],
  forward: (emit, node): ForwardRecord => {
    spatialOnly(emit, node);
    if (intAttribute(node, 'storage_order', 0) !== 0) throw new DmlError('E_MODEL', `${describeNode(node)}: storage_order 1 (column-major indices) is not supported`);
    const existing = node.outputs[1];
    const indices = existing || emit.unique(`${node.name}/indices`);
    emit.declareType(indices, 'int64');
    emit.copy(node, [node.outputs[0] as string, indices]);
    return { saved: { indices }, stateUpdates: [] };
  },
  backward: (emit, node, dys, needed, record) => {
    if (!needed[0]) return [undefined];
    const dims = spatialOnly(emit, node);
    const base = `${node.name}/grad`;
    const indices = record.saved.indices as string;
    const flatCount = elementCount(emit.dims(node.outputs[0] as string));
    const scattered = emit.op('ScatterElements', [
      emit.zeros([elementCount(dims)]),
      emit.reshape(indices, emit.dims(node.outputs[0] as string), [flatCount], `${base}/indices_flat`),
      emit.reshape(outputGradient(node, dys), emit.dims(node.outputs[0] as string), [flatCount], `${base}/g_flat`),
    ], `${base}/scattered`, { axis: { i: 0 }, reduction: { s: 'add' } });
    return [emit.reshape(scattered, [elementCount(dims)], dims, base)];
  },
};

/** 1 / (the number of input positions each output window averages), per output position. */
function inverseCounts(geometry: WindowGeometry, spatial: readonly number[], includePad: boolean): number[] {
  const [outH, outW] = geometry.output as [number, number];
  const values: number[] = [];
  for (let i = 0; i < outH; i++) {
    for (let j = 0; j < outW; j++) {
      const count = [i, j].map((o, axis) => {
        const start = o * (geometry.strides[axis] as number) - (geometry.pads[axis] as number);
        const end = start + (geometry.kernel[axis] as number);
        const lo = includePad ? -(geometry.pads[axis] as number) : 0;
        const hi = includePad ? (spatial[axis] as number) + (geometry.pads[axis + 2] as number) : (spatial[axis] as number);
        return Math.min(end, hi) - Math.max(start, lo);
      });
      values.push(1 / ((count[0] as number) * (count[1] as number)));
    }
  }
  return values;
}

const averagePool: GradientRule = {
  differentiableInputs: () => [0],
  backward: (emit, node, dys, needed) => {
    if (!needed[0]) return [undefined];
    const dims = spatialOnly(emit, node);
    if (intAttribute(node, 'ceil_mode', 0) !== 0) throw new DmlError('E_MODEL', `${describeNode(node)}: AveragePool with ceil_mode 1 is not supported by the graph trainer`);
    const geometry = windowGeometry(node, dims);
    const [, channels, h, w] = dims as [number, number, number, number];
    const [outH, outW] = geometry.output as [number, number];
    const base = `${node.name}/grad`;
    const weights = inverseCounts(geometry, [h, w], intAttribute(node, 'count_include_pad', 0) === 1);
    const scaled = emit.op('Mul', [outputGradient(node, dys), emit.floats(`${base}/inverse_counts`, [1, 1, outH, outW], weights)], `${base}/scaled`);
    const ones = emit.floats(`${base}/ones`, [channels, 1, ...geometry.kernel], new Array<number>(channels * elementCount(geometry.kernel)).fill(1));
    const outputPadding = [h, w].map((size, i) => size - ((geometry.strides[i] as number) * ((i === 0 ? outH : outW) - 1) + (geometry.kernel[i] as number) - (geometry.pads[i] as number) - (geometry.pads[i + 2] as number)));
    return [emit.op('ConvTranspose', [scaled, ones], base, {
      group: { i: channels },
      kernel_shape: { ints: geometry.kernel },
      strides: { ints: geometry.strides },
      pads: { ints: geometry.pads },
      output_padding: { ints: outputPadding },
    })];
  },
};

/** Rules of this file by operator type. */
export const POOLING_RULES: Readonly<Record<string, GradientRule>> = { MaxPool: maxPool, AveragePool: averagePool };
