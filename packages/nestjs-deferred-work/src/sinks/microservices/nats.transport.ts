import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import { failureCode, NOT_CONNECTED } from '../kit/failure-codes';
import { internals } from './client-internals';
import type { ClientState, Transport, TransportContext } from './transport.interface';
import { emitted, refusing, withPayloadId } from './transport-send';

/**
 * A NATS publish the client refuses for this message alone, whatever the connection: over the server's
 * `max_payload` (the limit its INFO announced; the server would end the connection over it). Sent
 * again, it is refused again: not retryable. `undefined` for any other error.
 */
export function natsRefusal(error: unknown): SinkWriteError | undefined {
  const text = errorMessage(error);
  if (!/max_payload/i.test(text) && (error as { code?: unknown } | null)?.code !== 'MAX_PAYLOAD_EXCEEDED') return undefined;
  return new SinkWriteError(`NATS: the message is over the server's max_payload (${text}); it is never sent. Make the payload smaller.`, {
    retryable: false,
    code: 'MAX_PAYLOAD_EXCEEDED',
    cause: error,
  });
}

/** A JetStream publish ack's error: a 4xx (but 408, 429) refuses the message itself (too large for the stream, …); anything else may pass later. */
export function jetStreamAckError(subject: string, error: { code?: number; err_code?: number; description?: string } | undefined): SinkWriteError {
  const status = error?.code;
  const permanent = typeof status === 'number' && status >= 400 && status < 500 && status !== 408 && status !== 429;
  return new SinkWriteError(
    `NATS JetStream refused the message for "${subject}": ${error?.description ?? 'no sequence in the ack'} (${status ?? '?'}${error?.err_code === undefined ? '' : `, err_code ${error.err_code}`})`,
    { retryable: !permanent, code: error?.err_code ?? status },
  );
}

/** `ClientNats`: core NATS (`emit`, then one flush per batch; not confirmed) or JetStream on the same connection (acked). */
export function natsTransport(ctx: TransportContext): Transport {
  const c = internals(ctx.client);
  let status = 'connected';
  const watch = c.status?.subscribe((next) => (status = next));
  const headers = (id: string) => {
    if (!ctx.natsHeaders) throw new SinkWriteError('NATS: the NATS client package (@nats-io/transport-node or nats) could not be loaded for headers', { retryable: false });
    const h = ctx.natsHeaders();
    h.set('Nats-Msg-Id', id);
    return h;
  };
  const base = {
    transport: 'nats' as const,
    messageId: 'the Nats-Msg-Id header (context.getHeaders().get(\'Nats-Msg-Id\'))',
    state(): ClientState {
      const nc = c.natsClient;
      if (!nc) return 'unconnected';
      if (nc.isClosed?.()) return 'closed';
      // Nest 10's ClientNats has no status stream: read the connection itself (nats.js keeps
      // `protocol.connected`, false while it reconnects, when it buffers what is published).
      if (!watch) return (nc as { protocol?: { connected?: unknown } }).protocol?.connected === false ? 'down' : 'up';
      return status === 'connected' ? 'up' : 'down';
    },
    dispose: () => watch?.unsubscribe(),
  };
  if (!ctx.jetStream) {
    return {
      ...base,
      confirmed: false,
      delivered: 'core NATS: the server received it (one flush per batch) — not stored, and not confirmed to have reached a subscriber',
      send(messages) {
        return messages.map((m) =>
          refusing(emitted(ctx.client, m.pattern, new ctx.records.NatsRecordBuilder(withPayloadId(m.data, ctx.payloadIdKey, m.id)).setHeaders(headers(m.id)).build(), ctx.records), natsRefusal),
        );
      },
      async afterBatch() {
        await c.natsClient?.flush();
      },
    };
  }
  const decoder = new TextDecoder();
  return {
    ...base,
    confirmed: true,
    delivered: 'JetStream acked it: the stream capturing the subject stored it (a duplicate Nats-Msg-Id inside the duplicate window is dropped by the stream)',
    send(messages) {
      return messages.map(async (m) => {
        const nc = c.natsClient;
        if (!nc) throw new SinkWriteError('NATS: not connected; not sending', { code: NOT_CONNECTED });
        const subject = c.normalizePattern ? c.normalizePattern(m.pattern) : m.pattern;
        const record = new ctx.records.NatsRecordBuilder(withPayloadId(m.data, ctx.payloadIdKey, m.id)).setHeaders(headers(m.id)).build();
        // Nest awaits a serializer (it may be async): so does this.
        const packet = ((await c.serializer?.serialize({ pattern: m.pattern, data: record })) ?? { data: JSON.stringify({ pattern: m.pattern, data: m.data }) }) as {
          data: unknown;
          headers?: unknown;
        };
        let reply: { data: Uint8Array };
        try {
          reply = await nc.request(subject, packet.data, { timeout: ctx.ackTimeoutMs, headers: packet.headers });
        } catch (error) {
          const refused = natsRefusal(error);
          if (refused) throw refused;
          const text = errorMessage(error);
          const hint = /no responders|503/i.test(text) ? ` — no JetStream stream captures "${subject}"; add the subject to a stream` : '';
          // the ack not in time (nats.js's TimeoutError): ETIMEDOUT
          throw new SinkWriteError(`NATS JetStream publish to "${subject}" failed: ${text}${hint}`, { cause: error, code: failureCode(error) });
        }
        const ack = JSON.parse(decoder.decode(reply.data)) as { stream?: string; seq?: number; error?: { code?: number; err_code?: number; description?: string } };
        if (ack.error || typeof ack.seq !== 'number') throw jetStreamAckError(subject, ack.error);
      });
    },
  };
}
