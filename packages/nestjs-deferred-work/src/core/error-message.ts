/** The message of anything thrown: an `Error`'s message, a string, or its JSON form. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

/** A code as errors carry it: `ECONNREFUSED`, `57P01`, `PROTOCOL_CONNECTION_LOST`, `ThrottlingException`, … */
const CODE = /^[A-Za-z0-9_.-]{2,64}$/;

/**
 * The code an error carries for the failure, where a sink said none: its own `code` (Node's system
 * errors, `pg`, `mysql2`), the first of an `AggregateError`'s (a connection refused on every address
 * of a host), its `cause`'s, or a Redis error reply's prefix (`LOADING`, `READONLY`, `MASTERDOWN`).
 * `undefined` when it carries none.
 */
export function errorCode(error: unknown, depth = 0): string | undefined {
  if (error === null || typeof error !== 'object' || depth > 3) return undefined;
  // A DOMException's numeric `code` is a legacy index (20 for AbortError), not the failure's code.
  if (typeof DOMException !== 'undefined' && error instanceof DOMException) return error.name === 'TimeoutError' ? 'ETIMEDOUT' : undefined;
  const own = (error as { code?: unknown }).code;
  if ((typeof own === 'string' && CODE.test(own)) || (typeof own === 'number' && Number.isInteger(own))) return String(own);
  const inner = (error as { errors?: unknown }).errors;
  if (Array.isArray(inner)) for (const one of inner) {
    const code = errorCode(one, depth + 1);
    if (code !== undefined) return code;
  }
  const cause = errorCode((error as { cause?: unknown }).cause, depth + 1);
  if (cause !== undefined) return cause;
  if ((error as { name?: unknown }).name === 'ReplyError') {
    const prefix = /^([A-Z]{3,})\s/.exec(String((error as { message?: unknown }).message))?.[1];
    if (prefix !== undefined) return prefix;
  }
  return undefined;
}
