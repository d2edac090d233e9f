/**
 * @file The service's request log never holds a write token: the `Authorization` header is censored
 * wherever a log line carries request headers (fastify's request objects, @fastify/multipart's busboy
 * options at trace level), and the values of `token` and `access_token` query parameters are censored in
 * every logged URL, at every log level.
 */
import type { FastifyRequest, FastifyServerOptions } from 'fastify';

/** What replaces a censored value. */
export const REDACTED = '[redacted]';

/** Query parameters whose values are secrets (matched case-insensitively). */
const SECRET_QUERY_PARAMETERS = /^(token|access_token)$/i;

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

/** `url` with the values of its `token`/`access_token` query parameters replaced by {@link REDACTED}. */
export function redactUrl(url: string): string {
  const query = url.indexOf('?');
  if (query < 0) return url;
  const parameters = url
    .slice(query + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const rawName = eq < 0 ? pair : pair.slice(0, eq);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // A malformed escape: judge the name as written.
      }
      return SECRET_QUERY_PARAMETERS.test(name) ? `${rawName}=${REDACTED}` : pair;
    });
  return `${url.slice(0, query)}?${parameters.join('&')}`;
}

/** The request fields fastify's own serializer logs, with the URL's secrets censored. */
function serializeRequest(request: FastifyRequest): { method: string; url: string; host: string; remoteAddress: string; remotePort?: number } {
  const { remotePort } = request.socket;
  return { method: request.method, url: redactUrl(request.url), host: request.host, remoteAddress: request.ip, ...(remotePort !== undefined ? { remotePort } : {}) };
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
