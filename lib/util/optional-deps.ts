/**
 * @file The optional peer dependencies of dmlkit, and the message when one is missing.
 *
 * TensorFlow.js: only `dml train`, `dml export`, `dmlkit/train` and `dmlkit/export` need it, so
 * `npm install dmlkit` for evaluation, indexing and serving does not pull it in.
 *
 * LanceDB (`@lancedb/lancedb` with its peer `apache-arrow`): only the `lance:` index store
 * (lib/index-store/lance-store.ts) needs it. Its own optional dependencies (`@huggingface/transformers`,
 * `openai`: embedding functions dmlkit does not use) can be left out with npm `overrides` (see
 * docs/index-stores.md and scripts/tools/install-lancedb.sh, which installs it into a checkout).
 *
 * A command that needs a missing one says what to install.
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

/** The packages to install for the LanceDB index store (`lance:` locations), at the versions dmlkit is built against. */
export const LANCEDB_PACKAGES = ['@lancedb/lancedb@0.37.1', 'apache-arrow@18.1.0'];

/**
 * `err` from loading LanceDB for `what` (e.g. "index lance:/data/idx"): when `@lancedb/lancedb` or
 * `apache-arrow` cannot be found, an E_NOT_FOUND DmlError naming what to install; any other error unchanged.
 */
export function explainMissingLancedb(err: unknown, what: string): unknown {
  const e = err as NodeJS.ErrnoException | undefined;
  if ((e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') && /@lancedb\/lancedb|apache-arrow/.test(e.message ?? '')) {
    return new DmlError(
      'E_NOT_FOUND',
      `${what} needs LanceDB, an optional peer dependency of dmlkit that is not installed: npm install ${LANCEDB_PACKAGES.join(' ')}`,
      { cause: err },
    );
  }
  return err;
}
