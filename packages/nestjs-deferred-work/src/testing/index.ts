/**
 * Test helpers: memory sinks in place of the real ones, handle doubles, a context for testing a sink.
 *
 * @module nestjs-deferred-work/testing
 */
export { MemorySink, type MemorySinkOptions } from '../sinks/memory/memory.sink';
export { DeferredWorkTesting, withMemorySinks, type MemorySinksOptions } from './deferred-work-testing';
export { sinkAttachContext, type SinkAttachContextOptions } from './sink-attach-context';
export { DeferredHandleDoubles, type RecordedCall, type RecordedCallOf } from './handle-doubles';
