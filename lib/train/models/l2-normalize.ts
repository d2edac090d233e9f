/**
 * @file `L2Normalize`, the last layer of every dmlkit embedding model: each row (along the last axis)
 * becomes x / sqrt(sum(x²) + epsilon), epsilon = 1e-12 by default, so a zero row stays finite (0)
 * instead of producing NaN. The class is registered with tfjs's serialisation map under the name
 * `L2Normalize`, so a saved model reloads once this module has been imported (checkpoint-io.ts and
 * the model builders import it).
 */
import * as tf from '@tensorflow/tfjs';
import { invalidParameterError } from '../../errors.js';

type LayerArgs = NonNullable<ConstructorParameters<typeof tf.layers.Layer>[0]>;

/** Arguments of {@link L2Normalize}: the usual layer arguments plus epsilon. */
export interface L2NormalizeArgs extends LayerArgs {
  /** Added to the squared norm before the square root. Default 1e-12. */
  epsilon?: number;
}

/** Row-wise L2 normalisation along the last axis. No weights. */
export class L2Normalize extends tf.layers.Layer {
  static className = 'L2Normalize';
  readonly epsilon: number;

  constructor(args: L2NormalizeArgs = {}) {
    const { epsilon, ...layerArgs } = args;
    super(layerArgs);
    const eps = epsilon ?? 1e-12;
    if (typeof eps !== 'number' || !(eps > 0) || !Number.isFinite(eps)) throw invalidParameterError('L2Normalize epsilon', 'a finite number > 0', eps);
    this.epsilon = eps;
  }

  override computeOutputShape(inputShape: tf.Shape | tf.Shape[]): tf.Shape | tf.Shape[] {
    return inputShape;
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = Array.isArray(inputs) ? (inputs[0] as tf.Tensor) : inputs;
      return tf.div(x, tf.sqrt(tf.add(tf.sum(tf.square(x), -1, true), this.epsilon)));
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), epsilon: this.epsilon };
  }
}

tf.serialization.registerClass(L2Normalize);
