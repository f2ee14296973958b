/**
 * Deferred items as Redis Stream entries (`XADD`) through the app's ioredis client (`ioredis` as an optional peer).
 *
 * @module nestjs-deferred-work/redis-streams
 */
export { RedisStreamSink } from './redis-stream.sink';
export { REDIS_STREAM_PROCESSOR_DEFAULTS, REDIS_STREAM_SINK_DEFAULTS, REDIS_STREAM_SINK_NAME, type RedisStreamSinkOptions } from './redis-stream-sink.options';
export { defaultFields as redisStreamDefaultFields, defaultStream as redisStreamDefaultStream } from './redis-stream-entries';
export { RedisStreamDeadLetterStore, type DeadLetterRedis, type RedisStreamDeadLetterStoreOptions } from './redis-stream-dead-letter.store';
