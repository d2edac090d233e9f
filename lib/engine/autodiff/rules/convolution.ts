/**
 * @file The gradient rule of 2-D Conv (strides, pads or auto_pad, dilations, groups, depthwise
 * included), written with ONNX's own convolutions:
 *
 * - input: for a stride-1 convolution, a Conv of dY with the kernel transposed (per group) and flipped
 *   in space, padded by (k - 1) d - p on each side; otherwise `ConvTranspose(dY, W)` with the forward's
 *   strides, pads, dilations and groups, and the output padding that restores the input size (the rows
 *   a strided window never reached);
 * - weight: im2col and a matrix product. A convolution of each input channel with an identity kernel
 *   (the forward's strides, pads, dilations) lays out every window's values; the products with dY: per
 *   image and group, summed over the batch, where a layer has few weights next to its activations
 *   (early, wide layers; patches [N, G, c_in / G * kh kw, h w] from a 2-D Conv of the N x c_in planes),
 *   or with (image, position) as the summed axis of one product per group (deep, narrow layers, whose
 *   per-image products would write N x c_in kk x c_out values: 300 MB per layer of a ResNet's last
 *   stage; patches [c_in, kh kw, N, h w] from a 3-D Conv with the batch as depth, already in the
 *   product's layout: transposing the 2-D form took 8-11 ms of Recipe R's step on one thread, the 3-D
 *   Conv costs what the 2-D one did; dY moved to [c_out, N, h w] by whole rows of positions, 10x faster
 *   than the element-wise transpose to [N h w, c_out]); the result laid out as [c_out, c_in / G, kh, kw]. (A Conv of the input with dY
 *   as its kernel took 7x the forward's time: onnxruntime's convolution is not made for an h x w kernel.)
 * - bias: dY summed over batch and positions.
 *
 * Compiled for onnxruntime's CPU provider (`emit.nchwcBlock`), the forward convolution, the input
 * gradient (per output phase for a strided one; a dilated one as the flipped Conv above) and the weight
 * gradient of an ungrouped convolution run in its blocked layout instead (blocked-convolution.ts), where
 * the channels, the sizes and the batch allow it.
 */
import { DmlError } from '../../../errors.js';
import { NCHWC_DOMAIN } from '../../../onnx/nchwc.js';
import { describeNode, intAttribute } from '../../graph/onnx-ir.js';
import { windowGeometry } from '../../graph/shapes.js';
import { PLAIN_FORWARD, type GradientRule } from '../rule.js';
import { blockedConvolution, blockedConvolutionFits, blockedInput, blockedInputGradient, blockedWeightGradient, blockedWeightGradientFits } from './blocked-convolution.js';
import { inputOf, outputGradient } from './elementwise.js';

