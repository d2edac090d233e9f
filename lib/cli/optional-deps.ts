/**
 * @file TensorFlow.js is an optional peer dependency of dmlkit: only `dml train`, `dml export`,
 * `dmlkit/train` and `dmlkit/export` need it, so `npm install dmlkit` for evaluation, indexing and
 * serving does not pull it in. A command that needs it and does not find it says what to install.
 */
import { DmlError } from '../errors.js';

/** The packages to install for training and export, with the versions dmlkit is built against. */
export const TENSORFLOW_PACKAGES = ['@tensorflow/tfjs@^4.22.0', '@tensorflow/tfjs-backend-cpu@^4.22.0', '@tensorflow/tfjs-backend-wasm@^4.22.0'];

/**
 * `err` from loading the work of `command`: when it is a TensorFlow.js package that cannot be found,
 * an E_NOT_FOUND DmlError naming what to install; any other error unchanged.
 */
export function explainMissingTensorflow(err: unknown, command: string): unknown {
  const e = err as NodeJS.ErrnoException | undefined;
  if ((e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') && /@tensorflow\//.test(e.message ?? '')) {
    return new DmlError(
      'E_NOT_FOUND',
      `${command} needs TensorFlow.js, an optional peer dependency of dmlkit that is not installed: npm install ${TENSORFLOW_PACKAGES.join(' ')}`,
      { cause: err },
    );
  }
  return err;
}
