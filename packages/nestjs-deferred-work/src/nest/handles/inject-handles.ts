import { Inject } from '@nestjs/common';
import { deferredClientToken, deferredMetricToken, deferredPinoLoggerToken, deferredQueueToken, handlesInUse } from './handle-tokens';

/**
 * Injects a deferred handle on the queue registered as `name` (`BullModule.registerQueue`, Bull or
 * BullMQ) in place of `@InjectQueue(name)`: its `add(name, data, opts)` and `addBulk(jobs)` add the job
 * after the response has finished (on an `@AfterResponse()` route; at once elsewhere), batched with
 * other requests' jobs, retried, counted and drained; they resolve at once with a `DeferredJobReceipt`
 * (there is no `Job` yet). Every other member is the real queue's. Migrating a class is this decorator:
 *
 * ```ts
 * constructor(@InjectDeferredQueue('mail') private readonly mail: Queue) {}  // was @InjectQueue('mail')
 * ```
 *
 * The handle finds the request it is called in through an async context, which the module turns on
 * when a handle is in use (`asyncContext`); `@Deferred.queue('mail')` as a handler parameter needs none.
 */
export function InjectDeferredQueue(name: string): ParameterDecorator & PropertyDecorator {
  handlesInUse.queues.add(name);
  return Inject(deferredQueueToken(name));
}

/**
 * Injects a deferred handle on the microservice client registered as `name` (`ClientsModule.register`)
 * in place of `@Inject(name)`: its `emit(pattern, data)` sends the event after the response through the
 * `ClientProxySink` named `name` (`new ClientProxySink({ clientToken: name })`), and returns an
 * observable that completes at once. `send()` and the rest are the real client's.
 */
export function InjectDeferredClient(name: string): ParameterDecorator & PropertyDecorator {
  handlesInUse.clients.add(name);
  return Inject(deferredClientToken(name));
}

/**
 * Injects a deferred metric with prom-client's calls (`inc`, `dec`, `set`, `observe`, `labels`,
 * `startTimer`) in place of `@InjectMetric(name)` of `@willsoto/nestjs-prometheus`: its points go to
 * the metrics sinks (several with fan-out routing) after the response. `name` is the name declared in
 * the sinks.
 */
export function InjectDeferredMetric(name: string): ParameterDecorator & PropertyDecorator {
  handlesInUse.metrics.add(name);
  return Inject(deferredMetricToken(name));
}

/**
 * Injects a `DeferredPinoLogger` of `context` in place of nestjs-pino's `@InjectPinoLogger(context)`:
 * the same calls (`info({ orderId }, 'order placed')`, `error(err, 'failed')`), the records written by
 * the logger sink after the response.
 */
export function InjectDeferredPinoLogger(context = ''): ParameterDecorator & PropertyDecorator {
  handlesInUse.pinoLoggers.add(context);
  return Inject(deferredPinoLoggerToken(context));
}
