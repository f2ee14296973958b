import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleInit, Optional } from '@nestjs/common';
import { DiscoveryService, HttpAdapterHost, MetadataScanner, ModuleRef, Reflector } from '@nestjs/core';
import { Correlator } from '../capture/correlation';
import { openerOn, registerOpener, unregisterOpener } from '../capture/runtime-registry';
import { ScopeOpener } from '../capture/scope-opener';
import { RequestTracker } from '../capture/request-tracker';
import { DeferredWorkConfigError } from '../core/errors/deferred-work-config.error';
import type { DeferredSink, SinkAttachContext } from '../core/sink.interface';
import { Dispatcher } from '../pipeline/dispatcher';
import { type ClsServiceLike, DeferredAsyncContext } from '../capture/async-context';
import { DeferredWork } from './deferred-work.service';
import { DeferredHandles } from './handles/deferred-handles';
import { deferredClientToken, handlesInUse } from './handles/handle-tokens';
import { provideHandles, provideScopeSource } from './handles/scope-source';
import { settleWithin } from '../core/settle';
import { ClientHolds } from '../sinks/kit/hold-open';
import { checkDecoratedRoutes } from './decorated-routes.check';
import { GLOBAL_INTERCEPTOR_REGISTERED, type GlobalInterceptorState } from './deferred-work.module-definition';
import { applicationTarget, drainOnStopSignals } from './stop-signals';
import { checkServerlessPlatform, serverlessShutdownBudgetMs } from '../serverless/platform';

/** How long shutdown waits, after the drain, for the closes that held clients postponed. */
const HELD_CLOSE_WAIT_MS = 1000;

/**
 * @internal What the module does at bootstrap and shutdown: checks the options and every
 * `@AfterResponse()` (so a mistake fails the start, not a request), lets `@Deferred()` find this
 * application's scopes through its HTTP framework instance, attaches the sinks, and drains on shutdown —
 * and, with `drainOnSignal`, on a `SIGTERM` or `SIGINT` nothing else handles (`stop-signals.ts`).
 */
