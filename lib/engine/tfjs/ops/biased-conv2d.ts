/**
 * @file A 2-D convolution plus bias as one `FusedConv2D` kernel whose gradient computes, for each
 * input, only what the backward pass asks for.
 *
 * tfjs's `tf.fused.conv2d` wraps the kernel in a custom gradient that computes the input gradient
 * (Conv2DBackpropInput), the filter gradient and the bias gradient together, needed or not. For the
 * first layer of a CNN, whose input is the images, the input gradient is thrown away (the small CNN's
 * 28x28x32 map: 8 ms of its training step on ort-cpu). {@link biasedConv2d} runs the same kernel
 * directly, so tfjs's tape records it under its kernel name and differentiates it with the gradient
 * {@link useBiasedConv2dGradient} registers, whose per-input functions tfjs calls only for inputs on
 * the path to what is differentiated:
 *
 *   y = conv(x, W) + b:  dx = Conv2DBackpropInput(dy, W),  dW = Conv2DBackpropFilter(x, dy),
 *   db = sum of dy over batch, height and width.
 *
 * tfjs itself never records `FusedConv2D` on the tape (its fused op runs the kernel inside a custom
 * gradient, whose inner kernels are not recorded), so the registered gradient serves only these
 * calls; it covers what they run (NHWC, bias of one value per output channel, linear activation, no
 * dilation) and throws for anything else.
 */
import * as tf from '@tensorflow/tfjs';

/** Geometry of {@link biasedConv2d}, as tfjs's conv2d takes it. */
export interface BiasedConv2dGeometry {
  strides: [number, number];
  pad: 'same' | 'valid';
}

let registered = false;

/** Registers the gradient of `FusedConv2D` described in the file comment (once per process). */
export function useBiasedConv2dGradient(): void {
  if (registered) return;
  registered = true;
  tf.registerGradient({
    kernelName: 'FusedConv2D',
    inputsToSave: ['x', 'filter'],
    gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[], attrs: tf.NamedAttrMap) => {
      const [x, filter] = saved as [tf.Tensor4D, tf.Tensor4D];
      const upstream = dy as tf.Tensor4D;
      const { strides, pad, dataFormat, dilations, activation, dimRoundingMode } = attrs as unknown as {
        strides: [number, number];
        pad: 'same' | 'valid';
        dataFormat: string;
        dilations: number | [number, number];
        activation: string;
        dimRoundingMode?: 'floor' | 'round' | 'ceil';
      };
      const dilated = Array.isArray(dilations) ? dilations.some((d) => d !== 1) : dilations !== 1;
      if (dataFormat !== 'NHWC' || activation !== 'linear' || dilated) {
        throw new Error(`the FusedConv2D gradient registered by dmlkit covers NHWC, linear activation and dilation 1, got ${dataFormat}, ${activation}, dilations ${String(dilations)}`);
      }
      const geometry = { strides, pad, dataFormat, ...(dimRoundingMode !== undefined ? { dimRoundingMode } : {}) };
      return {
        x: () => tf.engine().runKernel('Conv2DBackpropInput', { dy: upstream, filter }, { ...geometry, inputShape: x.shape }) as tf.Tensor,
        filter: () => tf.engine().runKernel('Conv2DBackpropFilter', { x, dy: upstream }, { ...geometry, filterShape: filter.shape }) as tf.Tensor,
        bias: () => tf.sum(upstream, [0, 1, 2]),
      };
    },
  });
}

/**
 * conv2d(x, filter) + bias, NHWC, dilation 1, as one `FusedConv2D` kernel differentiated input by
 * input (see the file comment); `bias` holds one value per output channel.
 */
export function biasedConv2d(x: tf.Tensor4D, filter: tf.Tensor4D, bias: tf.Tensor1D, geometry: BiasedConv2dGeometry): tf.Tensor4D {
  useBiasedConv2dGradient();
  return tf.engine().runKernel(
    'FusedConv2D',
    { x, filter, bias },
    { strides: geometry.strides, pad: geometry.pad, dataFormat: 'NHWC', dilations: [1, 1], activation: 'linear', leakyreluAlpha: 0.2 },
  ) as tf.Tensor4D;
}
