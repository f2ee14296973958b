export { MemorySink, type MemorySinkOptions } from '../sinks/memory/memory.sink';
export { DeferredWorkTesting, withMemorySinks, type MemorySinksOptions } from './deferred-work-testing';
