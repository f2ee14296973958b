/**
 * Whether a command sent now through an ioredis client would reach Redis, from its `status`: `up`
 * when `ready` (or `wait`: lazy, connects on the first command); `closed` once it ended for good
 * (`end`); `down` otherwise (connecting, reconnecting, closing) — sending then would park the command
 * in ioredis' offline queue, to be sent behind the dispatcher's back whenever Redis comes back.
 * A client with no status to read counts as `up` (let the command tell).
 */
export function redisState(client: { status?: unknown } | null | undefined): 'up' | 'down' | 'closed' {
  let status: unknown;
  try {
    status = client?.status;
  } catch {
    return 'up';
  }
  if (status === undefined || status === 'ready' || status === 'wait') return 'up';
  if (status === 'end') return 'closed';
  return 'down';
}
