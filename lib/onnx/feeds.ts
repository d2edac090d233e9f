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
 * The buffers of `inputs` to transfer when they cross threads: every one but those in shared memory
 * (a SharedArrayBuffer is shared, not transferred, and cannot be in a transfer list).
 */
export function transferableBuffers(inputs: RunInputs): ArrayBuffer[] {
  const buffers: ArrayBuffer[] = [];
  for (const { data } of Object.values(inputs)) if (!(data.buffer instanceof SharedArrayBuffer)) buffers.push(data.buffer);
  return buffers;
}

/**
 * Private copies of inputs that live in shared memory, for onnxruntime-node, which refuses a typed array
 * on a SharedArrayBuffer ("Invalid argument"). Callers share their batch arrays with a session thread
 * instead of transferring them because V8 counts every transferred-in buffer as newly allocated memory
 * and collects garbage after a few of them (a 19 MB batch: a third of the embedder's CPU time on 2
 * cores, docs/benchmarks.md); shared memory is not counted. The copies are pooled by length, so run
 * after run copies into the same few arrays: one per run in flight.
 */
export class PrivateInputCopies {
  readonly #free = new Map<string, Array<Float32Array | Uint8Array>>();

  /**
   * `inputs` with every shared-memory input copied into a private array of this pool (the others as
   * they are), and `release`, which gives the copies back once the run no longer needs them.
   */
  of(inputs: RunInputs): { inputs: RunInputs; release: () => void } {
    const taken: Array<Float32Array | Uint8Array> = [];
    const result: RunInputs = {};
    for (const [name, input] of Object.entries(inputs)) {
      if (!(input.data.buffer instanceof SharedArrayBuffer)) {
        result[name] = input;
        continue;
      }
      const key = `${input.data.constructor.name}:${input.data.length}`;
      const copy = this.#free.get(key)?.pop() ?? (input.data instanceof Uint8Array ? new Uint8Array(input.data.length) : new Float32Array(input.data.length));
      copy.set(input.data);
      taken.push(copy);
      result[name] = { data: copy, dims: input.dims };
    }
    const release = (): void => {
      for (const copy of taken.splice(0)) {
        const key = `${copy.constructor.name}:${copy.length}`;
        this.#free.set(key, [...(this.#free.get(key) ?? []), copy]);
      }
    };
    return { inputs: result, release };
  }
}

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

