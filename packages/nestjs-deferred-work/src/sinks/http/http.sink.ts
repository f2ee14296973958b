import * as http from 'node:http';
import * as https from 'node:https';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { SinkWriteError } from '../errors/sink-write.error';
import type { SinkItem, SinkKind } from '../items/deferred-item.interface';
import type { DeferredSink, SinkItemFailure, SinkWriteContext, SinkWriteResult } from './deferred-sink.interface';
import type { HttpSinkFormat, HttpSinkOptions } from './http-sink.options';

const gzipAsync = promisify(gzipCallback);

const KINDS: readonly SinkKind[] = ['job', 'log', 'metric'];
/** Statuses worth another try (the OTLP/HTTP exporter's list). Everything else that is not 2xx is final. */
const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);
/** Headers the sink computes itself. */
const RESERVED_HEADERS = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection']);
const CONTENT_TYPES: Record<HttpSinkFormat, string> = { json: 'application/json', ndjson: 'application/x-ndjson' };

/** Defaults of `HttpSinkOptions` (documented there). */
export const HTTP_SINK_DEFAULTS = Object.freeze({
  name: 'http',
  format: 'json' as HttpSinkFormat,
  gzipLevel: 6,
  gzipMinBytes: 1024,
  agentOptions: Object.freeze({ keepAlive: true, keepAliveMsecs: 1000, timeout: 4000 }),
});

interface Route {
  url: URL;
  /** Protocol, host and path: safe to show (no credentials, no query). */
  display: string;
  agent: http.Agent;
  request: typeof http.request;
}

interface Group {
  route: Route;
  indexes: number[];
  parts: string[];
}

/**
 * Reads an HTTP `Retry-After` value, in either form (RFC 9110 §10.2.3): delta-seconds (`"120"`) or
 * an HTTP-date (`"Wed, 21 Oct 2015 07:28:00 GMT"`, taken relative to `now`). Returns milliseconds
 * (`0` for a date in the past), or `undefined` when the header is absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return undefined; // "-1", "1.5": neither form
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** Protocol, host and path of a URL: never its credentials, query or fragment. */
function displayUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** The item as it goes over the wire: explicit fields only (never a function, nor routing details). */
function toWire(item: SinkItem): object {
  switch (item.kind) {
    case 'job':
      return { kind: 'job', queue: item.queue, name: item.name, data: item.data, opts: item.opts, createdAt: item.createdAt };
    case 'log':
      return { kind: 'log', level: item.level, message: item.message, fields: item.fields, createdAt: item.createdAt };
    case 'metric':
      return { kind: 'metric', name: item.name, value: item.value, tags: item.tags, createdAt: item.createdAt };
  }
}

function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  return value === null ? 'null' : typeof value === 'object' ? 'an object' : String(value);
}

function causeMessage(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}

/**
 * Sends batches to an HTTP endpoint: one POST per distinct URL per batch, as JSON (`{"items":[...]}`)
 * or NDJSON, over keep-alive connections, optionally gzipped.
 *
 * Each `write` makes exactly one attempt per URL; the dispatcher retries. Failures are reported as
 * `SinkWriteError`: retryable for 429, 502, 503, 504, connection errors and aborts (timeouts), with
 * `retryAfterMs` taken from `Retry-After`; not retryable for any other status. When a batch spans
 * several URLs and only some fail, `write` resolves with the failed items' indexes.
 *
 * Headers (and credentials or query strings in URLs) never appear in errors or logs.
 */
export class HttpSink implements DeferredSink<SinkItem> {
  readonly name: string;
  private readonly routes: Readonly<Record<SinkKind, Route>>;
  private readonly agents: http.Agent[] = [];
  private readonly format: HttpSinkFormat;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly gzip: { level: number; minBytes: number } | undefined;
  private closed = false;

