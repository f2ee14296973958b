/**
 * The `redis-stream` scenario's side-effect: an entry per request appended to a Redis Stream of the
 * runner's private Redis. `perform` awaits one `XADD` (what a handler does to publish an event);
 * `deferred` hands the same record to a `RedisStreamSink` on the same ioredis client, which appends a
 * batch per pipeline. The stream is the server's own (named after its pid) and is deleted when the
 * server stops. `ioredis` and the sink are loaded only when the scenario runs.
 */
import type { DeferredSink, LogItem } from 'nestjs-deferred-work';
import { benchStreamName } from '../bench/args.js';
import type { ScenarioEffect } from './effects.js';
import { nextRecordId } from './record-ids.js';

export async function streamEntry(
  url: string,
  record: { message: string; fields: Record<string, unknown> },
  sinks: DeferredSink[],
  closers: Array<() => Promise<void>>,
): Promise<ScenarioEffect> {
  const { Redis } = await import('ioredis');
  const { RedisStreamSink, redisStreamDefaultFields } = await import('nestjs-deferred-work/redis-streams');
  const stream = benchStreamName('redis-stream', process.pid);
  const redis = new Redis(url);
  // the delete waits for the app's shutdown (its sinks drained), as the client is the app's to close
  closers.push(async () => {
    try {
      await redis.del(stream);
    } finally {
      redis.disconnect();
    }
  });
  const sink = new RedisStreamSink({ name: 'redis-stream', client: redis, stream });
  sinks.push(sink);
  return {
    async perform() {
      // the same fields as the sink's entry: id, kind, name, payload (JSON), createdAt
      const item: LogItem = { kind: 'log', level: 'info', message: record.message, fields: record.fields, when: 'always', createdAt: Date.now(), id: nextRecordId() };
      await redis.xadd(stream, '*', ...Object.entries(redisStreamDefaultFields(item)).flat());
      return 1;
    },
    defer(work) {
      work.log('info', record.message, record.fields);
    },
    afterResponse: { sinks: { log: sink.name } },
  };
}
