import { type Corkable, corkableStream } from '../kit/one-socket-write';
import type { ChannelLike, ConnectionManagerLike } from './client-internals';

/** Turns of the event loop a piece may keep the RabbitMQ connection's socket corked, at most. */
export const MAX_CORKED_TURNS = 16;

type Socket = Corkable & { writableNeedDrain?: boolean; destroyed?: boolean };

/** The socket of the client's current RabbitMQ connection, when it can be corked. */
function socketOf(manager: ConnectionManagerLike | null | undefined): Socket | undefined {
  try {
    return corkableStream(manager?._currentConnection?.connection?.stream) as Socket | undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs `send` — which hands a piece of messages to the client's channel — with the connection's socket
 * corked until the piece has left the channel, so that its messages reach the socket in one write
 * instead of one system call each. amqplib does not write a publish to the socket when it is made: its
 * channel buffers the frames, and a multiplexer writes them on a later turn of the event loop
 * (`setImmediate`), each message with a `socket.write` of its own. The socket is uncorked on the turn
 * after amqp-connection-manager's channel wrapper has handed over its last queued message, when the
 * socket asks for a drain, or after {@link MAX_CORKED_TURNS} turns, whichever comes first — so other
 * traffic on the connection (the app's own requests, heartbeats) waits a few turns at most. Two pieces
 * in flight nest their corks: the socket is written when the later one uncorks. Nothing is corked while
 * the channel is not set up (a reconnect's setup must not wait), nor without these internals: `send`
 * then runs as it is. A piece of 50 then reaches the socket in one `writev` (the sink's spec counts the
 * writes); docs/request-path.md has what it saves.
 */
export function inCorkedTurns<T>(manager: ConnectionManagerLike | null | undefined, channel: ChannelLike | null | undefined, send: () => T): T {
  const socket = channel?._channel && !channel._settingUp ? socketOf(manager) : undefined;
  if (!socket) return send();
  socket.cork();
  let result: T;
  try {
    result = send();
  } catch (error) {
    socket.uncork();
    throw error;
  }
  let turns = 0;
  let handedOver = false;
  const check = () => {
    let queued = 0;
    try {
      queued = channel?._messages?.length ?? 0;
    } catch {
      handedOver = true;
    }
    if (handedOver || ++turns >= MAX_CORKED_TURNS || socket.writableNeedDrain === true || socket.destroyed === true) {
      socket.uncork();
      return;
    }
    // one more turn once the wrapper is empty: the multiplexer writes the channel's last frames on it
    if (queued === 0) handedOver = true;
    setImmediate(check);
  };
  setImmediate(check);
  return result;
}
