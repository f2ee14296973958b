import { SinkWriteError } from '../../core/errors/sink-write.error';
import { failureCode, NOT_CONNECTED } from './failure-codes';

/**
 * Whether a command sent now through an ioredis client would reach Redis, from its `status`: `up`
 * when `ready` (or `wait`: lazy, connects on the first command); `closed` once it ended for good
 * (`end`); `down` otherwise (connecting, reconnecting, closing, or `ready` on a socket that can no
 * longer be written) — sending then would park the command
 * in ioredis' offline queue, to be sent behind the dispatcher's back whenever Redis comes back.
 * A client with no status to read counts as `up` (let the command tell).
 */
export function redisState(client: { status?: unknown; stream?: unknown } | null | undefined): 'up' | 'down' | 'closed' {
  let status: unknown;
  let stream: { writable?: unknown } | undefined;
  try {
    status = client?.status;
    stream = client?.stream as { writable?: unknown } | undefined;
  } catch {
    return 'up';
  }
  // ioredis can still say `ready` on a socket that can no longer be written (the peer closed it and the
  // close has not reached ioredis yet): it then parks every command in its offline queue.
  if (status === 'ready' && stream && stream.writable === false) return 'down';
  if (status === undefined || status === 'ready' || status === 'wait') return 'up';
  if (status === 'end') return 'closed';
  return 'down';
}

/**
 * The error of a write (or part of one) not sent because the client is not connected (`redisState`
 * not `up`): retryable, with the code `ENOTCONN` — or, with a `cause` (waiting for the connection
 * failed), the cause's own code where it carries one.
 */
export function redisNotConnected(message: string, cause?: unknown): SinkWriteError {
  if (cause === undefined) return new SinkWriteError(message, { retryable: true, code: NOT_CONNECTED });
  return new SinkWriteError(message, { retryable: true, code: failureCode(cause) ?? NOT_CONNECTED, cause });
}
