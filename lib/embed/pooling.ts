/**
 * @file Pooling a token output `[N, T, D]` (a transformer's `last_hidden_state`) into one vector per
 * image: the class token, or the mean or maximum over the patch tokens (see {@link TokenPooling}).
 */
import { DmlError } from '../errors.js';
import type { TokenPooling } from './model-signature.js';

/**
 * Pools `data` (`count x tokens x dim`, row-major) into `count x dim`. `mean` and `max` use tokens
 * 1..tokens-1 (the class token excluded), so they need at least two tokens; `name` is used in errors.
 */
export function poolTokens(data: Float32Array, count: number, tokens: number, dim: number, pooling: TokenPooling, name: string): Float32Array {
  if (pooling !== 'cls' && tokens < 2) {
    throw new DmlError('E_MODEL', `${name}: --pooling ${pooling} averages the patch tokens after the class token, but the output has ${tokens} token`);
  }
  const out = new Float32Array(count * dim);
  for (let n = 0; n < count; n++) {
    const base = n * tokens * dim;
    const row = out.subarray(n * dim, (n + 1) * dim);
    if (pooling === 'cls') {
      row.set(data.subarray(base, base + dim));
      continue;
    }
    if (pooling === 'max') row.fill(-Infinity);
    for (let t = 1; t < tokens; t++) {
      const token = data.subarray(base + t * dim, base + (t + 1) * dim);
      if (pooling === 'max') for (let j = 0; j < dim; j++) row[j] = Math.max(row[j] as number, token[j] as number);
      else for (let j = 0; j < dim; j++) row[j] = (row[j] as number) + (token[j] as number);
    }
    if (pooling === 'mean') for (let j = 0; j < dim; j++) row[j] = (row[j] as number) / (tokens - 1);
  }
  return out;
}
