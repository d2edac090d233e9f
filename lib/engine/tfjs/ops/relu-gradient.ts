/**
 * @file ReLU's gradient as one kernel, for backends that register it (the ort-cpu backend does,
 * elementwise-kernels.ts).
 *
 * tfjs differentiates `Relu` as `dy · step(x)`: a Step kernel writes the whole 0/1 map, then a
 * Multiply kernel reads it back with dy, two passes over the activation map and a map-sized
 * temporary. The {@link RELU_GRAD_KERNEL} kernel computes the same values in one pass:
 *
 *   dx = dy · step(x),  step(x) = NaN for NaN x, 1 for x > 0, else 0.
 *
 * Gradients are registered per kernel name for every backend, so {@link useFusedReluGradient}
 * replaces tfjs's gradient of `Relu` by one that runs the fused kernel where the active backend has
 * it and tfjs's own expression (`mul(dy, cast(step(x), 'float32'))`) everywhere else.
 */
import * as tf from '@tensorflow/tfjs';

/** Kernel name of the fused ReLU gradient: inputs `dy`, `x` (float32, equal shapes); output dx. */
export const RELU_GRAD_KERNEL = 'DmlReluGrad';

let registered = false;

/** Registers the gradient of `Relu` described in the file comment (once per process). */
export function useFusedReluGradient(): void {
  if (registered) return;
  registered = true;
  tf.registerGradient({
    kernelName: 'Relu',
    inputsToSave: ['x'],
    gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => {
      const [x] = saved as [tf.Tensor];
      const upstream = dy as tf.Tensor;
      const fused = x.dtype === 'float32' && upstream.dtype === 'float32' && tf.getKernel(RELU_GRAD_KERNEL, tf.getBackend()) !== undefined;
      return { x: () => (fused ? (tf.engine().runKernel(RELU_GRAD_KERNEL, { dy: upstream, x }) as tf.Tensor) : tf.mul(upstream, tf.cast(tf.step(x), 'float32'))) };
    },
  });
}
