/**
 * What BullMQ's add script answers for a job it did not add (its `ErrorCode`s): `addBulk` returns
 * the code in place of the job's id, `add` throws BullMQ's message for it. Sent again, the same job
 * meets the same answer, so such a job is dead-lettered at once with the reason, never counted as
 * added and never retried.
 */
const REFUSALS: Readonly<Record<number, string>> = {
  [-5]:
    'its parent job does not exist (opts.parent names a job that is not in Redis). opts.parent.queue is the ' +
    'parent queue\'s qualified name, prefix included (e.g. "bull:orders"); add the parent first, or leave out opts.parent',
  [-7]: 'a job with this jobId already exists under another parent; give the job a jobId of its own',
};

/**
 * Why BullMQ did not add a job, read from the id `addBulk` returned for it (BullMQ's ids are strings;
 * a negative number there is one of its error codes), or `undefined` when the job was added.
 */
export function refusedJobId(id: unknown): string | undefined {
  if (typeof id !== 'number' || id >= 0) return undefined;
  return REFUSALS[id] ?? `BullMQ's add script answered with error code ${id}`;
}

/** Whether `error`, thrown by `queue.add`, is BullMQ's refusal of that job (see {@link refusedJobId}) rather than a failure to reach Redis. */
export function isAddRefusal(error: unknown): boolean {
  const message = error instanceof Error ? error.message : '';
  return /^Missing key for parent job |^The parent job .+ cannot be replaced/.test(message);
}
