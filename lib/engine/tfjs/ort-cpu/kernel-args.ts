/**
 * @file The argument every ort-cpu kernel function receives from TensorFlow.js (inputs, backend,
 * attributes), named once for the kernel files.
 */
import type * as tf from '@tensorflow/tfjs';

/** What tfjs passes to a registered kernel function. */
export type KernelArgs = Parameters<tf.KernelFunc>[0];
