/**
 * The console for the people on call (`nestjs-deferred-work/console`): `DeferredWorkConsoleModule`
 * serves sink states, route timings and dead-letter triage from the app, behind the app's guard.
 * See docs/console.md.
 */
export { DeferredWorkConsoleModule } from './deferred-work-console.module';
export type { DeferredWorkConsoleOptions } from './console-options';
