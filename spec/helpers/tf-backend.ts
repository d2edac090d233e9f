/**
 * @file Mocha hooks for describe blocks that switch tfjs backends: restore the backend a block started
 * with afterwards, or run a block on tfjs's `cpu` backend (other specs may leave wasm selected).
 */
import * as tf from '@tensorflow/tfjs';

/** Restores, after the block, the backend it started with (cpu if none was set). */
export function restoreBackendAfter(): void {
  let previous: string | undefined;
  before(async () => {
    await tf.ready();
    previous = tf.getBackend() as string | undefined;
  });
  after(async () => {
    await tf.setBackend(previous ?? 'cpu');
  });
}

/** Runs the block on the `cpu` backend and restores the previous backend afterwards. */
export function onCpuBackend(): void {
  restoreBackendAfter();
  before(async () => {
    await tf.setBackend('cpu');
  });
}
