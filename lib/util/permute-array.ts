/**
 * @file A row-major array with its axes permuted (numpy's `transpose`): weights between TensorFlow.js's
 * and ONNX's layouts (the exporter, the graph trainer's write-back, their specs).
 */

/**
 * `data`, a row-major array of `shape`, with its axes permuted: axis i of the result is axis
 * `perm[i]` of the input (numpy's `transpose`).
 */
export function permuteArray(data: Float32Array, shape: readonly number[], perm: readonly number[]): Float32Array {
  const rank = shape.length;
  const outShape = perm.map((p) => shape[p] as number);
  const inStrides = new Array<number>(rank).fill(1);
  for (let i = rank - 2; i >= 0; i--) inStrides[i] = (inStrides[i + 1] as number) * (shape[i + 1] as number);
  const strideOfOut = perm.map((p) => inStrides[p] as number);
  const out = new Float32Array(data.length);
  const index = new Array<number>(rank).fill(0);
  let source = 0;
  for (let o = 0; o < out.length; o++) {
    out[o] = data[source] as number;
    for (let axis = rank - 1; axis >= 0; axis--) {
      index[axis] = (index[axis] as number) + 1;
      source += strideOfOut[axis] as number;
      if ((index[axis] as number) < (outShape[axis] as number)) break;
      source -= (index[axis] as number) * (strideOfOut[axis] as number);
      index[axis] = 0;
    }
  }
  return out;
}
