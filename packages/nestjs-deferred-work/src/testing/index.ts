export { MemorySink, type MemorySinkOptions } from '../sinks/memory.sink';
