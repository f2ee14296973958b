import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { ResolvedConsoleOptions } from './console-options';

/** What the console reads of a request, on Express and Fastify alike. */
export interface ConsoleRequest {
  url?: string;
  originalUrl?: string;
  method?: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
  query?: Record<string, unknown>;
  socket?: { encrypted?: boolean };
  /** Set by the app's guard (Passport and most guards), when it knows the user. */
  user?: unknown;
}

/** A response of either adapter: Express's `res` or Fastify's `reply`. */
type AnyResponse = {
  code?: (status: number) => unknown;
  header?: (name: string, value: string) => unknown;
  status?: (status: number) => unknown;
  setHeader?: (name: string, value: string) => unknown;
  send: (body: string) => unknown;
};

/**
 * The headers of every console response: a Content-Security-Policy that allows only the console's own
 * script and stylesheet (no inline script or style, no eval), no framing, no sniffing, no caching.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

/** @internal Sends a body with the console's headers, on either adapter. */
export function send(response: unknown, status: number, type: string, body: string, headers: Record<string, string> = {}): void {
  const res = response as AnyResponse;
  const all = { ...SECURITY_HEADERS, 'Content-Type': type, ...headers };
  if (typeof res.code === 'function' && typeof res.header === 'function') {
    res.code(status);
    for (const [name, value] of Object.entries(all)) res.header(name, value);
  } else {
    res.status!(status);
    for (const [name, value] of Object.entries(all)) res.setHeader!(name, value);
  }
  res.send(body);
}

function header(request: ConsoleRequest, name: string): string | undefined {
  const value = request.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.split(',')[0]!.trim();
}

/** @internal The request's path (without the query), as the client sent it. */
export function pathOf(request: ConsoleRequest): string {
  return (request.originalUrl ?? request.url ?? '/').split('?')[0]!;
}

/**
 * @internal
 * The relative link from a page to the console's root (with a trailing `/`), from the page's path and
 * how many segments below the root it is: relative links work under a global prefix and behind a proxy
 * that serves the app under another path.
 */
export function rootHref(path: string, depth: number): string {
  const trailing = path.endsWith('/');
  if (trailing) return depth === 0 ? './' : '../'.repeat(depth);
  // './' first: a last segment with a colon must not read as a scheme
  if (depth === 0) return `./${path.split('/').pop() ?? ''}/`;
  return depth === 1 ? './' : '../'.repeat(depth - 1);
}

/** @internal Whether the request reached the app over TLS (with `trustProxy`: as the proxy says). */
export function isHttps(request: ConsoleRequest, options: ResolvedConsoleOptions): boolean {
  if (options.trustProxy) {
    const proto = header(request, 'x-forwarded-proto');
    if (proto) return proto.toLowerCase() === 'https';
  }
  return request.socket?.encrypted === true;
}

/** @internal The console's own origin as the browser sees it (`Host`, or with `trustProxy` the forwarded host and scheme). */
export function ownOrigin(request: ConsoleRequest, options: ResolvedConsoleOptions): string | undefined {
  const host = (options.trustProxy ? header(request, 'x-forwarded-host') : undefined) ?? header(request, 'host');
  if (!host) return undefined;
  return `${isHttps(request, options) ? 'https' : 'http'}://${host}`.toLowerCase();
}

/**
 * @internal
 * Why a state-changing request must be refused, or `undefined`: its `Origin` (or, without one, its
 * `Referer`'s origin) must be the console's own or an allowed one.
 */
export function originProblem(request: ConsoleRequest, options: ResolvedConsoleOptions): string | undefined {
  let origin = header(request, 'origin');
  if (!origin || origin === 'null') {
    const referer = header(request, 'referer');
    try {
      origin = referer ? new URL(referer).origin : undefined;
    } catch {
      origin = undefined;
    }
  }
  if (!origin) return 'the request has no Origin or Referer header (a browser sends one with every form; another client must send Origin)';
  const own = ownOrigin(request, options);
  const allowed = [...(own ? [own] : []), ...options.allowedOrigins];
  if (allowed.includes(origin.toLowerCase())) return undefined;
  return `its origin ${origin} is not the console's (${own ?? 'unknown host'})${options.trustProxy ? '' : '; behind a reverse proxy set trustProxy: true'} or one of allowedOrigins`;
}

/** @internal The name of the console's CSRF cookie. */
export const CSRF_COOKIE = 'dw-console-csrf';

/** @internal The CSRF token of the request's cookie, if it has a well-formed one. */
export function cookieToken(request: ConsoleRequest): string | undefined {
  const raw = request.headers.cookie;
  const cookies = Array.isArray(raw) ? raw.join('; ') : (raw ?? '');
  for (const part of cookies.split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === CSRF_COOKIE && /^[A-Za-z0-9_-]{32,64}$/.test(value.join('='))) return value.join('=');
  }
  return undefined;
}

/** @internal A new token, and its `Set-Cookie` value (HttpOnly, SameSite=Strict, Secure over TLS). */
export function newToken(request: ConsoleRequest, options: ResolvedConsoleOptions): { token: string; cookie: string } {
  const token = randomBytes(24).toString('base64url');
  const secure = isHttps(request, options) ? '; Secure' : '';
  return { token, cookie: `${CSRF_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict${secure}` };
}

/** @internal Whether a posted token equals the cookie's (the double-submit check; the origin check runs too). */
export function tokenMatches(request: ConsoleRequest, posted: unknown): boolean {
  const cookie = cookieToken(request);
  if (!cookie || typeof posted !== 'string' || posted.length !== cookie.length) return false;
  return timingSafeEqual(Buffer.from(posted), Buffer.from(cookie));
}

/** @internal Who acts, for the log: the guard's `request.user` (its username, name, email or id), else `unknown`. */
export function actorOf(request: ConsoleRequest): string {
  const user = request.user as Record<string, unknown> | string | undefined;
  if (typeof user === 'string') return user;
  if (user && typeof user === 'object') {
    for (const key of ['username', 'name', 'email', 'id', 'sub']) {
      const value = user[key];
      if (typeof value === 'string' || typeof value === 'number') return String(value);
    }
  }
  return 'unknown';
}
