/**
 * @file What the route handlers share: reading a request's parameters (integers in a range, optional
 * label text) and the image of a search or an upload (one file of a multipart body, or the raw body),
 * the URL of an item's thumbnail, and an indexed item that must exist. The
 * same `k`, `label` and `id` come as query parameters, multipart fields or JSON values, and every
 * invalid value of either origin gets one message naming the parameter, the range expected and the
 * value received (see app.ts's file comment for why fastify's validator is not used for these).
 */
import type { FastifyRequest } from 'fastify';
import { DmlError, invalidParameterError } from '../errors.js';
import type { IndexStore } from '../index-store/index-store.js';
import { checkItemText, type IndexedItem } from '../index-store/layout.js';
import { HttpError } from './http-errors.js';

/** An image read from a request, with the request's text fields (query string, then multipart fields). */
export interface ImageRequest {
  bytes: Uint8Array;
  /** Names the image in error messages. */
  name: string;
  fields: Record<string, string | undefined>;
}

/** Parses an optional integer `name` in [min, max] from a query string, form field or JSON value; `fallback` when absent. */
export function parseIntParam(name: string, raw: unknown, min: number, max: number, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) throw invalidParameterError(name, `an integer in [${min}, ${max}]`, raw);
  return n;
}

/** An optional text parameter (a label): undefined when absent or empty, else checked as item text. */
export function optionalText(name: string, raw: unknown): string | undefined {
  return raw === undefined || raw === '' ? undefined : checkItemText(name, raw);
}

/** An uploaded image that is not empty (an empty one is refused here, with decode.ts's wording). */
function nonEmpty(bytes: Buffer, name: string): { bytes: Buffer; name: string } {
  if (bytes.length === 0) throw new DmlError('E_IMAGE', `${name}: empty file (expected encoded image data)`);
  return { bytes, name };
}

/** The image of a request: the one file of a multipart body, or the raw body (see the file comment). */
export async function readImageRequest(request: FastifyRequest): Promise<ImageRequest> {
  const fields: Record<string, string | undefined> = { ...(request.query as Record<string, string | undefined>) };
  if (request.isMultipart()) {
    let file: { bytes: Buffer; name: string } | undefined;
    try {
      for await (const part of request.parts()) {
        if (part.type === 'file') file = { bytes: await part.toBuffer(), name: `file ${JSON.stringify(part.filename ?? part.fieldname)}` };
        else fields[part.fieldname] = String(part.value);
      }
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode;
      if (err instanceof DmlError || (status !== undefined && status < 500)) throw err;
      throw new HttpError(400, 'E_ARG', `Malformed multipart body: ${(err as Error).message} (expected multipart/form-data holding one image file)`, { cause: err });
    }
    if (!file) throw new HttpError(400, 'E_ARG', 'Expected an image file in the multipart body (e.g. field "image") but received none');
    return { ...nonEmpty(file.bytes, file.name), fields };
  }
  const body = request.body;
  if (Buffer.isBuffer(body)) return { ...nonEmpty(body, 'request body'), fields };
  if (body === undefined || body === null) {
    throw new HttpError(400, 'E_ARG', 'Expected an image in the request body (multipart/form-data, image/* or application/octet-stream) but received no body');
  }
  throw new HttpError(415, 'E_ARG', `Expected an image (multipart/form-data, image/* or application/octet-stream) but received Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')}`);
}

/** URL of an item's thumbnail. */
export function imageUrl(id: string): string {
  return `/items/${encodeURIComponent(id)}/image`;
}

/** The indexed item `id`; E_NOT_FOUND (404) when the index has none. */
export async function knownItem(store: IndexStore, id: string): Promise<IndexedItem> {
  const item = await store.get(id);
  if (item === undefined) throw new DmlError('E_NOT_FOUND', `No item with id ${JSON.stringify(id)} in the index`);
  return item;
}
