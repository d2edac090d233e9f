/**
 * @file Runs a describe block on tfjs's `cpu` backend (other specs may leave wasm selected) and
 * restores the previous backend afterwards.
 */
import * as tf from '@tensorflow/tfjs';

export function onCpuBackend(): void {
  let previous = '';
  before(async () => {
    await tf.ready();
    previous = tf.getBackend();
    await tf.setBackend('cpu');
  });
  after(async () => {
    await tf.setBackend(previous);
  });
}
