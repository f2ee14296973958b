import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit, Optional } from '@nestjs/common';
import { DiscoveryService, HttpAdapterHost, MetadataScanner, Reflector } from '@nestjs/core';
import { GLOBAL_INTERCEPTOR_REGISTERED, type GlobalInterceptorState } from './deferred-work.module-definition';
import { openerOn, registerOpener, unregisterOpener } from './request-scope/runtime-registry';
import { ScopeOpener } from './request-scope/scope-opener';
import { AFTER_RESPONSE_METADATA, type AfterResponseOptions } from './after-response.decorator';
import type { DeadLetter } from './dispatch/dead-letter.interface';
import { Dispatcher, type ShutdownReport } from './dispatch/dispatcher';
import type { DeferredStats } from './dispatch/stats.interface';
import { DeferredWorkConfigError } from './errors/deferred-work-config.error';
import type { DeferredItemOptions, DeferredJobOptions, DeferredLogLevel, RunWhen } from './items/deferred-item.interface';
import { DeferredAsyncContext } from './request-scope/async-context';
import type { DeferredScope } from './request-scope/deferred-scope.interface';
import { DirectScope } from './request-scope/direct-scope';
import { DEFERRED_SCOPE } from './request-scope/request-scope.constants';

const WHENS: readonly RunWhen[] = ['always', 'success', 'failure'];

/**
 * The injectable face of the library. Its `job`/`log`/`metric`/`run` go to the current request's
 * collector when `asyncContext` is on and a decorated request is running; otherwise straight to the
 * dispatcher.
 *
 * Inside an `@AfterResponse()` handler without `asyncContext`, these calls do NOT wait for the
 * response and ignore `when` (a `success` job still runs if the handler throws later): use
 * `@Deferred()` there, or `forRequest(req)`.
 */
@Injectable()
export class DeferredWork implements DeferredScope, OnModuleInit, OnApplicationShutdown {
  constructor(
    @Inject(Dispatcher) private readonly dispatcher: Dispatcher,
    @Inject(DirectScope) private readonly direct: DirectScope,
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(ScopeOpener) private readonly opener: ScopeOpener,
    @Inject(GLOBAL_INTERCEPTOR_REGISTERED) private readonly globalInterceptor: GlobalInterceptorState,
    @Optional() @Inject(HttpAdapterHost) private readonly adapterHost?: HttpAdapterHost,
    @Optional() @Inject(DeferredAsyncContext) private readonly asyncContext?: DeferredAsyncContext | null,
  ) {}

  /** The scope calls go to right now: the request's (async context mode) or the direct one. */
  current(): DeferredScope {
    return this.asyncContext?.current() ?? this.direct;
  }

  /** The scope of a request object (`@Req()`), or the direct scope if it has none. */
  forRequest(request: object): DeferredScope {
    return (request as Record<symbol, DeferredScope | undefined>)[DEFERRED_SCOPE] ?? this.direct;
  }

  job(queue: string, name: string, data: unknown, opts?: DeferredJobOptions): void {
    this.current().job(queue, name, data, opts);
  }

  log(level: DeferredLogLevel, message: string, fields?: Record<string, unknown>, opts?: DeferredItemOptions): void {
    this.current().log(level, message, fields, opts);
  }

  metric(name: string, value: number, tags?: Record<string, string>, opts?: DeferredItemOptions): void {
    this.current().metric(name, value, tags, opts);
  }

  run(fn: (signal: AbortSignal) => unknown, opts?: Omit<DeferredItemOptions, 'sink'>): void {
    this.current().run(fn, opts);
  }

  /** Counters; `accepted = delivered + pending + dropped + deadLettered` holds at every moment. */
  stats(): DeferredStats {
    return this.dispatcher.stats();
  }

  /** Recent dead letters (at most `deadLetterCapacity`), oldest first. */
  deadLetters(): readonly DeadLetter[] {
    return this.dispatcher.deadLetters();
  }

  /**
   * Send everything pending now; resolves `true` once all items accepted before the call are
   * delivered, dropped or dead-lettered, `false` if `timeoutMs` (default `shutdownTimeoutMs`) passes first.
   */
  flush(timeoutMs?: number): Promise<boolean> {
    return this.dispatcher.flush(timeoutMs);
  }

  /**
   * Resolves `true` once no decorated request is waiting for its response to end and everything
   * accepted by then has settled; `false` after `timeoutMs` (default `shutdownTimeoutMs`). For tests.
   */
  settled(timeoutMs?: number): Promise<boolean> {
    return this.dispatcher.settled(timeoutMs);
  }

