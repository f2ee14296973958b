import { checkOneOf, checkOptionsObject, checkSinkName, checkWholeNumber, optionError } from '../kit/option-checks';
import { SinkConfigError } from '../kit/sink-config.error';
import type { BrokerTransport, ClientProxyLike, ClientProxySinkOptions } from './client-proxy-sink.options';

const TRANSPORTS: readonly BrokerTransport[] = ['rmq', 'nats', 'redis', 'mqtt', 'kafka'];

/** Whether `value` is a `ClientProxy` (it can emit and connect). */
export function isClientProxy(value: unknown): value is ClientProxyLike {
  return typeof value === 'object' && value !== null && typeof (value as ClientProxyLike).emit === 'function' && typeof (value as ClientProxyLike).connect === 'function';
}

/** Checks `new ClientProxySink(options)`'s options; returns the sink's name. */
export function checkClientProxySinkOptions(options: ClientProxySinkOptions): string {
  const C = 'ClientProxySink';
  checkOptionsObject(C, options, `new ${C}({ clientToken: 'ORDERS' }) or new ${C}({ client })`);
  const { client, clientToken, moduleRef, transport, name } = options;
  if (client === undefined && clientToken === undefined) {
    throw new SinkConfigError(
      `${C}: no way to find the client. Pass clientToken (the name you gave ClientsModule.register([{ name, transport }])), ` +
        'or client (a ClientProxy instance).',
      'clientToken',
    );
  }
  if (client !== undefined && !isClientProxy(client)) {
    throw optionError(C, 'client', 'must be a ClientProxy of @nestjs/microservices (with emit() and connect())', 'Pass the client ClientsModule registered, or its clientToken.', client);
  }
  if (moduleRef !== undefined && (moduleRef === null || typeof moduleRef.get !== 'function')) {
    throw optionError(C, 'moduleRef', "must be Nest's ModuleRef", 'It is not needed any more: leave it out, and the sink finds clientToken itself.');
  }
  checkOneOf(C, 'transport', transport, TRANSPORTS, 'rmq');
  checkOneOf(C, 'mqtt.qos', options.mqtt?.qos, [0, 1, 2], 1);
  checkOneOf(C, 'redis.noSubscribers', options.redis?.noSubscribers, ['fail', 'count'], 'fail');
  checkOneOf(C, 'nats.jetStream', options.nats?.jetStream, [true, false], false);
  checkWholeNumber(C, 'nats.ackTimeoutMs', options.nats?.ackTimeoutMs, { min: 1, max: 2_147_483_647, fallback: 2000, unit: 'ms' });
  const key = options.payloadIdKey;
  if (key !== undefined && key !== false && (typeof key !== 'string' || key === '')) {
    throw optionError(C, 'payloadIdKey', 'must be a non-empty string or false', "Leave it out for the transport's default.", key);
  }
  return checkSinkName(C, name, typeof clientToken === 'string' ? clientToken : 'microservices');
}

/** The error for a client whose transport cannot be told from its class. */
export function unknownTransportError(sinkName: string, client: unknown): SinkConfigError {
  const cls = (client as { constructor?: { name?: string } } | null)?.constructor?.name ?? typeof client;
  return new SinkConfigError(
    `ClientProxySink "${sinkName}": cannot tell the transport of a ${cls}. Pass transport: ${TRANSPORTS.map((t) => `'${t}'`).join(' | ')} ` +
      '(TCP and gRPC clients are not supported: they have no broker to confirm anything).',
    'transport',
  );
}
