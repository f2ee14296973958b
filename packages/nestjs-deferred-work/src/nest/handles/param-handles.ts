import type { ExecutionContext, LoggerService } from '@nestjs/common';
import type { DeferredScope } from '../../capture/deferred-scope.interface';
import { deferredParamFactory, scopeParamFactories } from '../deferred-param';
import { DeferredLogger } from './deferred-logger';
import type { DeferredMetricHandle } from './deferred-metric.handle';
import { currentHandles } from './scope-source';

/**
 * The handles as a handler's parameters (`@Deferred.queue('mail') mail: Queue`): bound to this request's
 * scope, opened by the parameter itself, like `@Deferred()` — no async context and no interceptor.
 */
function handles(what: string) {
  const found = currentHandles();
  if (!found) throw new Error(`@Deferred.${what}() was resolved outside a running application with DeferredWorkModule.`);
  return found;
}

export function queueParamFactory(name: string, context: ExecutionContext): object {
  const scope = deferredParamFactory(undefined, context);
  return handles('queue').queue(name, () => scope);
}

export function clientParamFactory(name: string, context: ExecutionContext): object {
  const scope = deferredParamFactory(undefined, context);
  return handles('client').client(name, () => scope);
}

export function metricParamFactory(name: string, context: ExecutionContext): DeferredMetricHandle {
  const scope = deferredParamFactory(undefined, context);
  return handles('metric').metric(name, () => scope);
}

export function loggerParamFactory(loggerContext: string | undefined, context: ExecutionContext): LoggerService {
  const scope: DeferredScope = deferredParamFactory(undefined, context);
  return new DeferredLogger(loggerContext ?? context.getClass().name, () => scope);
}

for (const factory of [queueParamFactory, clientParamFactory, metricParamFactory, loggerParamFactory]) scopeParamFactories.add(factory);
