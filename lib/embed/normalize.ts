/**
 * @file Validation and L2 normalisation of embedding rows.
 */
import { DmlError } from '../errors.js';

/**
 * Checks every value is finite and L2-normalises each row in place. `what` names the source in errors
 * (e.g. the model path or the .npy file). A row of norm 0 cannot be normalised and is an error.
 */
export function normalizeRowsInPlace(vectors: Float32Array, count: number, dim: number, what: string, firstRow = 0): void {
  for (let r = 0; r < count; r++) {
    const base = r * dim;
    let sum = 0;
    for (let j = 0; j < dim; j++) {
      const v = vectors[base + j] as number;
      if (!Number.isFinite(v)) {
        throw new DmlError('E_EMBEDDING', `${what}: embedding row ${firstRow + r} contains ${v} at column ${j}; expected finite values`);
      }
      sum += v * v;
    }
    if (sum === 0) {
      throw new DmlError('E_EMBEDDING', `${what}: embedding row ${firstRow + r} is all zeros and cannot be L2-normalised`);
    }
    const inv = 1 / Math.sqrt(sum);
    for (let j = 0; j < dim; j++) vectors[base + j] = (vectors[base + j] as number) * inv;
  }
}
