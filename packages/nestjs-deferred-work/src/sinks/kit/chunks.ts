/** Limits of one call to a server: entries per call and bytes per call. */
export interface ChunkLimits {
  /** Most entries in one call (SQS and SNS: 10). Default: no limit. */
  maxCount?: number;
  /** Most bytes in one call, as `size` measures them (SQS: 1 MiB a batch; MySQL: `max_allowed_packet`). Default: no limit. */
  maxBytes?: number;
}

/** One call's worth of entries: their positions in the list given to {@link chunk}, the values, and their bytes. */
export interface Chunk<V> {
  positions: number[];
  values: V[];
  bytes: number;
}

/**
 * Splits `values`, in order, into calls that respect the server's limits: at most `maxCount` entries
 * and `maxBytes` bytes (each entry's `size`) per call. An entry larger than `maxBytes` by itself can
 * never be sent: it is left out of every chunk and listed in `tooLarge` (refuse it, not retryable).
 */
export function chunk<V>(values: readonly V[], limits: ChunkLimits, size: (value: V) => number = () => 0): { chunks: Chunk<V>[]; tooLarge: number[] } {
  const maxCount = limits.maxCount ?? Number.POSITIVE_INFINITY;
  const maxBytes = limits.maxBytes ?? Number.POSITIVE_INFINITY;
  const chunks: Chunk<V>[] = [];
  const tooLarge: number[] = [];
  let current: Chunk<V> | undefined;
  for (let position = 0; position < values.length; position++) {
    const value = values[position];
    const bytes = limits.maxBytes === undefined ? 0 : size(value);
    if (bytes > maxBytes) {
      tooLarge.push(position);
      continue;
    }
    if (!current || current.values.length >= maxCount || current.bytes + bytes > maxBytes) {
      current = { positions: [], values: [], bytes: 0 };
      chunks.push(current);
    }
    current.positions.push(position);
    current.values.push(value);
    current.bytes += bytes;
  }
  return { chunks, tooLarge };
}
