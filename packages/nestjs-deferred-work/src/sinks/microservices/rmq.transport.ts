import { errorMessage } from '../../core/error-message';
import { type ChannelLike, type ConnectionManagerLike, internals } from './client-internals';
import type { Transport, TransportContext } from './transport.interface';
import { inCorkedTurns } from './rmq-socket';
import { emitted, withPayloadId } from './transport-send';

/** Makes `target[method]` (when it is a function) hand what each call returns to `then`, then return it. */
function afterEachCall(target: object, method: string, then: (result: unknown) => void): void {
  const owner = target as Record<string, unknown>;
  const original = owner[method];
  if (typeof original !== 'function') return;
  owner[method] = function (this: unknown, ...args: unknown[]) {
    const result = (original as (...a: unknown[]) => unknown).apply(this, args);
    then(result);
    return result;
  };
}

/** `ClientRMQ`: `emit` resolves on the publisher confirm of amqp-connection-manager's confirm channel. */
export function rmqTransport(ctx: TransportContext): Transport {
  const c = internals(ctx.client);
  const guarded = new WeakSet<object>();
  /**
   * ClientRMQ adds no 'error' listener to the ChannelWrappers it makes, and a ChannelWrapper emits
   * 'error' when the connection drops while it is being set up: unheard, that event is an unhandled
   * rejection, which ends the process. So each one gets a listener the moment it is made — through
   * the connection manager's `createChannel`, and ClientRMQ's `createClient` for the managers it makes
   * after a reconnect — besides those made before the sink saw the client (Nest 12's first connect
   * makes two). A channel's setup cannot fail before the call that made it returns: it awaits the broker.
   */
  const guardChannel = (channel: ChannelLike | null | undefined) => {
    if (!channel || typeof channel.on !== 'function' || guarded.has(channel)) return;
    guarded.add(channel);
    channel.on('error', (error) => ctx.warn(`RabbitMQ channel error (the client reconnects): ${errorMessage(error)}`));
  };
  const guardManager = (manager: ConnectionManagerLike | null | undefined) => {
    if (!manager || guarded.has(manager)) return;
    guarded.add(manager);
    for (const channel of Array.isArray(manager._channels) ? manager._channels : []) guardChannel(channel as ChannelLike);
    afterEachCall(manager, 'createChannel', (channel) => guardChannel(channel as ChannelLike));
  };
  afterEachCall(ctx.client as object, 'createClient', (manager) => guardManager(manager as ConnectionManagerLike));
  const guard = () => {
    guardManager(c.client);
    guardChannel(c.channel);
  };
  return {
    transport: 'rmq',
    confirmed: true,
    delivered: 'RabbitMQ confirmed it (publisher confirm on the client\'s confirm channel): the queue or exchange has it',
    messageId: 'the AMQP messageId property (context.getMessage().properties.messageId)',
    state() {
      guard();
      if (!c.client) return 'unconnected';
      return c.client.isConnected?.() === false ? 'down' : 'up';
    },
    send(messages) {
      return inCorkedTurns(c.client, c.channel, () =>
        messages.map((m) =>
          emitted(ctx.client, m.pattern, new ctx.records.RmqRecordBuilder(withPayloadId(m.data, ctx.payloadIdKey, m.id)).setOptions({ messageId: m.id }).build(), ctx.records),
        ),
      );
    },
  };
}