  constructor(options: HttpSinkOptions) {
    if (options === null || typeof options !== 'object') {
      throw new TypeError(`HttpSink: expected an options object, got ${describeValue(options)}. Pass new HttpSink({ url: 'https://…' }).`);
    }
    this.name = options.name ?? HTTP_SINK_DEFAULTS.name;
    if (typeof this.name !== 'string' || this.name === '') {
      throw new TypeError(`HttpSink: option "name" must be a non-empty string, got ${describeValue(options.name)}. Pass a unique name, or leave it out for "http".`);
    }
    const prefix = `HttpSink "${this.name}"`;

    this.format = options.format ?? HTTP_SINK_DEFAULTS.format;
    if (this.format !== 'json' && this.format !== 'ndjson') {
      throw new TypeError(`${prefix}: option "format" must be "json" or "ndjson", got ${describeValue(options.format)}.`);
    }
    this.headers = HttpSink.checkHeaders(prefix, options.headers);
    this.gzip = HttpSink.checkGzip(prefix, options.gzip);

    const agentOptions = { ...HTTP_SINK_DEFAULTS.agentOptions, ...(options.agentOptions ?? {}) };
    const agentFor: Partial<Record<'http:' | 'https:', http.Agent>> = {};
    const byHref = new Map<string, Route>();
    const makeRoute = (option: string, value: string | URL): Route => {
      const url = HttpSink.checkUrl(prefix, option, value);
      const existing = byHref.get(url.href);
      if (existing) return existing;
      const protocol = url.protocol as 'http:' | 'https:';
      let agent = agentFor[protocol];
      if (!agent) {
        agent = protocol === 'https:' ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
        agentFor[protocol] = agent;
        this.agents.push(agent);
      }
      const route: Route = {
        url,
        display: displayUrl(url),
        agent,
        request: protocol === 'https:' ? https.request : http.request,
      };
      byHref.set(url.href, route);
      return route;
    };

    const urls = options.urls ?? {};
    if (urls === null || typeof urls !== 'object') {
      throw new TypeError(`${prefix}: option "urls" must be an object such as { log: 'https://…', metric: 'https://…' }, got ${describeValue(urls)}.`);
    }
    for (const key of Object.keys(urls)) {
      if (!KINDS.includes(key as SinkKind)) {
        throw new TypeError(`${prefix}: option "urls.${key}": "${key}" is not a kind of item. Use "job", "log" or "metric" (others go to "url").`);
      }
    }
    const fallback = options.url === undefined ? undefined : makeRoute('url', options.url);
    const routes = {} as Record<SinkKind, Route>;
    for (const kind of KINDS) {
      const perKind = urls[kind];
      if (perKind !== undefined) routes[kind] = makeRoute(`urls.${kind}`, perKind);
      else if (fallback) routes[kind] = fallback;
      else {
        throw new TypeError(`${prefix}: no URL for kind "${kind}". Pass "url" (the endpoint for every kind without its own) or "urls.${kind}".`);
      }
    }
    this.routes = routes;
  }

  async write(batch: readonly SinkItem[], { signal }: SinkWriteContext): Promise<void | SinkWriteResult> {
    if (this.closed) throw new SinkWriteError(`HttpSink "${this.name}" is shut down; it sends nothing more.`, { retryable: false });
    if (signal.aborted) throw this.abortError('the write', signal);
    if (batch.length === 0) return;

    const failed: SinkItemFailure[] = [];
    const groups = new Map<Route, Group>();
    batch.forEach((item, index) => {
      const route = this.routes[item.kind as SinkKind] as Route | undefined;
      if (!route) {
        const what = item.kind === ('callback' as string) ? 'a callback runs in-process and' : `an item of kind "${String(item.kind)}"`;
        failed.push({ index, retryable: false, error: new SinkWriteError(`HttpSink "${this.name}": ${what} cannot be sent over HTTP.`, { retryable: false }) });
        return;
      }
      let json: string;
      try {
        json = JSON.stringify(toWire(item));
      } catch (error) {
        failed.push({
          index,
          retryable: false,
          error: new SinkWriteError(`HttpSink "${this.name}": item cannot be serialised to JSON (${causeMessage(error)}).`, { retryable: false, cause: error }),
        });
        return;
      }
      let group = groups.get(route);
      if (!group) groups.set(route, (group = { route, indexes: [], parts: [] }));
      group.indexes.push(index);
      group.parts.push(json);
    });

    const list = [...groups.values()];
    const outcomes = await Promise.allSettled(list.map((group) => this.post(group, signal)));
    const errors: SinkWriteError[] = [];
    for (let i = 0; i < list.length; i++) {
      const outcome = outcomes[i];
      if (outcome.status === 'fulfilled') continue;
      const error = this.asSinkError(outcome.reason);
      errors.push(error);
      for (const index of list[i].indexes) failed.push({ index, error, retryable: error.retryable });
    }
    if (failed.length === 0) return;

    const retryAfters = errors.filter((e) => e.retryable && e.retryAfterMs !== undefined).map((e) => e.retryAfterMs!);
    const retryAfterMs = retryAfters.length > 0 ? Math.max(...retryAfters) : undefined;
    // Every item failed for one kind of reason: a plain throw says it best.
    const allPostsFailed = failed.length === batch.length && errors.length === list.length;
    if (allPostsFailed && errors.length > 0 && errors.every((e) => e.retryable === errors[0].retryable)) {
      if (errors.length === 1) throw errors[0];
      throw new SinkWriteError(errors.map((e) => e.message).join('; '), { retryable: errors[0].retryable, retryAfterMs, cause: errors });
    }
    return { failed, retryAfterMs };
  }

