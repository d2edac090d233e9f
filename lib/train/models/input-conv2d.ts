/**
 * @file The first convolution of dmlkit's CNNs: tfjs-layers' Conv2D whose training pass skips the
 * gradient with respect to the input images, which nothing uses.
 *
 * tfjs-layers runs every Conv2D as `tf.fused.conv2d`, whose gradient is a custom gradient that
 * computes the input gradient (Conv2DBackpropInput) and the filter gradient together, needed or not;
 * for the layer that reads the images the input gradient is thrown away (15 ms of the convnet's
 * training step on ort-cpu, 8 ms of the small CNN's). In training this layer runs, without bias
 * (followed by batch norm, as in `convnet` and `cnn` with `batchNorm`), `tf.conv2d`: the same
 * arithmetic, and tfjs's tape then computes only the filter gradient; with bias (the plain `cnn`),
 * the same `FusedConv2D` kernel as the stock layer through ../ops/biased-conv2d.ts, whose registered
 * gradient likewise computes only the filter and bias gradients (a separate bias Add instead measured
 * slower: it adds a pass over the first activation map). In inference, and for any configuration other
 * than channels-last, 'same' or 'valid' padding, dilation 1 and a linear activation (how the model
 * builders use it), it is the stock layer's code.
 *
 * The class reports tfjs's class name `Conv2D` and is not registered for deserialisation, like
 * training-batch-norm.ts: saved models and the ONNX exporter see the stock layer.
 */
import * as tf from '@tensorflow/tfjs';
import { biasedConv2d } from '../../engine/tfjs/ops/biased-conv2d.js';

/** Arguments of tfjs-layers' Conv2D. */
export type Conv2DArgs = Parameters<typeof tf.layers.conv2d>[0];

type StockConv2D = ReturnType<typeof tf.layers.conv2d>;

/** tfjs-layers' Conv2D class, which the public API exposes only through its serialisation map. */
const StockConv2D = tf.serialization.SerializationMap.getMap().classNameMap['Conv2D']?.[0] as (new (args: Conv2DArgs) => StockConv2D) | undefined;
if (StockConv2D === undefined) throw new Error('tfjs-layers registered no Conv2D class');

/** The stock layer's (TypeScript-protected) fields that the training pass reads. */
interface Conv2DFields {
  readonly kernel: tf.LayerVariable;
  readonly bias: tf.LayerVariable | null;
  readonly strides: [number, number];
  readonly padding: string;
  readonly dataFormat: string;
  readonly dilationRate: [number, number];
  readonly activation: { getClassName(): string };
}

/** Conv2D for a layer whose input needs no gradient (see the file comment). */
export class InputConv2D extends StockConv2D {
  static className = 'Conv2D';

  override call(inputs: tf.Tensor | tf.Tensor[], kwargs: Record<string, unknown>): tf.Tensor | tf.Tensor[] {
    const input = Array.isArray(inputs) ? (inputs.length === 1 ? inputs[0] : undefined) : inputs;
    const fields = this as unknown as Conv2DFields;
    const plain =
      kwargs['training'] === true &&
      input !== undefined &&
      input.rank === 4 &&
      fields.dataFormat === 'channelsLast' &&
      (fields.padding === 'same' || fields.padding === 'valid') &&
      fields.activation.getClassName() === 'linear' &&
      fields.dilationRate.every((d) => d === 1);
    if (!plain) return super.call(inputs, kwargs);
    const padding = fields.padding as 'same' | 'valid';
    const kernel = fields.kernel.read() as tf.Tensor4D;
    if (fields.bias === null) return tf.conv2d(input as tf.Tensor4D, kernel, fields.strides, padding, 'NHWC');
    return biasedConv2d(input as tf.Tensor4D, kernel, fields.bias.read() as tf.Tensor1D, { strides: fields.strides, pad: padding });
  }
}

/** An {@link InputConv2D} layer (what `tf.layers.conv2d(args)` builds, minus the unused input gradient in training). */
export function inputConv2d(args: Conv2DArgs): InputConv2D {
  return new InputConv2D(args);
}
