import type { ResolvedCorrelation } from '../core/correlation-options.interface';
import type { ItemCorrelation } from '../core/items/deferred-item.interface';
import type { OtelContextApi } from './async-context';

/** What the scope of one request (or one direct call) carries: its ids, and the context for callbacks. */
export interface Correlated {
  correlation?: Readonly<ItemCorrelation>;
  /** The OpenTelemetry context to run `run(fn)` callbacks in (only when a span is active). */
  otelContext?: unknown;
}

/** The part of `@opentelemetry/api` used here. */
export interface OtelApi {
  createContextKey?(description: string): symbol;
  context: {
    active(): unknown;
    with<A extends unknown[], R>(context: unknown, fn: (...args: A) => R, thisArg?: unknown, ...args: A): R;
    /** The registered context manager (a private method of the API; absent in old versions). */
    _getContextManager?(): unknown;
  };
  trace: {
    getSpanContext(context: unknown): { traceId: string; spanId: string; traceFlags?: number } | undefined;
    isSpanContextValid(spanContext: { traceId: string; spanId: string }): boolean;
  };
}

/**
 * @internal
 * Reads a request's correlation — the request id (header or function) and the active OpenTelemetry
 * span — once, when its scope opens. One frozen object is shared by every item of the request.
 */
export class Correlator {
  private otel: OtelApi | undefined;

  constructor(private readonly options: ResolvedCorrelation | undefined) {}

  /** Loads `@opentelemetry/api` when asked to. Rejects (bootstrap fails) when `openTelemetry: true` and it cannot be loaded. */
  async init(load: () => Promise<unknown> = () => import('@opentelemetry/api')): Promise<void> {
    const wanted = this.options?.openTelemetry;
    if (!wanted) return;
    try {
      const mod = (await load()) as OtelApi & { default?: OtelApi };
      this.otel = mod.trace && mod.context ? mod : mod.default;
    } catch (error) {
      if (wanted === 'auto') return;
      throw new Error(`it is true but @opentelemetry/api cannot be loaded (${(error as Error).message})`);
    }
  }

  /**
   * The OpenTelemetry context API, when it is loaded and a real context manager is registered (an SDK
   * started): the async context the app already runs, which the library can keep its scope in.
   */
  contextApi(): OtelContextApi | undefined {
    const otel = this.otel;
    if (!otel?.createContextKey) return undefined;
    let manager: unknown;
    try {
      manager = otel.context._getContextManager?.();
    } catch {
      return undefined;
    }
    const name = (manager as { constructor?: { name?: string } } | undefined)?.constructor?.name;
    if (!manager || name === 'NoopContextManager') return undefined;
    return otel as unknown as OtelContextApi;
  }

  /** Whether scopes need to ask at all. */
  get active(): boolean {
    return this.otel !== undefined || this.options?.requestIdHeader !== undefined || this.options?.requestId !== undefined;
  }

  /** A request's correlation, or `undefined` when it has nothing to carry. */
  forRequest(request: unknown): Correlated | undefined {
    const options = this.options;
    let requestId: string | undefined;
    if (options?.requestIdHeader) {
      const value = (request as { headers?: Record<string, string | string[] | undefined> }).headers?.[options.requestIdHeader];
      requestId = Array.isArray(value) ? value[0] : value;
    } else if (options?.requestId) {
      requestId = safely(options.requestId, request);
    }
    return this.withSpan(requestId);
  }

  /** Outside a request (direct scope): the active span only. */
  forCurrent(): Correlated | undefined {
    return this.withSpan(undefined);
  }

  /** `fn` to run in `otelContext` (as `run(fn)` callbacks do), or `fn` itself. Keeps whether `fn` takes the signal. */
  bind<R>(fn: (signal: AbortSignal) => R, otelContext: unknown): (signal: AbortSignal) => R {
    const otel = this.otel;
    if (!otel || otelContext === undefined) return fn;
    if (fn.length === 0) return () => otel.context.with(otelContext, fn as () => R);
    return (signal: AbortSignal) => otel.context.with(otelContext, fn, undefined, signal);
  }

  private withSpan(requestId: string | undefined): Correlated | undefined {
    let traceId: string | undefined;
    let spanId: string | undefined;
    let traceFlags: number | undefined;
    let otelContext: unknown;
    if (this.otel) {
      const active = this.otel.context.active();
      const span = this.otel.trace.getSpanContext(active);
      if (span && this.otel.trace.isSpanContextValid(span)) {
        ({ traceId, spanId, traceFlags } = span);
        otelContext = active;
      }
    }
    if (requestId === undefined && traceId === undefined) return undefined;
    const correlation: ItemCorrelation = {};
    if (requestId !== undefined) correlation.requestId = requestId;
    if (traceId !== undefined) {
      correlation.traceId = traceId;
      correlation.spanId = spanId;
      if (traceFlags !== undefined) correlation.traceFlags = traceFlags;
    }
    return { correlation: Object.freeze(correlation), otelContext };
  }
}

/** A user's `requestId` function that throws or returns a non-string gives no id (never breaks the request). */
function safely(fn: (request: unknown) => string | undefined, request: unknown): string | undefined {
  try {
    const id = fn(request);
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}
