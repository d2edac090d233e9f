/**
 * @file The service's request log never holds a write token: the `Authorization` header is censored
 * wherever a log line carries request headers (fastify's request objects, @fastify/multipart's busboy
 * options at trace level), and the logged URL (at every log level) is censored as {@link redactUrl}
 * says: a write's whole query string, any request's parameters whose names look like a credential
 * (`token`, `auth`, `apikey`, `bearer`, `Authorization`, ...; after `?` or `;`), and `;` parameters of
 * the path. The URL is logged when the request comes in, before it is known whether it is refused, so
 * a write's query is never logged at all.
 */
import type { FastifyRequest, FastifyServerOptions } from 'fastify';

/** What replaces a censored value. */
export const REDACTED = '[redacted]';

/** Parameter names (matched case-insensitively, anywhere in the name) whose values may be credentials. */
const SECRET_NAME = /token|auth|key|bearer|secret|passw|session|credential|signature|cookie|jwt/i;

/** Methods that change nothing: their query strings are logged, less the credential-like values. */
const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Log-object paths of request headers that hold credentials (pino redaction syntax). */
const SECRET_HEADER_PATHS = ['headers.authorization', '*.headers.authorization', '*.*.headers.authorization', 'req.headers.cookie', '*.headers.cookie'];

/** The search service's request-log options: a level and, for specs, a destination stream; tokens are always censored. */
export interface ServiceLoggerOptions {
  /** pino's level: trace, debug, info, warn, error, fatal or silent. */
  level: string;
  /** Where log lines go (pino's destination); standard output when absent. */
  stream?: {
    /** Receives each log line (JSON, newline-terminated). */
    write(line: string): void;
  };
}

/** Whether the (raw, maybe percent-encoded) parameter name `raw` looks like a credential's. */
function isSecretName(raw: string): boolean {
  let name = raw;
  try {
    name = decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    // A malformed escape: judge the name as written.
  }
  return SECRET_NAME.test(name);
}

/**
 * `url` as the log shows it: with `method` a write (not GET, HEAD or OPTIONS) the query string is
 * replaced by {@link REDACTED}; otherwise the values of parameters whose names look like credentials
 * (`?token=`, `&apikey=`, `;auth=`) are. Path parameters after `;` (`/items;token=...`) are censored
 * whatever their name.
 */
export function redactUrl(url: string, method = 'GET'): string {
  const query = url.indexOf('?');
  const pathPart = (query < 0 ? url : url.slice(0, query)).replace(/;[^/]*/g, `;${REDACTED}`);
  if (query < 0) return pathPart;
  if (!READ_METHODS.has(method.toUpperCase())) return `${pathPart}?${REDACTED}`;
  const parameters = url.slice(query + 1).replace(/(^|[&;])([^&;=]*)=([^&;]*)/g, (pair: string, separator: string, name: string) =>
    isSecretName(name) ? `${separator}${name}=${REDACTED}` : pair,
  );
  return `${pathPart}?${parameters}`;
}

/** The request fields fastify's own serializer logs, with the URL's secrets censored. */
function serializeRequest(request: FastifyRequest): { method: string; url: string; host: string; remoteAddress: string; remotePort?: number } {
  const { remotePort } = request.socket;
  return { method: request.method, url: redactUrl(request.url, request.method), host: request.host, remoteAddress: request.ip, ...(remotePort !== undefined ? { remotePort } : {}) };
}

/** fastify's `logger` option for the service: off for `false`/absent, else pino with the censoring above. */
export function redactingLogger(logger: boolean | ServiceLoggerOptions | undefined): NonNullable<FastifyServerOptions['logger']> {
  if (logger === undefined || logger === false) return false;
  const base = logger === true ? { level: 'info' } : logger;
  return {
    ...base,
    redact: { paths: SECRET_HEADER_PATHS, censor: REDACTED },
    serializers: { req: serializeRequest },
  };
}
