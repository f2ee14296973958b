import type { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { AFTER_RESPONSE_METADATA, type AfterResponseOptions } from '../capture/after-response.metadata';
import { DeferredWorkConfigError } from '../core/errors/deferred-work-config.error';
import { RUN_WHENS, isRunWhen, isSinkKind } from '../core/items/item-kinds';
import type { ResolvedDeferredWorkOptions } from '../pipeline/resolved-options.interface';
import { isHandlerOutsideHttp } from './after-response.decorator';
import { checkSinkTakes, targetNames } from './options/option-checks';

/**
 * Every sink name and `when` in `@AfterResponse()` on the app's controllers (classes and methods)
 * must exist, and each sink must take the kind routed to it. Throws `DeferredWorkConfigError`.
 */
export function checkDecoratedRoutes(
  discovery: DiscoveryService,
  scanner: MetadataScanner,
  reflector: Reflector,
  options: ResolvedDeferredWorkOptions,
): void {
  const seen = new Set<object>();
  // Controllers (HTTP routes, microservice handlers), then providers (GraphQL resolvers).
  const classes = [
    ...discovery.getControllers().map((wrapper) => [wrapper.metatype, false] as const),
    ...discovery.getProviders().map((wrapper) => [wrapper.metatype, true] as const),
  ];
  for (const [metatype, isProvider] of classes) {
    const cls = metatype as (new (...args: never[]) => object) | undefined | null;
    if (typeof cls !== 'function' || !cls.prototype || seen.has(cls)) continue;
    seen.add(cls);
    const targets: Array<[string, object]> = [[cls.name, cls]];
    for (const method of scanner.getAllMethodNames(cls.prototype)) {
      targets.push([`${cls.name}.${method}()`, (cls.prototype as Record<string, object>)[method]]);
    }
    for (const [where, target] of targets) {
      const route = reflector.get<AfterResponseOptions | undefined>(AFTER_RESPONSE_METADATA, target as never);
      if (!route) continue;
      checkRoute(where, route, options);
      // A provider's class-level decorator is a resolver's: no HTTP route there to measure.
      if (route.timing && (isHandlerOutsideHttp(target) || (target === cls && isProvider))) {
        throw new DeferredWorkConfigError(
          `@AfterResponse({ timing: true }) on ${where}`,
          'timing measures HTTP routes (handler and send time of a response); a GraphQL resolver or a microservice handler has none of its own',
          'Remove timing there, or measure the HTTP route that serves it.',
        );
      }
    }
  }
}

function checkRoute(where: string, route: AfterResponseOptions, options: ResolvedDeferredWorkOptions): void {
  for (const [kind, target] of Object.entries(route.sinks ?? {})) {
    const option = `@AfterResponse({ sinks: { ${kind} } }) on ${where}`;
    for (const sink of targetNames(option, target)) checkRouteSink(option, kind, sink, options);
  }
  for (const [kind, when] of Object.entries(route.when ?? {})) {
    if (!isRunWhen(when)) {
      throw new DeferredWorkConfigError(
        `@AfterResponse({ when: { ${kind} } }) on ${where}`,
        `"${String(when)}" is not a condition`,
        `Use one of ${RUN_WHENS.join(', ')}.`,
      );
    }
  }
}

function checkRouteSink(option: string, kind: string, sink: string, options: ResolvedDeferredWorkOptions): void {
  {
    if (!options.sinks.has(sink)) {
      throw new DeferredWorkConfigError(
        option,
        `no sink is named "${sink}"`,
        `Configure a sink named "${sink}" in DeferredWorkModule.forRoot({ sinks }), or name a configured one.`,
      );
    }
    if (isSinkKind(kind)) checkSinkTakes(option, kind, sink, options.sinks);
  }
}
