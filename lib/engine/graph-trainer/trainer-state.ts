/**
 * @file Where the graph trainer's state lives between runs: its weights, optimiser slots and running
 * statistics, one onnxruntime tensor each.
 *
 * A run's output is fed to the next run as it is. On an execution provider with IO binding (WebGPU:
 * sessions opened with `deviceOutputs`, lib/onnx/session.ts) those outputs are `gpu-buffer` tensors,
 * so the state stays in device memory from step to step and only the batch goes in and the loss comes
 * out; it is moved back to JavaScript only when asked ({@link TrainerState.synchronize}, before
 * validation, checkpoints, export and write-backs: the device buffers are then released, and the next
 * step uploads the state once). On the CPU provider every tensor already is in JavaScript memory: the
 * same code, no copy, the same numbers.
 */
import { DmlError } from '../../errors.js';
import ort from '../../onnx/ort.js';

/** Whether `tensor` lives in device memory (read with `getData()`, released with `dispose()`). */
function onDevice(tensor: ort.Tensor): boolean {
  return tensor.location !== 'cpu' && tensor.location !== 'cpu-pinned';
}

/** The graph trainer's state tensors by name (see the file comment). */
export class TrainerState {
  private readonly tensors = new Map<string, ort.Tensor>();

  /** Whether `name` is part of the state. */
  has(name: string): boolean {
    return this.tensors.has(name);
  }

  /** Every name of the state, in the order first set. */
  names(): string[] {
    return [...this.tensors.keys()];
  }

  /** Sets `name` to `values` of `dims` (in JavaScript memory: an initial weight, a restored slot, a sum made in JavaScript). */
  setValues(name: string, values: Float32Array, dims: readonly number[]): void {
    this.set(name, new ort.Tensor('float32', values, [...dims]));
  }

  /** Sets `name` to a run's output `tensor`, wherever it lives; a replaced device tensor is released. */
  set(name: string, tensor: ort.Tensor): void {
    const previous = this.tensors.get(name);
    if (previous && previous !== tensor && onDevice(previous)) previous.dispose();
    this.tensors.set(name, tensor);
  }

  /** The tensor to feed for `name`. */
  tensor(name: string): ort.Tensor | undefined {
    return this.tensors.get(name);
  }

  /** The values of `name`, in JavaScript memory. E_ARG for a tensor in device memory: {@link synchronize} first. */
  value(name: string): Float32Array | undefined {
    const tensor = this.tensors.get(name);
    if (!tensor) return undefined;
    if (onDevice(tensor)) throw new DmlError('E_ARG', `${name} is in device memory since the last step; await the trainer's synchronize() before reading it`);
    return tensor.data as Float32Array;
  }

  /** Moves every device tensor to JavaScript memory (onnxruntime's `getData(true)`: downloaded, the device buffer released). */
  async synchronize(): Promise<void> {
    for (const tensor of this.tensors.values()) if (onDevice(tensor)) await tensor.getData(true);
  }

  /** Whether `tensor` is one of the state's. */
  holds(tensor: ort.Tensor): boolean {
    for (const t of this.tensors.values()) if (t === tensor) return true;
    return false;
  }

  /** Releases the device tensors; values in JavaScript memory stay readable. */
  release(): void {
    for (const [name, tensor] of [...this.tensors]) {
      if (!onDevice(tensor)) continue;
      tensor.dispose();
      this.tensors.delete(name);
    }
  }
}

/** Releases the device tensors of a run's `outputs` that `kept` does not hold (the outputs of a step that was not applied, activations used up). */
export function releaseUnkept(outputs: ort.InferenceSession.OnnxValueMapType, kept: TrainerState): void {
  for (const value of Object.values(outputs)) {
    const tensor = value as ort.Tensor;
    if (onDevice(tensor) && !kept.holds(tensor)) tensor.dispose();
  }
}