  /** Closes every connection (idle or not) and makes later writes fail. Idempotent. */
  shutdown(): void {
    if (this.closed) return;
    this.closed = true;
    for (const agent of this.agents) agent.destroy();
  }

  /** One POST of one group; resolves on 2xx, rejects with a `SinkWriteError` otherwise. */
  private async post(group: Group, signal: AbortSignal): Promise<void> {
    const { route } = group;
    const text = this.format === 'ndjson' ? `${group.parts.join('\n')}\n` : `{"items":[${group.parts.join(',')}]}`;
    let body = Buffer.from(text, 'utf8');
    const headers: Record<string, string> = {
      'user-agent': 'nestjs-deferred-work',
      'content-type': CONTENT_TYPES[this.format],
      ...this.headers,
    };
    if (this.gzip && body.length >= this.gzip.minBytes) {
      body = await gzipAsync(body, { level: this.gzip.level });
      headers['content-encoding'] = 'gzip';
    }
    headers['content-length'] = String(body.length);
    if (signal.aborted) throw this.abortError(`POST ${route.display}`, signal);
    if (this.closed) throw new SinkWriteError(`HttpSink "${this.name}" is shut down; it sends nothing more.`, { retryable: false });

    await new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (error?: Error) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve();
      };
      const req = route.request(route.url, { method: 'POST', agent: route.agent, headers });
      const onAbort = () => {
        const error = this.abortError(`POST ${route.display}`, signal);
        settle(error);
        req.destroy(error); // frees the socket: nothing is left open behind a timed-out write
      };
      signal.addEventListener('abort', onAbort, { once: true });
      // Stays attached after settling: a late socket error must never become an uncaught exception.
      req.on('error', (error) => {
        settle(
          error instanceof SinkWriteError
            ? error
            : new SinkWriteError(`HttpSink "${this.name}": POST ${route.display} failed: ${causeMessage(error)}.`, {
                retryable: true,
                cause: error,
              }),
        );
      });
      req.on('response', (res) => {
        const failure = this.statusError(route, res);
        res.on('error', () => undefined);
        // Read the body to its end so the socket goes back to the pool; its content is not used.
        res.resume();
        res.on('end', () => settle(failure));
        res.on('close', () => settle(failure));
      });
      req.end(body);
    });
  }

  /** `undefined` for 2xx; otherwise the error the status calls for. */
  private statusError(route: Route, res: http.IncomingMessage): SinkWriteError | undefined {
    const status = res.statusCode ?? 0;
    if (status >= 200 && status < 300) return undefined;
    const reason = res.statusMessage ? ` ${res.statusMessage}` : '';
    const what = `HttpSink "${this.name}": POST ${route.display} answered ${status}${reason}`;
    if (RETRYABLE_STATUSES.has(status)) {
      const retryAfterMs = parseRetryAfter(res.headers['retry-after']);
      const wait = retryAfterMs === undefined ? '' : `, Retry-After ${retryAfterMs} ms`;
      return new SinkWriteError(`${what} (retryable${wait}).`, { retryable: true, retryAfterMs });
    }
    const hint =
      status >= 300 && status < 400
        ? ' Redirects are not followed: configure the final URL.'
        : status === 413
          ? ' The body is too large for the receiver: lower maxBatchSize for this sink or enable gzip.'
          : status === 401 || status === 403
            ? ' Check the credentials in "headers".'
            : '';
    return new SinkWriteError(`${what} (not retried).${hint}`, { retryable: false });
  }

  private abortError(what: string, signal: AbortSignal): SinkWriteError {
    const reason = signal.reason instanceof Error ? signal.reason.message : 'aborted';
    return new SinkWriteError(`HttpSink "${this.name}": ${what} aborted: ${reason}.`, { retryable: true, cause: signal.reason });
  }

  private asSinkError(error: unknown): SinkWriteError {
    if (error instanceof SinkWriteError) return error;
    return new SinkWriteError(`HttpSink "${this.name}": ${causeMessage(error)}.`, { retryable: true, cause: error });
  }

  private static checkUrl(prefix: string, option: string, value: unknown): URL {
    let url: URL;
    try {
      if (value instanceof URL) url = new URL(value.href);
      else if (typeof value === 'string') url = new URL(value);
      else throw new Error('not a string');
    } catch {
      throw new TypeError(
        `${prefix}: option "${option}" is not an absolute URL (got ${describeValue(value)}). ` +
          'Pass one such as "https://collector.example.com/v1/items".',
      );
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TypeError(
        `${prefix}: option "${option}" must use http: or https:, got "${url.protocol}" (${displayUrl(url)}). ` +
          'Pass an http:// or https:// URL.',
      );
    }
    return url;
  }

  private static checkHeaders(prefix: string, headers: unknown): Record<string, string> {
    if (headers === undefined) return {};
    if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) {
      throw new TypeError(`${prefix}: option "headers" must be an object of header names to string values, got ${describeValue(headers)}.`);
    }
    const checked: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      const lower = name.toLowerCase();
      try {
        http.validateHeaderName(name);
      } catch {
        throw new TypeError(`${prefix}: header name ${JSON.stringify(name)} is not a valid HTTP header name. Use letters, digits and -.`);
      }
      if (RESERVED_HEADERS.has(lower)) {
        throw new TypeError(`${prefix}: header "${lower}" is set by the sink itself. Remove it from "headers" (use the "gzip" option for compression).`);
      }
      // The value is never echoed: it is often a secret.
      if (typeof value !== 'string') {
        throw new TypeError(`${prefix}: header "${lower}" must have a string value (got ${value === null ? 'null' : typeof value}). Convert it with String(...).`);
      }
      try {
        http.validateHeaderValue(name, value);
      } catch {
        throw new TypeError(`${prefix}: header "${lower}" has an invalid value (it contains a line break or another control character). Remove those characters.`);
      }
      if (lower in checked) {
        throw new TypeError(`${prefix}: header "${lower}" is given twice (header names are case-insensitive). Keep one.`);
      }
      checked[lower] = value;
    }
    return checked;
  }

  private static checkGzip(prefix: string, gzip: unknown): { level: number; minBytes: number } | undefined {
    if (gzip === undefined || gzip === false) return undefined;
    if (gzip === true) return { level: HTTP_SINK_DEFAULTS.gzipLevel, minBytes: HTTP_SINK_DEFAULTS.gzipMinBytes };
    if (gzip === null || typeof gzip !== 'object') {
      throw new TypeError(`${prefix}: option "gzip" must be true, false or { level, minBytes }, got ${describeValue(gzip)}.`);
    }
    const { level = HTTP_SINK_DEFAULTS.gzipLevel, minBytes = HTTP_SINK_DEFAULTS.gzipMinBytes } = gzip as { level?: unknown; minBytes?: unknown };
    if (typeof level !== 'number' || !Number.isInteger(level) || level < 1 || level > 9) {
      throw new TypeError(
        `${prefix}: option "gzip.level" must be a whole number from 1 (fastest) to 9 (smallest), got ${describeValue(level)}. ` +
          `Leave it out for ${HTTP_SINK_DEFAULTS.gzipLevel}, or use gzip: false to send uncompressed.`,
      );
    }
    if (typeof minBytes !== 'number' || !Number.isInteger(minBytes) || minBytes < 0) {
      throw new TypeError(
        `${prefix}: option "gzip.minBytes" must be a whole number >= 0, got ${describeValue(minBytes)}. ` +
          `Leave it out for ${HTTP_SINK_DEFAULTS.gzipMinBytes}.`,
      );
    }
    return { level, minBytes };
  }
}