@Injectable()
export class DeferredWorkLifecycle implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('DeferredWork');
  /** The app's clients the sinks hold open until the drain ends. */
  private readonly holds = new ClientHolds(
    (owners, client) =>
      this.dispatcher.closeSinks(owners, `the app closed the client of sink${owners.length > 1 ? 's' : ''} ${owners.map((o) => `"${o}"`).join(', ')} (${client})`),
    (message) => this.logger.warn(message),
  );

  constructor(
    @Inject(Dispatcher) private readonly dispatcher: Dispatcher,
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(ScopeOpener) private readonly opener: ScopeOpener,
    @Inject(GLOBAL_INTERCEPTOR_REGISTERED) private readonly globalInterceptor: GlobalInterceptorState,
    @Inject(Correlator) private readonly correlator: Correlator,
    @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
    @Inject(DeferredWork) private readonly work: DeferredWork,
    @Inject(DeferredHandles) private readonly handles: DeferredHandles,
    @Inject(RequestTracker) private readonly requests: RequestTracker,
    @Optional() @Inject(HttpAdapterHost) private readonly adapterHost?: HttpAdapterHost,
    @Optional() @Inject(DeferredAsyncContext) private readonly asyncContext?: DeferredAsyncContext | null,
  ) {}

  /** Clears what handles made without DI (`new DeferredLogger()`, `@Deferred.queue()`) use to find this app. */
  private releaseHandles: Array<() => void> = [];

  async onModuleInit(): Promise<void> {
    try {
      await this.init();
    } catch (error) {
      // Nest runs no shutdown hooks after a failed bootstrap: let go of the spools' locks (another app
      // in this process, or the next start, must be able to open them).
      await this.dispatcher.releaseSpools();
      throw error;
    }
  }

  private async init(): Promise<void> {
    this.checkInterceptor();
    checkDecoratedRoutes(this.discovery, this.scanner, this.reflector, this.dispatcher.options);
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
    try {
      await this.correlator.init();
    } catch (error) {
      throw new DeferredWorkConfigError(
        'correlation.openTelemetry',
        (error as Error).message,
        "Install it (npm install @opentelemetry/api), or leave openTelemetry out ('auto': used only when present).",
      );
    }
    await this.useAppAsyncContext();
    await this.attachSinks();
    this.checkClientHandles();
    this.releaseHandles = [provideScopeSource(() => this.work.current()), provideHandles(this.handles)];
    await this.dispatcher.deadLetterDesk.ready();
    this.dispatcher.start();
  }

  /** Keeps request scopes in the app's nestjs-cls or OpenTelemetry context when it runs one (no second store). */
  private async useAppAsyncContext(): Promise<void> {
    if (!this.asyncContext) return;
    let cls: ClsServiceLike | undefined;
    for (const load of clsModules()) {
      try {
        const { ClsService } = (await load()) as { ClsService?: unknown };
        const found = ClsService ? this.resolve(ClsService) : undefined;
        if (found && typeof (found as ClsServiceLike).isActive === 'function') {
          cls = found as ClsServiceLike;
          break;
        }
      } catch {
        // nestjs-cls is not installed (or not this build of it): nothing to reuse
      }
    }
    this.asyncContext.use({ cls, otel: this.correlator.contextApi() });
  }

  /** Every client handle this app injects needs a sink named after the client (`ClientProxySink({ clientToken })`). */
  private checkClientHandles(): void {
    const injected = this.injectedTokens();
    for (const name of handlesInUse.clients) {
      if (this.dispatcher.options.sinks.has(name) || !injected.has(deferredClientToken(name))) continue;
      throw new DeferredWorkConfigError(
        'sinks',
        `@InjectDeferredClient('${name}') is used, and no sink is named "${name}"`,
        `Add new ClientProxySink({ clientToken: '${name}' }) from 'nestjs-deferred-work/microservices' to sinks.`,
      );
    }
  }

  /** Takes this app out of the drain on a stop signal (registered once it has started). */
  private releaseStopSignals: (() => void) | undefined;

  /**
   * With `drainOnSignal` (the default): a `SIGTERM` or `SIGINT` that nothing else listens for drains this
   * app and then ends the process by the signal; the app's other shutdown hooks do not run then.
   */
  onApplicationBootstrap(): void {
    // On a platform that freezes or throttles the process after the response, without the serverless mode: one warning.
    checkServerlessPlatform(this.logger);
    if (!this.dispatcher.options.drainOnSignal) return;
    this.releaseStopSignals ??= drainOnStopSignals(applicationTarget(this.logger, this.dispatcher, this.requests, this.adapterHost));
  }

  /**
   * Drains pending work within `shutdownTimeoutMs`: on `app.close()`, or on a signal with
   * `app.enableShutdownHooks()`. During a drain a stop signal started, awaits the same one.
   */
  async onApplicationShutdown(): Promise<void> {
    this.releaseStopSignals?.();
    unregisterOpener(this.opener, this.frameworkInstance());
    for (const release of this.releaseHandles) release();
    // Lambda with the extension gives the runtime 500 ms from SIGTERM to SIGKILL: the serverless mode's shorter budget.
    const budget = serverlessShutdownBudgetMs();
    await this.dispatcher.shutdown(budget === undefined ? undefined : Date.now() + Math.min(budget, this.dispatcher.options.shutdownTimeoutMs));
    // Closes that held clients postponed until the drain and that nobody awaits (a synchronous
    // `disconnect()` or `destroy()`): let them run before the process may exit, within a second.
    await settleWithin(this.holds.closing(), HELD_CLOSE_WAIT_MS, true);
  }

  private checkInterceptor(): void {
    const { asyncContext, timing } = this.dispatcher.options;
    if (!asyncContext && !timing) return;
    const option = asyncContext ? 'asyncContext' : 'timing';
    if (this.globalInterceptor === 'off') {
      this.logger.warn(
        `${option} is on and registerInterceptor is false: bind DeferredWorkInterceptor yourself (APP_INTERCEPTOR ` +
          `or @UseInterceptors) on the routes that need it, or ${option} will not apply there.`,
      );
    } else if (this.globalInterceptor === 'auto-off') {
      throw new DeferredWorkConfigError(
        option,
        `${option} needs DeferredWorkInterceptor on every route, and it was not registered ` +
          '(forRootAsync() cannot see options resolved at runtime, or registerInterceptor is false)',
        asyncContext
          ? 'Pass registerInterceptor: true next to useFactory in forRootAsync().'
          : 'Pass registerInterceptor: true next to useFactory in forRootAsync(), or measure chosen routes with @AfterResponse({ timing: true }).',
      );
    }
  }

  /**
   * Gives every sink what it may need before its first write: the drain to wait for, and the app's
   * providers. Waits for sinks that attach asynchronously (a worker thread starting); the first
   * failure fails the bootstrap.
   */
  private async attachSinks(): Promise<void> {
    const context = (sink: DeferredSink): SinkAttachContext => ({
      drain: () => this.dispatcher.drain(),
      resolve: <T>(token: unknown) => this.resolve(token) as T | undefined,
      holdOpen: (client, options) => this.holds.hold(client, options, sink.name),
      providers: () => this.singletons(),
      warn: (message) => this.logger.warn(message),
    });
    const attaching: Array<{ sink: DeferredSink; attached: Promise<void> }> = [];
    for (const sink of this.dispatcher.options.sinks.values()) {
      const attached = sink.attach?.(context(sink));
      if (attached) attaching.push({ sink, attached });
    }
    const settled = await Promise.allSettled(attaching.map(({ attached }) => attached));
    const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (!failed) return;
    // Nest runs no shutdown hooks after a failed bootstrap: release what the others started (threads).
    await Promise.allSettled(attaching.map(({ sink }) => Promise.resolve().then(() => sink.shutdown?.())));
    throw failed.reason;
  }

  /** The tokens the app's providers and controllers inject (constructor parameters and properties), from Nest's metadata. */
  private injectedTokens(): Set<unknown> {
    const tokens = new Set<unknown>();
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const type = wrapper.metatype as object | null | undefined;
      if (typeof type !== 'function') continue;
      const params = Reflect.getMetadata('self:paramtypes', type) as Array<{ param: unknown }> | undefined;
      const props = Reflect.getMetadata('self:properties_metadata', type) as Array<{ type: unknown }> | undefined;
      for (const p of params ?? []) tokens.add(p.param);
      for (const p of props ?? []) tokens.add(p.type);
    }
    return tokens;
  }

  /** The provider registered under `token` anywhere in the app, or `undefined`. */
  private resolve(token: unknown): unknown {
    try {
      return this.moduleRef.get(token as string, { strict: false });
    } catch {
      return undefined;
    }
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
}

/**
 * The ways to load nestjs-cls, in order: its `ClsService` class is the injection token, so it must be
 * the copy the app loaded. nestjs-cls ships a CommonJS and an ES module build; `import()` gives the ES
 * one even from this package's CommonJS build, where a CommonJS app has the other: `require` first there.
 */
function clsModules(): Array<() => Promise<unknown>> {
  const loads: Array<() => Promise<unknown>> = [];
  if (typeof require === 'function') loads.push(async () => require('nestjs-cls') as unknown);
  loads.push(() => import('nestjs-cls' as string));
  return loads;
}
