/**
 * @file SHA-256 helpers for cache keys and provenance.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { DmlError } from '../errors.js';

/** Hex SHA-256 of a string or bytes. */
export function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Hex SHA-256 of a file's bytes, streamed. */
export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  try {
    for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new DmlError(e.code === 'ENOENT' ? 'E_NOT_FOUND' : 'E_IO', `Cannot read ${file}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`, {
      cause: err,
    });
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
