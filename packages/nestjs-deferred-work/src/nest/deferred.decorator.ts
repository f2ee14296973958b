import { createParamDecorator, type LoggerService } from '@nestjs/common';
import { deferredParamFactory } from './deferred-param';
import type { DeferredMetricHandle } from './handles/deferred-metric.handle';
import { clientParamFactory, loggerParamFactory, metricParamFactory, queueParamFactory } from './handles/param-handles';

export { deferredParamFactory } from './deferred-param';

/**
 * Injects the current request's {@link DeferredScope}. On an `@AfterResponse()` route its items
 * wait for the response to finish; elsewhere they go straight to the dispatcher. Needs no
 * interceptor: resolving this parameter opens the request's scope.
 *
 * Its members inject the deferred handles the same way, bound to the request: `@Deferred.queue('mail')`
 * (a Bull or BullMQ queue's `add`/`addBulk`), `@Deferred.client('EVENTS')` (a microservice client's
 * `emit`), `@Deferred.metric('orders_total')` (prom-client's `inc`/`observe`/…),
 * `@Deferred.logger(context?)` (a `LoggerService`; default context: the controller's class name).
 */
export const Deferred = Object.assign(createParamDecorator(deferredParamFactory), {
  /** The queue registered as `name`, its `add`/`addBulk` deferred for this request (see `InjectDeferredQueue`). */
  queue: (name: string): ParameterDecorator => createParamDecorator(queueParamFactory)(name),
  /** The microservice client registered as `name`, its `emit` deferred for this request (see `InjectDeferredClient`). */
  client: (name: string): ParameterDecorator => createParamDecorator(clientParamFactory)(name),
  /** The metric `name` with prom-client's calls, deferred for this request (see `InjectDeferredMetric`). */
  metric: (name: string): ParameterDecorator => createParamDecorator(metricParamFactory)(name),
  /** A `LoggerService` whose records are deferred for this request; context: `context`, else the controller's name. */
  logger: (context?: string): ParameterDecorator => createParamDecorator(loggerParamFactory)(context),
});

/** The types the handle parameters have (declare the parameter as the real type, e.g. BullMQ's `Queue`, or as these). */
export type { DeferredMetricHandle, LoggerService };
