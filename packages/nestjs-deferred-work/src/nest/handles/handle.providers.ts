import type { Provider } from '@nestjs/common';
import { DeferredHandles } from './deferred-handles';
import { DeferredPinoLogger } from './deferred-pino-logger';
import { deferredClientToken, deferredMetricToken, deferredPinoLoggerToken, deferredQueueToken, handlesInUse } from './handle-tokens';

/** The handles to provide: queues, microservice clients and metrics, by name. */
export interface DeferredHandleNames {
  /** Queues registered with `BullModule.registerQueue` (Bull or BullMQ), injected with `@InjectDeferredQueue(name)`. */
  queues?: readonly string[];
  /** Clients registered with `ClientsModule.register`, injected with `@InjectDeferredClient(name)`. */
  clients?: readonly string[];
  /** Metrics declared in the metrics sinks, injected with `@InjectDeferredMetric(name)`. */
  metrics?: readonly string[];
  /** Contexts of `PinoLogger`-style loggers, injected with `@InjectDeferredPinoLogger(context)`. */
  pinoLoggers?: readonly string[];
}

/** Providers of the handles named (and of every handle the decorators asked for, when `withUsed`). */
export function handleProviders(names: DeferredHandleNames = {}, withUsed = false): Provider[] {
  const queues = new Set([...(names.queues ?? []), ...(withUsed ? handlesInUse.queues : [])]);
  const clients = new Set([...(names.clients ?? []), ...(withUsed ? handlesInUse.clients : [])]);
  const metrics = new Set([...(names.metrics ?? []), ...(withUsed ? handlesInUse.metrics : [])]);
  const pinoLoggers = new Set([...(names.pinoLoggers ?? []), ...(withUsed ? handlesInUse.pinoLoggers : [])]);
  for (const context of names.pinoLoggers ?? []) handlesInUse.pinoLoggers.add(context);
  for (const name of names.queues ?? []) handlesInUse.queues.add(name);
  for (const name of names.clients ?? []) handlesInUse.clients.add(name);
  for (const name of names.metrics ?? []) handlesInUse.metrics.add(name);
  return [
    ...[...queues].map((name) => ({ provide: deferredQueueToken(name), inject: [DeferredHandles], useFactory: (h: DeferredHandles) => h.queue(name) })),
    ...[...clients].map((name) => ({ provide: deferredClientToken(name), inject: [DeferredHandles], useFactory: (h: DeferredHandles) => h.client(name) })),
    ...[...metrics].map((name) => ({ provide: deferredMetricToken(name), inject: [DeferredHandles], useFactory: (h: DeferredHandles) => h.metric(name) })),
    ...[...pinoLoggers].map((context) => ({
      provide: deferredPinoLoggerToken(context),
      inject: [DeferredHandles],
      useFactory: (h: DeferredHandles) => new DeferredPinoLogger(context || undefined, h.current),
    })),
  ];
}

/** The tokens of `providers` (to export them). */
export function tokensOf(providers: Provider[]): Array<string | symbol> {
  return providers.map((p) => (p as { provide: string }).provide);
}
