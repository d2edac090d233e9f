/**
 * @file Tensors as they cross threads and the session runners' boundary: the inputs of a run as plain
 * typed arrays ({@link RunInputs}), turned into onnxruntime tensors by {@link ortFeeds}, and outputs
 * as {@link PlainTensor}s by {@link plainOutputs}.
 */
import ort from './ort.js';
import type { IoValueInfo } from './session.js';
import { fromHalfArray, toHalfArray } from '../util/half-float.js';

/** A tensor as it crosses threads: element type, dimensions and data. */
export interface PlainTensor {
  type: ort.Tensor.Type;
  dims: readonly number[];
  data: ort.Tensor.DataType;
}

/**
 * The inputs of one run, by input name: float32 (a model's image input), or uint8 (the crops an input
 * stage normalises: onnxruntime/staged-session.ts).
 */
export type RunInputs = Record<string, { data: Float32Array | Uint8Array; dims: readonly number[] }>;

/**
 * {@link RunInputs} as onnxruntime tensors: uint8 as it is; float32, or cast to float16 when
 * `declared` (the model's declared inputs) says the input takes float16, so that half-precision exports
 * (`model_fp16.onnx`) run as they are.
 */
export function ortFeeds(inputs: RunInputs, declared: readonly IoValueInfo[] = []): Record<string, ort.Tensor> {
  const feeds: Record<string, ort.Tensor> = {};
  for (const [name, { data, dims }] of Object.entries(inputs)) {
    if (data instanceof Uint8Array) {
      feeds[name] = new ort.Tensor('uint8', data, dims);
      continue;
    }
    const type = declared.find((d) => d.name === name)?.type;
    feeds[name] = type === 'float16' ? new ort.Tensor('float16', toHalfArray(data), dims) : new ort.Tensor('float32', data, dims);
  }
  return feeds;
}

/**
 * The outputs named in `outputNames` of an onnxruntime result, as {@link PlainTensor}s; float16
 * outputs are widened to float32 (exactly), so callers see float32 whatever the model's precision.
 */
export function plainOutputs(result: ort.InferenceSession.ReturnType, outputNames: string[]): Record<string, PlainTensor> {
  const outputs: Record<string, PlainTensor> = {};
  for (const name of outputNames) {
    const out = result[name];
    if (out === undefined) continue;
    outputs[name] =
      out.type === 'float16' && out.data instanceof Uint16Array
        ? { type: 'float32', dims: out.dims, data: fromHalfArray(out.data) }
        : { type: out.type, dims: out.dims, data: out.data };
  }
  return outputs;
}

