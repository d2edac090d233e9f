/**
 * @file HTTP errors of the search service: which status each {@link DmlError} code maps to, the
 * {@link HttpError} for conditions that only exist over HTTP (a duplicate id, a full queue), and the
 * one JSON error body every failed request gets.
 *
 * Body: `{ "statusCode": 422, "code": "E_IMAGE", "error": "Unprocessable Entity", "message": "..." }`,
 * the shape fastify uses for its own errors, so a client handles one shape whatever failed. Errors a
 * client caused are 4xx; only failures of the server itself (the model, the disk) are 5xx.
 */
import { STATUS_CODES } from 'node:http';
import { DmlError, type DmlErrorCode } from '../errors.js';

/** The JSON body of every error response. */
export interface ErrorBody {
  statusCode: number;
  /** A {@link DmlErrorCode}, or fastify's own code (`FST_...`) for errors raised by fastify itself. */
  code: string;
  /** The HTTP reason phrase. */
  error: string;
  /** One line naming the thing, what was expected and what was received. */
  message: string;
}

/** HTTP status of each DmlError code. */
export const STATUS_OF_CODE: Readonly<Record<DmlErrorCode, number>> = {
  E_ARG: 400,
  E_NOT_FOUND: 404,
  E_DATASET: 400,
  E_IMAGE: 422,
  E_MODEL: 500,
  E_EMBEDDING: 400,
  E_EMPTY: 400,
  E_IO: 500,
  E_CANCELLED: 503,
  E_NUMERIC: 500,
  E_FORBIDDEN: 403,
};

/** A DmlError with an explicit HTTP status, for conditions the code alone does not place (409, 413, 415, 503). */
export class HttpError extends DmlError {
  readonly statusCode: number;

  constructor(statusCode: number, code: DmlErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'HttpError';
    this.statusCode = statusCode;
  }
}

/** What {@link errorBody} needs to know about the request and the server. */
export interface ErrorContext {
  /** The upload limit in bytes, for the 413 messages. */
  uploadLimitBytes: number;
  /** The request's Content-Type header, for the 415 message. */
  contentType: string | undefined;
}

/** Friendlier one-line messages for fastify's own client errors, keyed by fastify's error code. */
const FASTIFY_MESSAGES: Readonly<Record<string, (context: ErrorContext) => string>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (c) => `Request body is too large (expected at most ${c.uploadLimitBytes} bytes)`,
  FST_REQ_FILE_TOO_LARGE: (c) => `Uploaded file is too large (expected at most ${c.uploadLimitBytes} bytes)`,
  FST_FILES_LIMIT: () => 'Too many files in the multipart body (expected one image file)',
  FST_FIELDS_LIMIT: () => 'Too many fields in the multipart body (expected at most k, label and id)',
  FST_PARTS_LIMIT: () => 'Too many parts in the multipart body (expected one image file and at most k, label and id)',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (c) =>
    `Expected multipart/form-data, image/* or application/octet-stream (application/json for /search/vector) but received Content-Type ${JSON.stringify(c.contentType ?? '')}`,
};

/** Converts any error thrown while handling a request into a status and an {@link ErrorBody}. */
export function errorBody(err: unknown, context: ErrorContext): ErrorBody {
  let statusCode = 500;
  let code = 'E_INTERNAL';
  let message = 'Internal server error';
  if (err instanceof HttpError) {
    ({ statusCode, code, message } = err);
  } else if (err instanceof DmlError) {
    statusCode = STATUS_OF_CODE[err.code];
    ({ code, message } = err);
  } else if (err instanceof Error) {
    const fastify = err as Error & { statusCode?: number; code?: string };
    if (typeof fastify.statusCode === 'number' && fastify.statusCode >= 400 && fastify.statusCode < 500) {
      statusCode = fastify.statusCode;
      code = fastify.code ?? 'E_ARG';
      const friendly = FASTIFY_MESSAGES[code];
      message = friendly ? friendly(context) : err.message;
    }
  }
  return { statusCode, code, error: STATUS_CODES[statusCode] ?? 'Error', message: message.split('\n')[0] ?? message };
}
