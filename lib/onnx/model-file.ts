/**
 * @file What a model path must be before its bytes are read: a regular file (after links), no larger
 * than an ONNX protobuf can be. `dml eval /dev/zero` used to read until memory ran out.
 */
import { stat } from 'node:fs/promises';
import { DmlError } from '../errors.js';

/** Largest ONNX file: protobuf's 2 GiB message limit (larger models keep their weights in external data). */
export const MAX_MODEL_FILE_BYTES = 2 ** 31;

/** Checks `modelPath` names a regular file of at most {@link MAX_MODEL_FILE_BYTES}. Errors: E_NOT_FOUND when missing; E_ARG otherwise. */
export async function checkModelFile(modelPath: string): Promise<void> {
  let info;
  try {
    info = await stat(modelPath);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new DmlError(e.code === 'ENOENT' ? 'E_NOT_FOUND' : 'E_IO', `Cannot read model ${modelPath}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`, { cause: err });
  }
  if (!info.isFile()) throw new DmlError('E_ARG', `Cannot read model ${modelPath}: not a regular file (expected an .onnx file)`);
  if (info.size > MAX_MODEL_FILE_BYTES) {
    throw new DmlError('E_ARG', `Cannot read model ${modelPath}: ${info.size} bytes, more than an ONNX file can hold (2 GiB; larger models keep their weights in external data files)`);
  }
}
