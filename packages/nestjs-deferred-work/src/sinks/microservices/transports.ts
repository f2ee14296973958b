import type { BrokerTransport, ClientProxySinkOptions } from './client-proxy-sink.options';
import { kafkaTransport } from './kafka.transport';
import { mqttTransport } from './mqtt.transport';
import { natsTransport } from './nats.transport';
import { redisTransport } from './redis.transport';
import { rmqTransport } from './rmq.transport';
import type { Transport, TransportContext } from './transport.interface';

/** The transport of a client, from its class (walking up, for subclasses). */
export function detectTransport(client: unknown): BrokerTransport | undefined {
  const names: Record<string, BrokerTransport> = { ClientRMQ: 'rmq', ClientNats: 'nats', ClientRedis: 'redis', ClientMqtt: 'mqtt', ClientKafka: 'kafka' };
  for (let proto = Object.getPrototypeOf(client ?? {}); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    const found = names[(proto.constructor as { name?: string } | undefined)?.name ?? ''];
    if (found) return found;
  }
  return undefined;
}

/** The transport of a client. */
export function createTransport(transport: BrokerTransport, ctx: TransportContext): Transport {
  switch (transport) {
    case 'rmq':
      return rmqTransport(ctx);
    case 'nats':
      return natsTransport(ctx);
    case 'redis':
      return redisTransport(ctx);
    case 'mqtt':
      return mqttTransport(ctx);
    case 'kafka':
      return kafkaTransport(ctx);
  }
}

/** Whether the transport named so confirms what it sends, with these options (what `confirmed` says before the client is known). */
export function expectedConfirmed(transport: BrokerTransport | undefined, options: ClientProxySinkOptions): boolean {
  switch (transport) {
    case 'rmq':
    case 'kafka':
      return true;
    case 'nats':
      return options.nats?.jetStream ?? false;
    case 'mqtt':
      return (options.mqtt?.qos ?? 1) >= 1;
    case 'redis':
      return (options.redis?.noSubscribers ?? 'fail') === 'fail';
    default:
      return false;
  }
}
