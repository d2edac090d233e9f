/**
 * @file The gradient rule of 2-D Conv (strides, pads or auto_pad, dilations, groups, depthwise
 * included), written with ONNX's own convolutions:
 *
 * - input: `ConvTranspose(dY, W)` with the forward's strides, pads, dilations and groups, and the
 *   output padding that restores the input size (the rows a strided window never reached);
 * - weight: a Conv of the input with dY as the kernel, batch and channels swapped. For G groups of
 *   c_in / G input and c_out / G output channels the input is laid out [c_in / G, G N, H, W] and dY as
 *   [c_out, N, h, w], so a grouped Conv (group G) sums over the batch within each group; its dilation
 *   is the forward stride and its stride the forward dilation. The result [c_in / G, c_out, k', k'] is
 *   cut to the kernel size (k' exceeds k when strided windows left rows unread) and transposed to
 *   [c_out, c_in / G, kh, kw];
 * - bias: dY summed over batch and positions.
 */
import { DmlError } from '../../../errors.js';
import { describeNode, intAttribute } from '../../graph/onnx-ir.js';
import { windowGeometry } from '../../graph/shapes.js';
import type { GradientRule } from '../rule.js';
import { inputOf, outputGradient } from './elementwise.js';

const conv: GradientRule = {
  differentiableInputs: (node) => node.inputs.map((_, i) => i),
  backward: (emit, node, dys, needed) => {
    const g = outputGradient(node, dys);
    const x = inputOf(node, 0);
    const w = inputOf(node, 1);
    const xDims = emit.dims(x);
    const wDims = emit.dims(w);
    const yDims = emit.dims(node.outputs[0] as string);
    if (xDims.length !== 4) throw new DmlError('E_MODEL', `${describeNode(node)}: the graph trainer differentiates 2-D convolutions; this one has a rank-${xDims.length} input`);
    const geometry = windowGeometry(node, xDims, wDims.slice(2));
    const groups = intAttribute(node, 'group', 1);
    const [n, cIn, h, wd] = xDims as [number, number, number, number];
    const cOut = wDims[0] as number;
    const [outH, outW] = yDims.slice(2) as [number, number];
    const base = `${node.name}/grad`;
    const results: (string | undefined)[] = node.inputs.map(() => undefined);
    if (needed[0]) {
      const outputPadding = [h, wd].map((size, i) => {
        const reached = (geometry.strides[i] as number) * ((i === 0 ? outH : outW) - 1) + ((geometry.kernel[i] as number) - 1) * (geometry.dilations[i] as number) + 1 - (geometry.pads[i] as number) - (geometry.pads[i + 2] as number);
        return size - reached;
      });
      results[0] = emit.op('ConvTranspose', [g, w], `${base}_input`, {
        group: { i: groups },
        kernel_shape: { ints: geometry.kernel },
        strides: { ints: geometry.strides },
        dilations: { ints: geometry.dilations },
        pads: { ints: geometry.pads },
        output_padding: { ints: outputPadding },
      });
    }
    if (needed[1]) {
      const cInGroup = cIn / groups;
      const grouped = emit.op('Transpose', [emit.reshape(x, xDims, [n, groups, cInGroup, h, wd], `${base}_weight/x5`)], `${base}_weight/x_t`, { perm: { ints: [2, 1, 0, 3, 4] } });
      const input = emit.reshape(grouped, [cInGroup, groups, n, h, wd], [cInGroup, groups * n, h, wd], `${base}_weight/x_groups`);
      const kernel = emit.op('Transpose', [g], `${base}_weight/dy_t`, { perm: { ints: [1, 0, 2, 3] } });
      const correlation = emit.op('Conv', [input, kernel], `${base}_weight/correlation`, {
        group: { i: groups },
        kernel_shape: { ints: [outH, outW] },
        strides: { ints: geometry.dilations },
        dilations: { ints: geometry.strides },
        pads: { ints: geometry.pads },
      });
      const reach = [h, wd].map((size, i) => Math.floor((size + (geometry.pads[i] as number) + (geometry.pads[i + 2] as number) - (geometry.strides[i] as number) * ((i === 0 ? outH : outW) - 1) - 1) / (geometry.dilations[i] as number)) + 1);
      const cut = reach.some((r, i) => r !== geometry.kernel[i])
        ? emit.op('Slice', [correlation, emit.ints([0, 0]), emit.ints(geometry.kernel), emit.ints([2, 3])], `${base}_weight/cut`)
        : correlation;
      results[1] = emit.op('Transpose', [cut], `${base}_weight`, { perm: { ints: [1, 0, 2, 3] } });
      if ((wDims[1] as number) !== cInGroup || (wDims[0] as number) !== cOut) throw new DmlError('E_MODEL', `${describeNode(node)}: weight [${wDims.join(', ')}] does not fit ${cIn} input channels in ${groups} groups`);
    }
    if (needed[2]) results[2] = emit.op('ReduceSum', [g, emit.ints([0, 2, 3])], `${base}_bias`, { keepdims: { i: 0 } });
    return results;
  },
};

/** Rules of this file by operator type. */
export const CONVOLUTION_RULES: Readonly<Record<string, GradientRule>> = { Conv: conv };
