import { failureCode } from './failure-codes';

/** Redis error replies worth retrying: the server is loading, busy, failing over or out of memory for now. */
const TRANSIENT = new Set(['LOADING', 'BUSY', 'TRYAGAIN', 'CLUSTERDOWN', 'MASTERDOWN', 'READONLY', 'OOM', 'NOSCRIPT']);
/** Redis error replies about the command itself: sent again, it fails again. */
const PERMANENT = new Set(['WRONGTYPE', 'ERR', 'EXECABORT', 'NOPERM', 'CROSSSLOT']);

/**
 * What a Redis error reply says: its code (the reply's first word, e.g. `WRONGTYPE`) and whether
 * sending the command again can help. Transient: LOADING, BUSY, TRYAGAIN, CLUSTERDOWN, MASTERDOWN,
 * READONLY, OOM, NOSCRIPT (ioredis reloads the script). Permanent: WRONGTYPE, ERR (but "max number of
 * clients"), EXECABORT, NOPERM, CROSSSLOT. Anything else — a connection error, an unknown reply — is
 * transient, with the connection error's code (`ECONNRESET`; `ENOTCONN` for ioredis's `Connection is closed.`).
 */
export function redisReply(error: unknown): { code?: string; retryable: boolean } {
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : '';
  const code = /^([A-Z][A-Z_]+)\b/.exec(message)?.[1];
  if (code === undefined) {
    const connection = failureCode(error);
    return connection === undefined ? { retryable: true } : { code: connection, retryable: true };
  }
  if (code === 'ERR' && /max number of clients/i.test(message)) return { code, retryable: true };
  return { code, retryable: !PERMANENT.has(code) || TRANSIENT.has(code) };
}
