import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import { redisReply } from '../kit/redis-errors';
import { redisNotConnected, redisState } from '../kit/redis-state';
import { internals } from './client-internals';
import type { Transport, TransportContext } from './transport.interface';
import { withPayloadId } from './transport-send';

/** `ClientRedis`: PUBLISH in one pipeline per batch on the client's publisher connection; each reply is the number of subscribers that got it. */
export function redisTransport(ctx: TransportContext): Transport {
  const c = internals(ctx.client);
  const pub = () => c.pubClient;
  return {
    transport: 'redis',
    confirmed: ctx.noSubscribers === 'fail',
    delivered:
      ctx.noSubscribers === 'fail'
        ? 'Redis replied to the PUBLISH that at least one subscriber got it (Redis keeps nothing: 0 subscribers fails and is retried)'
        : 'Redis replied to the PUBLISH, whatever the number of subscribers (0 means nobody got it, and it is counted anyway: noSubscribers "count")',
    messageId: `the payload's "${ctx.payloadIdKey || '(none: set payloadIdKey)'}" field (object payloads only)`,
    state() {
      const client = pub();
      return client ? redisState(client) : 'unconnected';
    },
    send(messages) {
      const client = pub();
      if (!client) return messages.map(() => Promise.reject(redisNotConnected('Redis: not connected; not sending')));
      const pipeline = client.pipeline();
      const channels = messages.map((m) => {
        const channel = c.normalizePattern ? c.normalizePattern(m.pattern) : m.pattern;
        const packet = { pattern: m.pattern, data: withPayloadId(m.data, ctx.payloadIdKey, m.id) };
        pipeline.publish(channel, JSON.stringify(c.serializer ? c.serializer.serialize(packet) : packet));
        return channel;
      });
      const replies = pipeline.exec();
      return messages.map(async (m, i) => {
        const [error, count] = (await replies)?.[i] ?? [new Error('no reply'), 0];
        if (error) {
          // an error reply about the command itself (NOPERM: the user may not publish to that channel, …) is not retried
          const { code, retryable } = redisReply(error);
          throw new SinkWriteError(`Redis PUBLISH to "${channels[i]}" failed: ${errorMessage(error)}`, { cause: error, code, retryable });
        }
        if (count === 0 && ctx.noSubscribers === 'fail') {
          throw new SinkWriteError(
            `Redis PUBLISH to "${channels[i]}" reached 0 subscribers; nobody got it and Redis keeps nothing. Will retry ` +
              '(start the consuming microservice, or set redis: { noSubscribers: "count" } to count such messages as delivered).',
          );
        }
      });
    },
  };
}
