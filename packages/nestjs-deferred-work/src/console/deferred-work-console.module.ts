import { type DynamicModule, Module } from '@nestjs/common';
import { ConsoleActions } from './console-actions';
import { consoleController } from './console.controller';
import { type DeferredWorkConsoleOptions, resolveConsoleOptions } from './console-options';
import { CONSOLE_OPTIONS, ConsolePages } from './console-pages';

/**
 * A web console for the people on call, served by the app itself at `path` behind the app's own guard:
 *
 * ```ts
 * @Module({
 *   imports: [
 *     DeferredWorkModule.forRoot({ sinks: [...] }),
 *     DeferredWorkConsoleModule.forRoot({ guards: [OpsBasicAuthGuard], path: 'ops/deferred-work' }),
 *   ],
 * })
 * ```
 *
 * The overview (each sink's state, backlog, rates and the last hour's sparklines, refreshed live), the
 * routes' handler and send times, and dead-letter triage (filter, inspect, redrive with a dry run's
 * count first, discard, purge). Refuses to mount without a guard; every action is a POST checked for
 * its origin and CSRF token and logged with the acting user. Server-rendered HTML and one small script,
 * shipped in the package: no build step, nothing loaded from elsewhere. Needs `DeferredWorkModule` in
 * the app (global, its default). Not imported: nothing of it is loaded or sampled. See docs/console.md.
 */
@Module({})
export class DeferredWorkConsoleModule {
  /** The console with these options (checked now: an error says how to fix each). */
  static forRoot(options: DeferredWorkConsoleOptions): DynamicModule {
    const resolved = resolveConsoleOptions(options);
    return {
      module: DeferredWorkConsoleModule,
      imports: options.imports ?? [],
      controllers: [consoleController(resolved)],
      providers: [{ provide: CONSOLE_OPTIONS, useValue: resolved }, ConsolePages, ConsoleActions],
    };
  }
}
