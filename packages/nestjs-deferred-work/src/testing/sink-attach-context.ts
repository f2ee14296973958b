import type { SinkAttachContext } from '../core/sink.interface';
import { ClientHolds } from '../sinks/kit/hold-open';

/** Options of {@link sinkAttachContext}. */
export interface SinkAttachContextOptions {
  /** The app's providers, by injection token. Default: none. */
  providers?: ReadonlyMap<unknown, unknown> | Readonly<Record<string, unknown>>;
  /** What the drain, and a held client's close, wait for. Default: nothing (resolves at once). */
  drain?: () => Promise<unknown>;
  /** Receives the sink's warnings. Default: dropped. */
  warn?: (message: string) => void;
}

/**
 * A `SinkAttachContext` for testing a sink outside an app: `resolve` finds `providers` by token,
 * `holdOpen` holds clients the way the module does (their closes wait for `drain`), and `closing()`
 * resolves once the closes postponed until the drain have run.
 *
 * @example
 * const context = sinkAttachContext({ providers: { BullQueue_mail: queue } });
 * await sink.attach(context);
 */
export function sinkAttachContext(options: SinkAttachContextOptions = {}): SinkAttachContext & { closing(): Promise<void> } {
  const providers = options.providers instanceof Map ? options.providers : new Map(Object.entries(options.providers ?? {}));
  const drain = options.drain ?? (async () => undefined);
  const holds = new ClientHolds(() => drain());
  return {
    drain,
    resolve: <T>(token: unknown) => providers.get(token) as T | undefined,
    holdOpen: (client, hold) => holds.hold(client, hold),
    providers: () => [...providers].map(([token, instance]) => ({ token, instance })),
    warn: options.warn ?? (() => undefined),
    closing: () => holds.closing(),
  };
}
