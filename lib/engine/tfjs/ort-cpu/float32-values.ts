/**
 * @file The values of a float32 tensor as a `Float32Array`, for the ort-cpu kernels (and the fused
 * optimiser) that read a cpu-family backend's storage directly.
 *
 * A float32 tensor's storage is not always a `Float32Array` on tfjs's cpu backend: its `Cast` from
 * `bool` or `int32` to `float32` loses nothing, so it returns the input's storage unchanged (a
 * `Uint8Array` or an `Int32Array`) under the new dtype. The gradient of a global max or min is such a
 * tensor (`dy * cast(equal(x, max(x)), 'float32')`), and so is any mask cast to float32. tfjs's own
 * loops index either kind the same way, but onnxruntime refuses anything but a `Float32Array` for a
 * float32 input (`A float32 tensor's data must be type of function Float32Array()`), and kernels that
 * reinterpret the bits (`new Int32Array(values.buffer)`) or copy them into WebAssembly memory would
 * read garbage. Every such read goes through {@link float32Values}.
 */
import type * as tf from '@tensorflow/tfjs';
import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';

/**
 * The values of float32 tensor `t` on `backend` as a `Float32Array`: the backend's own array when it
 * is one (no copy), else a float32 copy of the stored integers (a `Cast` from bool or int32 that kept
 * its input's array). Read only: the copy is not written back to the backend.
 */
export function float32Values(backend: MathBackendCPU, t: tf.TensorInfo): Float32Array {
  const values = backend.data.get(t.dataId).values;
  if (values instanceof Float32Array) return values;
  return Float32Array.from(values as ArrayLike<number>);
}
