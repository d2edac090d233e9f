/**
 * @file Who may talk to the search service, in the spirit of Jupyter's token auth for a local server:
 *
 * - **Host check (every request).** The `Host` header must name an allowed host (by default the
 *   loopback names `localhost`, `127.0.0.1` and `::1`, plus the address the server listens on and any
 *   `allowedHosts`); anything else is refused with 403, so a web page cannot reach the local server
 *   through DNS rebinding (a hostile name resolving to 127.0.0.1).
 * - **Read-only unless asked.** Without `allowWrites` the index is opened read-only and the write
 *   routes (`POST /items`, `DELETE /items/:id`) answer 403 naming `--allow-writes`.
 * - **Writes need the token.** With `allowWrites`, a write needs `Authorization: Bearer <token>`
 *   (compared in constant time: SHA-256 digests through `timingSafeEqual`; the token is never logged),
 *   else 401; and a write whose `Origin` is not an allowed host is refused with 403 (no cross-origin
 *   writes; the service sends no CORS headers).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { invalidParameterError } from '../errors.js';
import { HttpError } from './http-errors.js';

/** Host names every server allows: the loopback names. */
export const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '::1'];

/** Shortest write token accepted. */
export const MIN_TOKEN_LENGTH = 16;

/** How the service is guarded (see the file comment). */
export interface AccessPolicy {
  allowWrites: boolean;
  /** The bearer token of writes (with allowWrites). */
  token: string | undefined;
  /** Lower-case host names (no port, IPv6 without brackets) a request's Host or Origin may name. */
  allowedHosts: ReadonlySet<string>;
}

/** Checks and normalises the options into a policy. Errors: E_ARG for writes without a long enough token. */
export function accessPolicy(options: { allowWrites?: boolean | undefined; token?: string | undefined; allowedHosts?: readonly string[] | undefined }): AccessPolicy {
  const allowWrites = options.allowWrites ?? false;
  const { token } = options;
  if (allowWrites && (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH)) {
    throw invalidParameterError('token', `a write token of at least ${MIN_TOKEN_LENGTH} characters when writes are allowed`, token === undefined ? undefined : `${token.length} characters`);
  }
  return { allowWrites, token: allowWrites ? token : undefined, allowedHosts: new Set([...LOOPBACK_HOSTS, ...(options.allowedHosts ?? [])].map(normaliseHost)) };
}

/** `Example.com`, `[::1]` -> `example.com`, `::1`. */
function normaliseHost(name: string): string {
  return name.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
}

/** The host name of a `Host` header value (`name:port`, `[v6]:port`), lower case, without the port. */
function hostOf(header: string): string {
  const value = header.trim().toLowerCase();
  if (value.startsWith('[')) return value.slice(1, value.indexOf(']'));
  return value.split(':')[0] as string;
}

/** Refuses a request whose Host header names a host outside the policy (403). */
export function checkHost(policy: AccessPolicy, host: string | undefined): void {
  if (host === undefined || !policy.allowedHosts.has(hostOf(host))) {
    throw new HttpError(403, 'E_FORBIDDEN', `Host ${JSON.stringify(host ?? '')} is not allowed (allowed: ${[...policy.allowedHosts].join(', ')}; start dml serve with --allowed-host to add one)`);
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Refuses a write the policy does not allow: read-only (403), missing or wrong token (401), cross-origin (403). */
export function checkWrite(policy: AccessPolicy, headers: { authorization?: string | undefined; origin?: string | undefined }): void {
  if (!policy.allowWrites) throw new HttpError(403, 'E_FORBIDDEN', 'This server is read-only (start dml serve with --allow-writes and a token to add or remove items)');
  const given = /^Bearer (.+)$/.exec(headers.authorization ?? '')?.[1];
  if (given === undefined || !timingSafeEqual(digest(given), digest(policy.token as string))) {
    throw new HttpError(401, 'E_ARG', 'A write needs the header Authorization: Bearer <token> with the token the server was started with');
  }
  if (headers.origin !== undefined) {
    let originHost: string | undefined;
    try {
      originHost = normaliseHost(new URL(headers.origin).hostname);
    } catch {
      originHost = undefined;
    }
    if (originHost === undefined || !policy.allowedHosts.has(originHost)) {
      throw new HttpError(403, 'E_FORBIDDEN', `Cross-origin write from ${JSON.stringify(headers.origin)} refused`);
    }
  }
}
