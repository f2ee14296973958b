import type * as http from 'node:http';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkItemFailure, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { failureCode } from '../kit/failure-codes';
import { isolate } from '../kit/isolate';
import { type Part, Partitions } from '../kit/partitions';
import { HTTP_SINK_DEFAULTS, checkGzip, checkHeaders } from './http-sink.config';
import { checkOneOf, checkOptionsObject, checkSinkName } from '../kit/option-checks';
import type { HttpSinkFormat, HttpSinkOptions } from './http-sink.options';
import { buildRoutes, type Route } from './http-routes';
import { CONTENT_STATUSES, statusError } from './http-status';
import { causeMessage, idempotencyKey, toWire } from './http-wire';
import { OffloadedSink } from '../offload/offloaded.sink';
import { workerHttpOptions } from './http.offload';

export { HTTP_SINK_DEFAULTS } from './http-sink.config';
export { parseRetryAfter } from './http-wire';

const gzipAsync = promisify(gzipCallback);

const CONTENT_TYPES: Record<HttpSinkFormat, string> = { json: 'application/json', ndjson: 'application/x-ndjson' };

/**
 * How long the body of a 2xx answer may take to end once its status has settled the write (its items
 * delivered): then the response is destroyed, freeing its socket, so that a receiver that keeps
 * streaming cannot hold one socket per write.
 */
export const BODY_AFTER_SUCCESS_MS = 5000;

/**
 * Sends batches to an HTTP endpoint: one POST per distinct URL per batch, as JSON (`{"items":[...]}`)
 * or NDJSON, over keep-alive connections, optionally gzipped.
 *
 * Each `write` makes one attempt per URL; the dispatcher retries. Failures are reported as
 * `SinkWriteError` (with the status as its `code` when there was an answer): retryable for 429, 502,
 * 503, 504, connection errors and aborts (timeouts), with `retryAfterMs` taken from `Retry-After`; not
 * retryable for any other status. When a POST of several items is refused with a status that blames
 * its body (400, 413, 422), it is split in halves and sent again, within the same write and its
 * signal, until each refused item is alone: only those fail, and the rest are delivered once. When
 * only some items fail, `write` resolves with their indexes.
 *
 * Headers (and credentials or query strings in URLs) never appear in errors or logs.
 */
export class HttpSink implements DeferredSink<SinkItem> {
  /**
   * An HTTP sink whose work — serialising, compressing and posting batches — runs in a worker thread,
   * off the request thread. Takes the same options as `new HttpSink()`, as plain data (checked here).
   * See docs/offload.md for when it pays.
   */
  static offloaded(options: HttpSinkOptions): OffloadedSink {
    const probe = new HttpSink(options); // the options checked here, where a mistake was made
    probe.shutdown();
    return new OffloadedSink({ name: probe.name, module: 'http', options: workerHttpOptions(options) }, 'http');
  }

  readonly name: string;
  private readonly routes: Readonly<Record<SinkKind, Route>>;
  private readonly agents: http.Agent[];
  private readonly format: HttpSinkFormat;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly gzip: { level: number; minBytes: number } | undefined;
  private closed = false;

  constructor(options: HttpSinkOptions) {
    checkOptionsObject('HttpSink', options, "new HttpSink({ url: 'https://…' })");
    this.name = checkSinkName('HttpSink', options.name, HTTP_SINK_DEFAULTS.name);
    const prefix = `HttpSink "${this.name}"`;
    this.format = checkOneOf<HttpSinkFormat>(prefix, 'format', options.format, ['json', 'ndjson'], HTTP_SINK_DEFAULTS.format);
    this.headers = checkHeaders(prefix, options.headers);
    this.gzip = checkGzip(prefix, options.gzip);

    const { routes, agents } = buildRoutes(prefix, options);
    this.routes = routes;
    this.agents = agents;
  }