  /**
   * Checks the options and every `@AfterResponse()` at bootstrap, so a mistake fails the start, not a
   * request; and lets `@Deferred()` find this application's scopes through its HTTP framework instance.
   */
  onModuleInit(): void {
    const { asyncContext, timing } = this.dispatcher.options;
    const option = asyncContext ? 'asyncContext' : 'timing';
    if ((asyncContext || timing) && this.globalInterceptor === 'off') {
      new Logger('DeferredWork').warn(
        `${option} is on and registerInterceptor is false: bind DeferredWorkInterceptor yourself (APP_INTERCEPTOR ` +
          `or @UseInterceptors) on the routes that need it, or ${option} will not apply there.`,
      );
    } else if ((asyncContext || timing) && this.globalInterceptor === 'auto-off') {
      throw new DeferredWorkConfigError(
        option,
        `${option} needs DeferredWorkInterceptor on every route, and it was not registered ` +
          '(forRootAsync() cannot see options resolved at runtime, or registerInterceptor is false)',
        asyncContext
          ? 'Pass registerInterceptor: true next to useFactory in forRootAsync().'
          : 'Pass registerInterceptor: true next to useFactory in forRootAsync(), or measure chosen routes with @AfterResponse({ timing: true }).',
      );
    }
    this.checkDecoratedRoutes();
    const instance = this.frameworkInstance();
    const other = openerOn(instance);
    if (other && other !== this.opener && this.globalInterceptor !== 'registered') {
      throw new DeferredWorkConfigError(
        'registerInterceptor',
        'another running application with DeferredWorkModule shares this HTTP server instance, so @Deferred() ' +
          'cannot tell which application a request belongs to',
        'Give each application its own HTTP adapter, or pass registerInterceptor: true (the interceptor opens each ' +
          "request's scope through its own application's injector).",
      );
    }
    registerOpener(this.opener, instance);
    this.attachSinks();
  }

  /** Gives every sink what it may need before its first write: the drain to wait for, and the app's providers. */
  private attachSinks(): void {
    const context = {
      drain: () => this.shutdown(),
      providers: () => this.singletons(),
    };
    for (const sink of this.dispatcher.options.sinks.values()) sink.attach?.(context);
  }

  private *singletons(): Iterable<{ token: unknown; instance: unknown }> {
    for (const wrapper of this.discovery.getProviders()) {
      let instance: unknown;
      try {
        if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) continue;
        instance = wrapper.instance;
      } catch {
        continue;
      }
      if (instance) yield { token: wrapper.token, instance };
    }
  }

  /** The Express app or Fastify instance serving this application, if it has an HTTP server. */
  private frameworkInstance(): object | undefined {
    try {
      return this.adapterHost?.httpAdapter?.getInstance?.() as object | undefined;
    } catch {
      return undefined; // no HTTP server (a standalone application context)
    }
  }

  /** Every sink name and `when` in `@AfterResponse()` must exist. */
  private checkDecoratedRoutes(): void {
    const sinks = this.dispatcher.options.sinks;
    for (const wrapper of this.discovery.getControllers()) {
      const cls = wrapper.metatype as (new (...args: never[]) => object) | undefined;
      if (!cls?.prototype) continue;
      const targets: Array<[string, object]> = [[cls.name, cls]];
      for (const method of this.scanner.getAllMethodNames(cls.prototype)) {
        targets.push([`${cls.name}.${method}()`, (cls.prototype as Record<string, object>)[method]]);
      }
      for (const [where, target] of targets) {
        const options = this.reflector.get<AfterResponseOptions | undefined>(AFTER_RESPONSE_METADATA, target as never);
        if (!options) continue;
        for (const [kind, sink] of Object.entries(options.sinks ?? {})) {
          if (sink !== undefined && !sinks.has(sink)) {
            throw new DeferredWorkConfigError(
              `@AfterResponse({ sinks: { ${kind} } }) on ${where}`,
              `no sink is named "${sink}"`,
              `Configure a sink named "${sink}" in DeferredWorkModule.forRoot({ sinks }), or name a configured one.`,
            );
          }
        }
        for (const [kind, when] of Object.entries(options.when ?? {})) {
          if (!WHENS.includes(when as RunWhen)) {
            throw new DeferredWorkConfigError(
              `@AfterResponse({ when: { ${kind} } }) on ${where}`,
              `"${String(when)}" is not a condition`,
              `Use one of ${WHENS.join(', ')}.`,
            );
          }
        }
      }
    }
  }

  /** Drains pending work within `shutdownTimeoutMs` (needs `app.enableShutdownHooks()` for signals). */
  async onApplicationShutdown(): Promise<void> {
    unregisterOpener(this.opener, this.frameworkInstance());
    await this.shutdown();
  }

  /** Drain and stop; what `onApplicationShutdown` calls. Idempotent. */
  shutdown(): Promise<ShutdownReport> {
    return this.dispatcher.shutdown();
  }
}
