import { Transport } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { emitEvent } from 'nestjs-deferred-work/microservices';
import { describeBrokerConformance, markOf, TOKEN } from '../support/broker-conformance';
import { RedisServer } from '../support/redis-server';

/**
 * ClientProxySink over Redis pub/sub, on a private Redis (test/support/redis-server.ts): a
 * `ClientRedis` registered with ClientsModule, through a TCP proxy, as an ACL user that may publish
 * only to the channels `dw-conf-ms-*`; the consumer is a subscription on the test's channel, on its
 * own connection straight to the server (the default user). `received()` PINGs that connection
 * first: Redis answers after every message it pushed to it before.
 *
 * Duplicates in an outage: documented (docs/sinks/microservices.md, "At least once": a PUBLISH whose
 * reply was lost in the cut is sent again by the sink's retry).
 *
 * Poison: an event for a channel the producer's ACL does not cover: Redis refuses that PUBLISH alone
 * (NOPERM), the rest of the pipeline goes through.
 */
const redis = new RedisServer();
const RUN = `dw-conf-ms-${process.pid}-${Date.now().toString(36)}`;
const USER = { username: 'dw-producer', password: 'dw-producer-secret' };
let subscriber: Redis | undefined;
const received = new Map<string, string[]>();

describeBrokerConformance({
  name: 'ClientProxySink over Redis',
  transport: Transport.REDIS,
  setUp: async () => {
    await redis.start();
    expect(await redis.command('ACL', 'SETUSER', USER.username, 'on', `>${USER.password}`, '~*', 'resetchannels', '&dw-conf-ms-*', '+@all')).toBe('+OK');
    subscriber = new Redis({ host: redis.host, port: redis.port });
    subscriber.on('message', (channel: string, message: string) => received.get(channel)?.push(markOf(message)));
    return redis.port;
  },
  tearDown: async () => {
    subscriber?.disconnect();
    await redis.dispose();
  },
  open: async (n) => {
    const channel = `${RUN}-${n}`;
    const got: string[] = [];
    received.set(channel, got);
    await subscriber!.subscribe(channel);
    return {
      pattern: channel,
      // retryAttempts and retryDelay: without them ClientRedis does not reconnect (docs/sinks/microservices.md)
      clientOptions: (port) => ({ host: '127.0.0.1', port, ...USER, retryAttempts: 1_000, retryDelay: 50 }),
      received: async () => {
        await subscriber!.ping();
        return [...got];
      },
      close: async () => {
        await subscriber!.unsubscribe(channel);
        received.delete(channel);
      },
    };
  },
  poison: (work, channel, mark) => emitEvent(work, TOKEN, `forbidden-${channel.pattern}`, { mark }),
  duplicatesInOutage: true,
  // ENOTCONN: the sink's own "not connected; not sending"; ETIMEDOUT: a send cut short by writeTimeoutMs; ECONNRESET: the cut itself
  outageCodes: ['ENOTCONN', 'ETIMEDOUT', 'ECONNRESET'],
});
