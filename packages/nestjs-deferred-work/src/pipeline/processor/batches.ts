import type { Entry } from './entry';

/**
 * Takes the next batch off `queue` (mutating it and `again`): the entries set aside to retry after a
 * write that went through first, then the queue's, up to `maxBatchSize`.
 */
export function takeBatch(queue: Entry[], again: Entry[], maxBatchSize: number): Entry[] {
  if (again.length === 0) return queue.splice(0, nextBatchSize(queue, maxBatchSize));
  const first = again.splice(0, maxBatchSize);
  const room = maxBatchSize - first.length;
  return room > 0 && queue.length > 0 ? first.concat(queue.splice(0, Math.min(room, nextBatchSize(queue, maxBatchSize)))) : first;
}

/**
 * How many queued entries the next batch takes: `maxBatchSize`, but a replayed item that began a
 * write of the previous process begins one of the same size (and the batch before it stops short of
 * it), so the same items go out together again and a receiver sees the same Idempotency-Key.
 */
function nextBatchSize(queue: readonly Entry[], max: number): number {
  const head = queue[0]?.marked;
  if (head !== undefined && queue[0]!.attempts === 0) return Math.min(head, max);
  const limit = Math.min(max, queue.length);
  for (let i = 1; i < limit; i++) if (queue[i]!.marked !== undefined) return i;
  return max;
}
