export { DeferredWorkModule } from './deferred-work.module';
export { DEFERRED_WORK_MODULE_OPTIONS } from './deferred-work.module-definition';
export { DeferredWorkInterceptor } from './deferred-work.interceptor';
export { DeferredWork } from './deferred-work.service';
export { AfterResponse, AFTER_RESPONSE_METADATA, type AfterResponseOptions } from './after-response.decorator';
export { Deferred } from './deferred.decorator';
export {
  DeferredWorkHealthIndicator,
  type DeferredWorkHealthOptions,
  type DeferredWorkHealthResult,
  type SinkHealth,
} from './health/deferred-work.health-indicator';
export type { RouteTimingStats } from './request-scope/route-timing';
export type { DeferredScope } from './request-scope/deferred-scope.interface';
export type { RequestOutcome } from './request-scope/request-collector';
export type {
  CallbackItem,
  DeferredItem,
  DeferredItemOptions,
  DeferredJobOptions,
  DeferredKind,
  DeferredLogLevel,
  JobItem,
  LogItem,
  MetricItem,
  RunWhen,
  SinkItem,
  SinkKind,
} from './items/deferred-item.interface';
export type {
  DeferredRouting,
  DeferredWorkModuleExtras,
  DeferredWorkModuleOptions,
} from './options/module-options.interface';
export type {
  DeferredSink,
  SinkItemFailure,
  SinkAttachContext,
  SinkProcessorOptions,
  SinkWriteContext,
  SinkWriteResult,
} from './sinks/deferred-sink.interface';
export { MemorySink, type MemorySinkOptions } from './sinks/memory.sink';
export type { DeadLetter, DeadLetterHandler, DeadLetterReason } from './dispatch/dead-letter.interface';
export type { DeferredStats, SinkStats } from './dispatch/stats.interface';
export type { ShutdownReport } from './dispatch/dispatcher';
export { SinkWriteError } from './errors/sink-write.error';
export { DeferredWorkConfigError } from './errors/deferred-work-config.error';
export { DeferredItemRejectedError } from './errors/deferred-item-rejected.error';
export { DeferredContextError } from './errors/deferred-context.error';
export { HttpSink } from './sinks/http.sink';
export type { HttpSinkFormat, HttpSinkGzipOptions, HttpSinkOptions } from './sinks/http-sink.options';
