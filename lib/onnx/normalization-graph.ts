/**
 * @file The normalisation of a batch as a small ONNX graph, to run in front of a model on its device:
 * uint8 HWC crops go in (a quarter of the bytes of the float tensor), the model's float32 input comes
 * out, with exactly the values {@link toTensor} writes.
 *
 * Graph: `pixels` uint8 [N, H, W, C] -> Cast to int32 -> Add the channel's offset (0, 256,
 * 512) -> Gather from {@link normalizationTable}'s `C x 256` float32 values -> [N, H, W, C] float32,
 * then Transpose to [N, C, H, W] for an NCHW model. A lookup, not `(x / 255 - mean) / std` in float32
 * arithmetic, so the values are toTensor's bit for bit on every provider (the float32 arithmetic would
 * differ from toTensor's float64 in the last bit for some pixel values). int32 throughout, not int64,
 * which WebGPU providers run natively.
 *
 * Measured on the CPU provider (scripts/experiments/normalisation-graph-cost.ts): 1.2-1.4 ms per 224x224
 * image against 0.3-0.5 ms for toTensor in JavaScript, so the embedder uses the graph on a GPU only
 * (lib/embed/embedder.ts, `normalization`).
 */
import { encodeModel, floatTensor, int32Tensor, node, tensorValueInfo } from './builder.js';
import type { Preprocessing } from '../image/preprocessing.js';
import { normalizationTable } from '../image/to-tensor.js';
import { validatePreprocessing } from '../image/validate.js';

/** The graph's input: uint8 [N, H, W, C] crops, as the eval transform makes them. */
export const NORMALIZATION_GRAPH_INPUT = 'pixels';

/** The graph's output: the model's float32 input in its layout. */
export const NORMALIZATION_GRAPH_OUTPUT = 'normalized';

/** The ONNX model that normalises uint8 crops as `preprocessing` says (see the file comment). */
export function normalizationGraph(preprocessing: Preprocessing): Uint8Array {
  validatePreprocessing(preprocessing);
  const { height, width, channels, layout } = preprocessing;
  const table = normalizationTable(preprocessing, channels);
  const hwc = layout === 'NHWC' ? NORMALIZATION_GRAPH_OUTPUT : 'hwc';
  const nodes = [
    node('Cast', [NORMALIZATION_GRAPH_INPUT], ['values'], { to: { i: 6 } }), // INT32
    node('Add', ['values', 'channel_offsets'], ['indices']),
    node('Gather', ['table', 'indices'], [hwc], { axis: { i: 0 } }),
    ...(layout === 'NCHW' ? [node('Transpose', [hwc], [NORMALIZATION_GRAPH_OUTPUT], { perm: { ints: [0, 3, 1, 2] } })] : []),
  ];
  return encodeModel({
    graphName: 'dmlkit_normalization',
    inputs: [tensorValueInfo(NORMALIZATION_GRAPH_INPUT, 'uint8', ['N', height, width, channels])],
    outputs: [tensorValueInfo(NORMALIZATION_GRAPH_OUTPUT, 'float32', layout === 'NCHW' ? ['N', channels, height, width] : ['N', height, width, channels])],
    nodes,
    initializers: [
      floatTensor('table', [channels * 256], table),
      int32Tensor('channel_offsets', [channels], Array.from({ length: channels }, (_, c) => c * 256)),
    ],
  });
}
