/**
 * @file The fallback of every ort-cpu kernel: tfjs's own `cpu` kernel of the same name, run on the
 * same arguments. It works on the ort-cpu backend because that backend is a `MathBackendCPU`.
 */
import * as tf from '@tensorflow/tfjs';

/** Runs tfjs's cpu kernel `name` on `args` (inputs, backend, attributes). */
export function cpuKernel(name: string, args: Parameters<tf.KernelFunc>[0]): tf.TensorInfo | tf.TensorInfo[] {
  const kernel = tf.getKernel(name, 'cpu');
  if (!kernel) throw new Error(`tfjs has no cpu kernel '${name}'`);
  return kernel.kernelFunc(args);
}
