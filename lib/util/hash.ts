/**
 * @file SHA-256 helpers for cache keys and provenance.
 */
import { createHash } from 'node:crypto';
import { fileReadError, openRegular } from './regular-file.js';

/** Hex SHA-256 of a string or bytes. */
export function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Hex SHA-256 of a regular file's bytes, streamed (util/regular-file.ts: a FIFO is refused, not read
 * forever). `what` names the file in errors: E_NOT_FOUND when missing, E_ARG when not a regular file, E_IO.
 */
export async function sha256File(file: string, what = 'file'): Promise<string> {
  const hash = createHash('sha256');
  try {
    const { handle } = await openRegular(file, what);
    for await (const chunk of handle.createReadStream()) hash.update(chunk as Buffer);
  } catch (err) {
    throw fileReadError(what, file, err);
  }
  return hash.digest('hex');
}

/** JSON with object keys sorted at every level, so equal values always hash equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v)) {
      const sorted: Record<string, unknown> = {};
      for (const k of Object.keys(v as Record<string, unknown>).sort()) sorted[k] = (v as Record<string, unknown>)[k];
      return sorted;
    }
    return v;
  });
}
