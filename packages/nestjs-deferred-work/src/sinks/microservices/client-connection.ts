import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { HeldClient } from '../../core/sink.interface';
import { abortable } from '../kit/abortable';
import type { BrokerTransport, ClientProxyLike } from './client-proxy-sink.options';
import type { ClientState, Transport } from './transport.interface';

/** Longest a write waits for the client's first connection before failing (retryably). */
const CONNECT_WAIT_MS = 1000;

/** The client's state, connecting it first (bounded) if it never was. */
export async function readyState(client: ClientProxyLike, transport: Transport, held: HeldClient | undefined, signal: AbortSignal): Promise<ClientState> {
  if (held?.closed) return 'closed';
  const state = transport.state();
  if (state !== 'unconnected') return state;
  let timer: NodeJS.Timeout | undefined;
  try {
    await abortable(
      Promise.race([
        Promise.resolve().then(() => client.connect()),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`not connected after ${CONNECT_WAIT_MS} ms`)), CONNECT_WAIT_MS);
        }),
      ]),
      signal,
    );
  } catch {
    if (signal.aborted) throw signal.reason;
    return 'down';
  } finally {
    clearTimeout(timer);
  }
  const after = transport.state(); // (also lets a transport watch what connect() created)
  return after === 'unconnected' ? 'down' : after;
}

/** Why nothing is sent while the client is in `state` (closed: for good; down: retryable). */
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
  );
}
