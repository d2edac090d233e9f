/**
 * @file Concatenation of Float32Array chunks (embeddings produced batch by batch) into one array.
 */

/** The chunks one after another in a new array of their total length. */
export function concatFloat32(chunks: readonly Float32Array[]): Float32Array {
  let length = 0;
  for (const c of chunks) length += c.length;
  const out = new Float32Array(length);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}
