import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { HeldClient } from '../../core/sink.interface';
import { abortable } from '../kit/abortable';
import { NOT_CONNECTED } from '../kit/failure-codes';
import type { BrokerTransport, ClientProxyLike } from './client-proxy-sink.options';
import type { ClientState, Transport } from './transport.interface';

/** Longest a write waits for the client's first connection before failing (retryably). */
const CONNECT_WAIT_MS = 1000;

/**
 * A first connection the sink started and that has not settled yet, per client: a piece of the same
 * write (or another write) that finds the client connecting waits for it too, instead of taking the
 * half-made connection for one that is down.
 */
const connecting = new WeakMap<object, Promise<unknown>>();

/** The client's first connection, started once however many pieces ask for it, and waited for at most {@link CONNECT_WAIT_MS}. */
function firstConnect(client: ClientProxyLike): Promise<unknown> {
  let attempt = connecting.get(client);
  if (!attempt) {
    let timer: NodeJS.Timeout | undefined;
    attempt = Promise.race([
      Promise.resolve().then(() => client.connect()),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`not connected after ${CONNECT_WAIT_MS} ms`)), CONNECT_WAIT_MS);
        timer.unref?.();
      }),
    ]).finally(() => {
      clearTimeout(timer);
      connecting.delete(client);
    });
    connecting.set(client, attempt);
  }
  return attempt;
}

/** The client's state, connecting it first (bounded) if it never was, or waiting for the first connection the sink is making. */
export async function readyState(client: ClientProxyLike, transport: Transport, held: HeldClient | undefined, signal: AbortSignal): Promise<ClientState> {
  if (held?.closed) return 'closed';
  const state = transport.state();
  if (state === 'up' || state === 'closed') return state;
  if (state === 'down' && !connecting.has(client)) return state;
  try {
    await abortable(firstConnect(client), signal);
  } catch {
    if (signal.aborted) throw signal.reason;
    return 'down';
  }
  const after = transport.state(); // (also lets a transport watch what connect() created)
  return after === 'unconnected' ? 'down' : after;
}

/** Why nothing is sent while the client is in `state` (closed: for good; down: retryable, code `ENOTCONN`). */
export function unavailableError(sinkName: string, transportName: BrokerTransport | undefined, state: ClientState): SinkWriteError {
  if (state === 'closed') {
    return new SinkWriteError(
      `ClientProxySink "${sinkName}": the ${transportName} client is closed; nothing can be sent. If this happens at shutdown, the client ` +
        'was closed before the deferred work drained: keep drainBeforeClientClose on, or close your own client after app.close().',
      { retryable: false },
    );
  }
  return new SinkWriteError(
    `ClientProxySink "${sinkName}": the ${transportName} broker is not connected; not sending (the client would buffer it and send it later). Will retry.`,
    { code: NOT_CONNECTED },
  );
}
