/**
 * @file Seeded weight initialisation. tfjs's initialisers accept a `seed`; every initialiser of a
 * model gets its own seed drawn, in layer order, from one {@link Rng}, so the same model seed gives
 * bit-identical initial weights (and two layers never share a stream).
 *
 * Kernels of layers followed by ReLU or ELU use He normal (truncated normal, std sqrt(2 / fan_in)),
 * all others Glorot uniform (Keras's default); biases start at zero, batch-norm at gamma 1, beta 0.
 */
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../util/rng.js';
import type { Activation } from './model-spec.js';

/** The kernel initialiser of a layer whose output goes through `activation` (`linear` for none). */
export function kernelInitializer(rng: Rng, activation: Activation | 'linear'): ReturnType<typeof tf.initializers.glorotUniform> {
  const seed = rng.nextUint32();
  return activation === 'relu' || activation === 'elu' ? tf.initializers.heNormal({ seed }) : tf.initializers.glorotUniform({ seed });
}
