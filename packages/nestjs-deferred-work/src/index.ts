/**
 * The module, the decorators, the deferred handles, the core sinks (memory, HTTP, logger, offloaded) and
 * the types of the sink contract.
 *
 * @module nestjs-deferred-work
 */
export { DeferredWorkModule } from './nest/deferred-work.module';
export { DEFERRED_WORK_MODULE_OPTIONS, RESOLVED_DEFERRED_WORK_OPTIONS } from './nest/deferred-work.module-definition';
export { DeferredWorkInterceptor } from './nest/deferred-work.interceptor';
export { DeferredWork } from './nest/deferred-work.service';
export { deadLettersController, type DeadLettersControllerOptions } from './nest/dead-letters/dead-letters.controller';
export { AfterResponse, AFTER_RESPONSE_METADATA, type AfterResponseOptions } from './nest/after-response.decorator';
export { Deferred } from './nest/deferred.decorator';
export { InjectDeferredClient, InjectDeferredMetric, InjectDeferredPinoLogger, InjectDeferredQueue } from './nest/handles/inject-handles';
export { DeferredPinoLogger } from './nest/handles/deferred-pino-logger';
export { DeferredLogger } from './nest/handles/deferred-logger';
export { DeferredMetrics } from './nest/handles/deferred-metrics.service';
export type { DeferredJobReceipt } from './nest/handles/deferred-queue.handle';
export type {
  AnyDeferrableQueue,
  DeferredBulkJob,
  DeferredBullDefaultAdd,
  DeferredClient,
  DeferredQueue,
  DeferredQueueJobOptions,
  DeferredQueueMethods,
  HasUnnamedAdd,
  KnownDeferredJobOptions,
  QueueJobData,
  QueueJobName,
  QueueJobOptions,
} from './nest/handles/handle-types';
export type {
  DeferredAdder,
  DeferredMetricHandle,
  DeferredMetricLabelled,
  DeferredRecorder,
  MetricLabels,
} from './nest/handles/deferred-metric.handle';
export type { DeferredHandleNames } from './nest/handles/handle.providers';
export { deferredClientToken, deferredMetricToken, deferredPinoLoggerToken, deferredQueueToken } from './nest/handles/handle-tokens';
export { DeferredWorkHealthIndicator } from './nest/health/deferred-work.health-indicator';
export type {
  DeferredWorkHealthOptions,
  DeferredWorkHealthResult,
  DeferredWorkLivenessOptions,
  DeferredWorkLivenessResult,
  DeferredWorkReadinessOptions,
  SinkHealth,
} from './nest/health/health-options';
export type { DeferredScope } from './capture/deferred-scope.interface';
export type { RequestOutcome } from './capture/request-collector';
export type {
  CallbackItem,
  DeferredItem,
  DeferredItemOptions,
  DeferredJobOptions,
  DeferredKind,
  DeferredLogLevel,
  DeferredLogOptions,
  DeferredMetricOptions,
  ItemCorrelation,
  JobItem,
  LogItem,
  MetricItem,
  RunWhen,
  SinkItem,
  SinkKind,
} from './core/items/deferred-item.interface';
export type {
  DeferredRouting,
  DeferredSinkOptions,
  DeferredSpoolOptions,
  DeferredWorkModuleExtras,
  DeferredWorkModuleOptions,
} from './nest/options/module-options.interface';
export type {
  DeferredSink,
  SinkItemFailure,
  SinkAttachContext,
  SinkHostStats,
  SinkProcessorOptions,
  SinkWriteContext,
  SinkWriteResult,
} from './core/sink.interface';
export { MemorySink, type MemorySinkOptions } from './sinks/memory/memory.sink';
export type { DeadLetter, DeadLetterHandler, DeadLetterReason } from './core/dead-letter.interface';
export type {
  DeadLetterFilter,
  DeadLetterPage,
  DeadLetterQuery,
  DeadLetterRecord,
  DeadLetterStore,
  RedriveOptions,
  RedriveResult,
  RedriveSelector,
} from './core/dead-letter-store.interface';
export type { DeadLetterError } from './core/dead-letter.interface';
export type { DeadLetterOptions } from './nest/options/dead-letter-options.interface';
export { MemoryDeadLetterStore } from './pipeline/dead-letters/memory-dead-letter.store';
export type { DeadLetterBounds } from './pipeline/dead-letters/dead-letter-index';
export { RedriveInProgressError } from './core/errors/redrive-in-progress.error';
export { DeadLetterStoreMissingError } from './core/errors/dead-letter-store-missing.error';
export type { CallbackRunnerStats, DeadLetteredReason, DeferredStats, DropReason, RouteTimingStats, SinkSpoolStats, SinkState, SinkStats } from './core/stats.interface';
export type { CorrelationOptions } from './core/correlation-options.interface';
export type { CallbackRunnerOptions } from './pipeline/callbacks/callback-runner.options';
export type { ResolvedDeferredWorkOptions } from './pipeline/resolved-options.interface';
export type { ShutdownReport } from './pipeline/shutdown-report';
export { SinkWriteError } from './core/errors/sink-write.error';
export { DeferredWorkConfigError } from './core/errors/deferred-work-config.error';
export { DeferredItemRejectedError } from './core/errors/deferred-item-rejected.error';
export { DeferredContextError } from './core/errors/deferred-context.error';
export { DeferredResponseNotFoundError } from './core/errors/deferred-response-not-found.error';
export { SpoolLockedError } from './spool/spool-locked.error';
export { SinkConfigError } from './sinks/kit/sink-config.error';
export { HttpSink } from './sinks/http/http.sink';
export { LoggerSink, LOGGER_SINK_LEVELS } from './sinks/logger/logger.sink';
export { LOGGER_SINK_DEFAULTS, type LoggerSinkFieldsStyle, type LoggerSinkOptions, type LoggerSinkTraceFields } from './sinks/logger/logger-sink.options';
export { OffloadedSink } from './sinks/offload/offloaded.sink';
export { OFFLOADED_SINK_DEFAULTS, type OffloadedSinkOptions } from './sinks/offload/offloaded-sink.options';
export type { HttpSinkFormat, HttpSinkGzipOptions, HttpSinkOptions } from './sinks/http/http-sink.options';
