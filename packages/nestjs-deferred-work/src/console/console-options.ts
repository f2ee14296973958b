import { hostname } from 'node:os';
import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';
import type { DeferredItem } from '../core/items/deferred-item.interface';
import { DeferredWorkConfigError } from '../core/errors/deferred-work-config.error';

/** Options of `DeferredWorkConsoleModule.forRoot()`. */
export interface DeferredWorkConsoleOptions {
  /**
   * The guards every route of the console runs — the page, its data, its assets and every action (at
   * least one: the console can redrive and purge dead letters). A page cannot send a bearer header:
   * use a guard a browser can pass (HTTP Basic, or the app's session cookie; see docs/console.md).
   * Required.
   */
  guards: Array<Type<CanActivate> | CanActivate>;
  /** Modules the guards' own dependencies come from (a guard class is built in the console's module). Default `[]`. */
  imports?: ModuleMetadata['imports'];
  /** Where the console is served, under the app's global prefix. Default `'deferred-work'`. */
  path?: string;
  /** The name of the instance the page shows (several replicas: each shows its own). Default `"<hostname> (pid <pid>)"`. */
  instance?: string;
  /** How often the overview refreshes in the browser, in ms (1000 to 60000). Default `5000`. */
  refreshMs?: number;
  /**
   * How often `stats()` is sampled for the sparklines, in ms (1000 to 60000), while the console is
   * mounted: the last 360 samples are kept (an hour at the default; at most 64 sinks, under 1 MB). Default `10000`.
   */
  sampleIntervalMs?: number;
  /**
   * A link for a dead letter's trace id: `{traceId}` is replaced by the id, e.g.
   * `'https://grafana.example.com/explore?traceId={traceId}'`. Default none (the id as text).
   */
  traceUrl?: string;
  /** Show dead letters' payloads (job data, log message and fields, metric value and tags). Default `false`: hidden. */
  showPayloads?: boolean;
  /**
   * What to show of an item's payload instead (takes precedence over `showPayloads`): the value it returns
   * is shown as JSON, escaped. E.g. `(item) => (item.kind === 'job' ? { orderId: item.data.orderId } : undefined)`.
   * Default none.
   */
  redact?: (item: DeferredItem) => unknown;
  /**
   * Origins (`https://ops.example.com`) besides the console's own that may post its actions. Default `[]`:
   * only the origin the request was sent to (its `Host`, and with `trustProxy` its `X-Forwarded-Host` and
   * `-Proto`).
   */
  allowedOrigins?: string[];
  /**
   * Whether to believe `X-Forwarded-Host` and `X-Forwarded-Proto` (behind a TLS-terminating reverse proxy
   * that sets them) for the console's own origin and its cookie's `Secure` flag. Default `false`.
   */
  trustProxy?: boolean;
  /** Dead letters per page of the list (1 to 500). Default `50`. */
  pageSize?: number;
}

/** @internal The options with their defaults. */
export interface ResolvedConsoleOptions {
  guards: Array<Type<CanActivate> | CanActivate>;
  path: string;
  instance: string;
  refreshMs: number;
  sampleIntervalMs: number;
  traceUrl?: string;
  showPayloads: boolean;
  redact?: (item: DeferredItem) => unknown;
  allowedOrigins: string[];
  trustProxy: boolean;
  pageSize: number;
}

const PREFIX = 'DeferredWorkConsoleModule.forRoot';

function fail(option: string, problem: string, fix: string): never {
  throw new DeferredWorkConfigError(`${PREFIX}({ ${option} })`, problem, fix);
}

function whole(option: string, value: unknown, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    fail(option, `must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`, `Leave it out for ${fallback}.`);
  }
  return value;
}

/** @internal Checks the options (each error says how to fix it) and applies the defaults. */
export function resolveConsoleOptions(options: DeferredWorkConsoleOptions): ResolvedConsoleOptions {
  if (!options || typeof options !== 'object') fail('guards', 'no options given', 'Pass DeferredWorkConsoleModule.forRoot({ guards: [YourAdminGuard] }).');
  if (!Array.isArray(options.guards) || options.guards.length === 0 || options.guards.some((g) => !g)) {
    fail(
      'guards',
      'no guard given: the console can redrive and purge dead letters',
      'Pass forRoot({ guards: [YourAdminGuard] }) with a guard a browser can pass (HTTP Basic or your session cookie; see docs/console.md).',
    );
  }
  const path = options.path ?? 'deferred-work';
  if (typeof path !== 'string' || !/^[A-Za-z0-9._~\-/]*$/.test(path) || path.replace(/\//g, '') === '') {
    fail('path', `must be a non-empty URL path of letters, digits and - _ . ~ /, got ${JSON.stringify(path)}`, "Pass e.g. path: 'ops/deferred-work'.");
  }
  if (options.traceUrl !== undefined && (typeof options.traceUrl !== 'string' || !options.traceUrl.includes('{traceId}') || !/^https?:\/\//.test(options.traceUrl))) {
    fail('traceUrl', `must be an http(s) URL containing {traceId}, got ${JSON.stringify(options.traceUrl)}`, "Pass e.g. 'https://tempo.example.com/trace/{traceId}'.");
  }
  if (options.redact !== undefined && typeof options.redact !== 'function') fail('redact', 'must be a function (item) => what to show', 'Pass a function, or leave it out.');
  const allowedOrigins = options.allowedOrigins ?? [];
  if (!Array.isArray(allowedOrigins)) fail('allowedOrigins', 'must be an array of origins', "Pass e.g. ['https://ops.example.com'].");
  for (const origin of allowedOrigins) {
    if (typeof origin !== 'string' || !/^https?:\/\/[^/\s]+$/.test(origin)) {
      fail('allowedOrigins', `holds ${JSON.stringify(origin)}, which is not an origin (scheme://host[:port], no path)`, "Pass e.g. ['https://ops.example.com'].");
    }
  }
  const instance = options.instance ?? `${hostname()} (pid ${process.pid})`;
  if (typeof instance !== 'string' || instance === '') fail('instance', 'must be a non-empty string', 'Leave it out for "<hostname> (pid <pid>)".');
  return {
    guards: options.guards,
    path: path.replace(/^\/+|\/+$/g, ''),
    instance,
    refreshMs: whole('refreshMs', options.refreshMs, 1000, 60_000, 5000),
    sampleIntervalMs: whole('sampleIntervalMs', options.sampleIntervalMs, 1000, 60_000, 10_000),
    traceUrl: options.traceUrl,
    showPayloads: options.showPayloads === true,
    redact: options.redact,
    allowedOrigins: allowedOrigins.map((o) => o.toLowerCase()),
    trustProxy: options.trustProxy === true,
    pageSize: whole('pageSize', options.pageSize, 1, 500, 50),
  };
}