  async write(batch: readonly SinkItem[], { signal }: SinkWriteContext): Promise<void | SinkWriteResult> {
    if (this.closed) throw new SinkWriteError(`HttpSink "${this.name}" is shut down; it sends nothing more.`, { retryable: false });
    if (signal.aborted) throw this.abortError('the write', signal);
    if (batch.length === 0) return;

    const parts = new Partitions<Route, Route, string>();
    const failed = parts.failed;
    batch.forEach((item, index) => {
      const route = this.routes[item.kind as SinkKind] as Route | undefined;
      if (!route) {
        const what = item.kind === ('callback' as string) ? 'a callback runs in-process and' : `an item of kind "${String(item.kind)}"`;
        parts.refuse(index, new SinkWriteError(`HttpSink "${this.name}": ${what} cannot be sent over HTTP.`, { retryable: false }));
        return;
      }
      let json: string;
      try {
        json = JSON.stringify(toWire(item));
      } catch (error) {
        const problem = `HttpSink "${this.name}": item cannot be serialised to JSON (${causeMessage(error)}).`;
        parts.refuse(index, new SinkWriteError(problem, { retryable: false, cause: error }));
        return;
      }
      parts.add(route, index, json, () => route);
    });

    const list = parts.list();
    const outcomes = await Promise.all(list.map((part) => this.sendPart(batch, part, signal)));
    const refusedBeforeSending = failed.length;
    // The error of each part that failed as a whole (every item with the same error), if every part did.
    const whole: SinkWriteError[] = [];
    for (let i = 0; i < list.length; i++) {
      const errors = outcomes[i];
      if (errors[0] !== undefined && errors.every((e) => e === errors[0])) whole.push(errors[0]);
      errors.forEach((error, j) => {
        if (error === undefined) return;
        const failure: SinkItemFailure = { index: list[i].indexes[j], error, retryable: error.retryable };
        if (error.code !== undefined) failure.code = error.code;
        failed.push(failure);
      });
    }
    if (failed.length === 0) return;

    // Every POST failed as a whole for one kind of reason, and nothing was refused before sending: a plain throw says it best.
    if (refusedBeforeSending === 0 && whole.length === list.length && whole.every((e) => e.retryable === whole[0].retryable)) {
      if (whole.length === 1) throw whole[0];
      const retryAfterMs = Math.max(0, ...whole.map((e) => e.retryAfterMs ?? 0)) || undefined;
      throw new SinkWriteError(whole.map((e) => e.message).join('; '), { retryable: whole[0].retryable, retryAfterMs, cause: whole, code: whole.find((e) => e.code !== undefined)?.code });
    }
    return parts.result(); // each failure's retryAfterMs is its error's
  }

  /** Closes every connection (idle or not) and makes later writes fail. Idempotent. */
  shutdown(): void {
    if (this.closed) return;
    this.closed = true;
    for (const agent of this.agents) agent.destroy();
  }

  /**
   * Sends one part of a batch (the items for one URL) in one POST. When the receiver refuses it with a
   * status that blames the body and it holds several items, it is split in halves and each half sent
   * again (each POST with the `Idempotency-Key` of its own items), until every refused item is alone,
   * for as long as the write's signal allows. Resolves with one outcome per item of the part, in order:
   * `undefined` when delivered, else its error (never rejects).
   */
  private async sendPart(batch: readonly SinkItem[], part: Part<Route, string>, signal: AbortSignal): Promise<Array<SinkWriteError | undefined>> {
    const route = part.destination;
    const positions = part.indexes.map((_, p) => p);
    const scope = `${this.name}\n${route.display}`;
    const outcomes = await isolate(
      positions,
      (some) => this.post(route, some.map((p) => part.values[p]), signal, idempotencyKey(batch, some.map((p) => part.indexes[p]), scope)),
      { signal, splits: (error) => error instanceof SinkWriteError && error.code !== undefined && CONTENT_STATUSES.has(Number(error.code)) },
    );
    // Items not confirmed when the signal aborted carry its bare reason: one retryable error for them all.
    let aborted: SinkWriteError | undefined;
    return outcomes.map((outcome) => {
      if (outcome === undefined || outcome instanceof SinkWriteError) return outcome;
      if (signal.aborted && outcome === signal.reason) return (aborted ??= this.abortError(`POST ${route.display}`, signal));
      return this.asSinkError(outcome);
    });
  }

  /** One POST of items for one route; resolves on 2xx, rejects with a `SinkWriteError` otherwise. */
  private async post(route: Route, values: readonly string[], signal: AbortSignal, key: string | undefined): Promise<void> {
    const text = this.format === 'ndjson' ? `${values.join('\n')}\n` : `{"items":[${values.join(',')}]}`;
    let body = Buffer.from(text, 'utf8');
    const headers: Record<string, string> = {
      'user-agent': 'nestjs-deferred-work',
      'content-type': CONTENT_TYPES[this.format],
      ...this.headers,
    };
    if (key !== undefined) headers['idempotency-key'] = key;
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
                code: failureCode(error),
              }),
        );
      });
      req.on('response', (res) => {
        const failure = statusError(this.name, route, res, values.length);
        res.on('error', () => undefined);
        // Read the body to its end so the socket goes back to the pool; its content is not used.
        res.resume();
        // A 2xx is the receiver's word that it took the items: delivered now, whatever happens to the rest of the body.
        if (!failure) {
          settle();
          // ... whose socket is freed all the same if it does not end (a receiver that streams on after its 2xx)
          const timer = setTimeout(() => res.destroy(), BODY_AFTER_SUCCESS_MS);
          timer.unref();
          res.once('close', () => clearTimeout(timer));
        }
        res.on('end', () => settle(failure));
        res.on('close', () => settle(failure));
      });
      req.end(body);
    });
  }

  private abortError(what: string, signal: AbortSignal): SinkWriteError {
    const reason = signal.reason instanceof Error ? signal.reason.message : 'aborted';
    return new SinkWriteError(`HttpSink "${this.name}": ${what} aborted: ${reason}.`, { retryable: true, cause: signal.reason, code: failureCode(signal.reason) });
  }

  private asSinkError(error: unknown): SinkWriteError {
    if (error instanceof SinkWriteError) return error;
    return new SinkWriteError(`HttpSink "${this.name}": ${causeMessage(error)}.`, { retryable: true, cause: error });
  }
}
