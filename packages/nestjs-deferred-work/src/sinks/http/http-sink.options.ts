import type { AgentOptions } from 'node:https';
import type { SinkKind } from '../../core/items/deferred-item.interface';

/**
 * How a batch is put on the wire.
 * - `json`: one JSON object per request, `{"items":[...]}`, `Content-Type: application/json`.
 * - `ndjson`: one JSON item per line, each line ended by `\n`, `Content-Type: application/x-ndjson`.
 */
export type HttpSinkFormat = 'json' | 'ndjson';

/** Gzip settings of {@link HttpSinkOptions.gzip}. */
export interface HttpSinkGzipOptions {
  /**
   * zlib level, from `1` (fastest) to `9` (smallest, and several times the CPU of the default for a
   * few percent less). Default `6` (zlib's own default).
   */
  level?: number;
  /** Bodies smaller than this many bytes are sent uncompressed. Default `1024`. */
  minBytes?: number;
}

/** Options of {@link HttpSink}. */
export interface HttpSinkOptions {
  /** Sink name used by routing (`routing`, `sinkOptions`, `@AfterResponse({ sinks })`). Default `'http'`. */
  name?: string;
  /**
   * Endpoint (absolute `http:` or `https:` URL) that receives every kind not given its own URL in
   * `urls`. Required unless `urls` names all of `job`, `log` and `metric`. Credentials in the URL
   * (`https://user:pass@host/...`) are sent as Basic auth; the query string is kept. Neither is ever
   * shown in logs or error messages (those show protocol, host and path only).
   */
  url?: string | URL;
  /**
   * Endpoint per kind, e.g. `{ log: 'https://logs.example.com/v1', metric: 'https://metrics.example.com/v1' }`.
   * A batch with several kinds is split into one POST per distinct URL. Default: none (all to `url`).
   */
  urls?: Partial<Record<SinkKind, string | URL>>;
  /** Wire format. Default `'json'` (body `{"items":[...]}`). */
  format?: HttpSinkFormat;
  /**
   * Extra request headers sent with every POST, e.g. `{ authorization: 'Bearer …' }`. Never logged or
   * put in error messages. `content-type` and `user-agent` may be overridden; `content-length`,
   * `content-encoding`, `transfer-encoding` and `connection` are set by the sink and refused here.
   * Default `{}`.
   */
  headers?: Record<string, string>;
  /**
   * Gzip request bodies (`Content-Encoding: gzip`). `true` means `{ level: 6, minBytes: 1024 }`; an
   * object sets either. Compression runs on libuv's thread pool, not the event loop. Default `false`.
   */
  gzip?: boolean | HttpSinkGzipOptions;
  /**
   * Options of the keep-alive `http.Agent` / `https.Agent` the sink owns (TLS `ca`, `cert`, `key`,
   * `maxSockets`, …). Merged over the defaults `{ keepAlive: true, keepAliveMsecs: 1000, timeout: 4000 }`;
   * `timeout` closes a socket idle that long, under Node's default server `keepAliveTimeout` of 5 s,
   * so a reused socket is rarely one the receiver has just closed. The request timeout is not set here:
   * it is the dispatcher's `writeTimeoutMs`.
   */
  agentOptions?: AgentOptions;
}
