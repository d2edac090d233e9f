/**
 * @file A hand-built `.npy` file (version 1.0 header, 64-byte aligned data) for dtypes dmlkit reads
 * but does not write (float16, unicode), so specs can feed them to the parser and the CLI.
 */

/** The bytes of a `.npy` file of dtype `descr` and `shape` holding `data` (already in that dtype's little-endian layout). */
export function npyBytes(descr: string, shape: number[], data: Uint8Array): Uint8Array {
  const header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const padded = header + ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
  const out = new Uint8Array(10 + padded.length + data.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
  new DataView(out.buffer).setUint16(8, padded.length, true);
  for (let i = 0; i < padded.length; i++) out[10 + i] = padded.charCodeAt(i);
  out.set(data, 10 + padded.length);
  return out;
}