const conv: GradientRule = {
  differentiableInputs: (node) => node.inputs.map((_, i) => i),
  forward: (emit, node) => {
    const x = inputOf(node, 0);
    const xDims = emit.dims(x);
    const wDims = emit.dims(inputOf(node, 1));
    const channels = xDims[1] as number;
    if (xDims.length === 4 && blockedConvolutionFits(emit, channels, intAttribute(node, 'group', 1))) {
      const geometry = windowGeometry(node, xDims, wDims.slice(2));
      blockedConvolution(emit, blockedInput(emit, x, channels, `${node.name}/x`), channels, inputOf(node, 1), wDims, node.inputs[2] ?? '', geometry, `${node.name}/blocked`, node.outputs[0]);
    } else {
      emit.copy(node);
    }
    return PLAIN_FORWARD;
  },
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
    // dY reordered into the blocked layout once, for both gradients that read it so.
    let dyReordered: string | undefined;
    const reorderedGradient = (): string => (dyReordered ??= emit.opOfDomain(NCHWC_DOMAIN, 'ReorderInput', [g], `${base}/dy_blocked`));
    // Ungrouped and undilated, on the CPU's blocked kernels: one blocked convolution per output phase.
    const phasedInputGradient = needed[0] && groups === 1 && emit.nchwcBlock !== undefined ? blockedInputGradient(emit, g, reorderedGradient, yDims, w, wDims, xDims, geometry, `${base}_input`) : undefined;
    if (phasedInputGradient !== undefined) {
      results[0] = phasedInputGradient;
    } else if (needed[0]) {
      const span = geometry.kernel.map((k, i) => (k - 1) * (geometry.dilations[i] as number));
      const flippedPads = [...span, ...span].map((extent, i) => extent - (geometry.pads[i] as number));
      if (geometry.strides.every((st) => st === 1) && flippedPads.every((p) => p >= 0)) {
        // Stride 1: a plain Conv of dY with the kernel transposed per group and flipped in space (faster
        // than onnxruntime's ConvTranspose, which scatters through col2im).
        const [kh, kw] = geometry.kernel as [number, number];
        const cInGroup = cIn / groups;
        const cOutGroup = cOut / groups;
        // The spatial flip as a product with a constant permutation matrix (exact: one 1 per column),
        // far faster in onnxruntime than Slice with negative steps or Gather; then the per-group transpose.
        const kk = kh * kw;
        const permutation = Array.from({ length: kk * kk }, (_, i) => (Math.floor(i / kk) === kk - 1 - (i % kk) ? 1 : 0));
        const flippedRows = emit.op('MatMul', [emit.reshape(w, wDims, [cOut * cInGroup, kk], `${base}_input/w_rows`), emit.floats(`${base}_input/flip_${kh}x${kw}`, [kk, kk], permutation)], `${base}_input/w_flipped_rows`);
        const perGroup = emit.op('Transpose', [emit.reshape(flippedRows, [cOut * cInGroup, kk], [groups, cOutGroup, cInGroup, kh, kw], `${base}_input/w5`)], `${base}_input/w_t`, { perm: { ints: [0, 2, 1, 3, 4] } });
        const flipped = emit.reshape(perGroup, [groups, cInGroup, cOutGroup, kh, kw], [cIn, cOutGroup, kh, kw], `${base}_input/w_flipped`);
        const inputGeometry = { kernel: geometry.kernel, strides: [1, 1], dilations: geometry.dilations, pads: flippedPads };
        if (blockedConvolutionFits(emit, cOut, groups)) {
          const dyBlocked = cOut < (emit.nchwcBlock as number) ? g : reorderedGradient();
          results[0] = blockedConvolution(emit, dyBlocked, cOut, flipped, [cIn, cOut, kh, kw], '', inputGeometry, `${base}_input`);
        } else {
          results[0] = emit.op('Conv', [g, flipped], `${base}_input`, {
            group: { i: groups },
            kernel_shape: { ints: inputGeometry.kernel },
            strides: { ints: inputGeometry.strides },
            dilations: { ints: inputGeometry.dilations },
            pads: { ints: inputGeometry.pads },
          });
        }
      } else {
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
    }
    if (needed[1] && blockedWeightGradientFits(emit, n, cOut, groups)) {
      results[1] = blockedWeightGradient(emit, x, xDims, reorderedGradient(), yDims, geometry, `${base}_weight`);
    } else if (needed[1]) {
      const cInGroup = cIn / groups;
      const cOutGroup = cOut / groups;
      const [kh, kw] = geometry.kernel as [number, number];
      const kk = kh * kw;
      const positions = outH * outW;
      const b = `${base}_weight`;
      if ((wDims[1] as number) !== cInGroup) throw new DmlError('E_MODEL', `${describeNode(node)}: weight [${wDims.join(', ')}] does not fit ${cIn} input channels in ${groups} groups`);
      // im2col by a convolution with an identity kernel [kk, 1, kh, kw] (the forward's strides, pads, dilations).
      const identityValues = new Array<number>(kk * kk).fill(0).map((_, i) => (Math.floor(i / kk) === i % kk ? 1 : 0));
      const window = { strides: { ints: geometry.strides }, dilations: { ints: geometry.dilations }, pads: { ints: geometry.pads } };
      const gradientGroups = emit.reshape(g, yDims, [n, groups, cOutGroup, positions], `${b}/dy_rows`);
      let outFirst: string;
      if (cOutGroup * cInGroup * kk <= (cInGroup * kk + cOutGroup) * positions) {
        // Few weights per image (early, wide layers): every input channel's patches per image, [N * c_in, kk,
        // h, w], and one product per image and group, [c_out/G, c_in/G kk] (onnxruntime fuses the transpose
        // into the product), summed over the batch.
        const patches = emit.op('Conv', [emit.reshape(x, xDims, [n * cIn, 1, h, wd], `${b}/x_channels`), emit.floats(`${b}/identity_${kh}x${kw}`, [kk, 1, kh, kw], identityValues)], `${b}/patches`, {
          group: { i: 1 },
          kernel_shape: { ints: geometry.kernel },
          ...window,
        });
        const patchGroups = emit.reshape(patches, [n * cIn, kk, outH, outW], [n, groups, cInGroup * kk, positions], `${b}/patch_rows`);
        const perImage = emit.op('MatMul', [gradientGroups, emit.op('Transpose', [patchGroups], `${b}/patches_t`, { perm: { ints: [0, 1, 3, 2] } })], `${b}/per_image`);
        outFirst = emit.op('ReduceSum', [perImage, emit.ints([0])], `${b}/summed`, { keepdims: { i: 0 } });
      } else {
        // Many weights per image (deep, narrow layers): (image, position) as the summed axis of one product per
        // group. The patches come straight in that layout from a 3-D convolution of the input with the batch
        // as its depth, [c_in, 1, N, h, w] -> [c_in, kk, N, out_h, out_w] (a depth-1 kernel), which spares
        // the transpose of the whole patch tensor (onnxruntime's Transpose runs on one thread).
        const depthwise = emit.reshape(emit.op('Transpose', [x], `${b}/x_t`, { perm: { ints: [1, 0, 2, 3] } }), [cIn, n, h, wd], [cIn, 1, n, h, wd], `${b}/x_depth`);
        const patches = emit.op('Conv', [depthwise, emit.floats(`${b}/identity_1x${kh}x${kw}`, [kk, 1, 1, kh, kw], identityValues)], `${b}/patches`, {
          group: { i: 1 },
          kernel_shape: { ints: [1, ...geometry.kernel] },
          strides: { ints: [1, ...geometry.strides] },
          dilations: { ints: [1, ...geometry.dilations] },
          pads: { ints: [0, geometry.pads[0] as number, geometry.pads[1] as number, 0, geometry.pads[2] as number, geometry.pads[3] as number] },
        });
        const patchRows = emit.reshape(patches, [cIn, kk, n, outH, outW], [groups, cInGroup * kk, n * positions], `${b}/patch_matrix`);
        // dY as [G, c_out/G, N h w]: a transpose that moves whole rows of positions; the product with the
        // patches' transpose (fused into the product by onnxruntime) is then [G, c_out/G, c_in/G kk] itself.
        const gradientRows = emit.reshape(emit.op('Transpose', [gradientGroups], `${b}/dy_t`, { perm: { ints: [1, 2, 0, 3] } }), [groups, cOutGroup, n, positions], [groups, cOutGroup, n * positions], `${b}/dy_matrix`);
        outFirst = emit.op('MatMul', [gradientRows, emit.op('Transpose', [patchRows], `${b}/patches_t`, { perm: { ints: [0, 2, 1] } })], `${b}/product`);
      }
      results[1] = emit.reshape(outFirst, [groups, cOutGroup, cInGroup * kk], [cOut, cInGroup, kh, kw], b);
    }
    if (needed[2]) results[2] = emit.op('ReduceSum', [g, emit.ints([0, 2, 3])], `${base}_bias`, { keepdims: { i: 0 } });
    return results;
  },
};

/** Rules of this file by operator type. */
export const CONVOLUTION_RULES: Readonly<Record<string, GradientRule>> = { Conv: conv };
