/** What the sink makes of BullMQ's refusal to add a job. */
export interface AddRefusal {
  /** BullMQ's name for it (its `ErrorCode`), kept as the failure's code (`stats().sinks[name].lastErrorCode`, a dead letter's `code`). */
  code: string;
  /** Whether the same job sent again may be added. */
  retryable: boolean;
  /** Why, and what to do about it. */
  reason: string;
}

/**
 * BullMQ's status codes for a job its add did not add (its `ErrorCode`). A missing parent may only be
 * late — a parent deferred in the same batch to another queue, whose add runs at the same time, or one
 * whose add is being retried — so that job is retried, and dead-lettered when its retry budget runs out.
 */
const REFUSALS: Readonly<Record<string, AddRefusal>> = {
  '-5': {
    code: 'ParentJobNotExist',
    retryable: true,
    reason:
      'its parent job is not in Redis (yet); retried until its retry budget (maxRetryDurationMs) runs out. opts.parent.queue is the parent ' +
      'queue\'s qualified name, prefix included (e.g. "bull:orders"), and the parent must be added before the child',
  },
  '-7': {
    code: 'ParentJobCannotBeReplaced',
    retryable: false,
    reason: 'a job with this jobId already exists under another parent; give the job a jobId of its own',
  },
};

/** A BullMQ status code that is not one of {@link REFUSALS}: not retried (sent again, it meets the same answer). */
const unknownRefusal = (code: string): AddRefusal => ({ code: `BullMQ ${code}`, retryable: false, reason: `BullMQ's add answered with error code ${code}` });

/**
 * Why BullMQ did not add a job, read from what its add answered: the id `addBulk` returned for it (a
 * negative number from a Redis script, the same as text from BullMQ 6's PostgreSQL backend — never a
 * real id, which BullMQ refuses to be an integer), or the error `add` threw (BullMQ sets its numeric
 * `code`; its message is the fallback). `undefined` for an id that is one, and for any other error.
 */
export function addRefusal(answer: unknown): AddRefusal | undefined {
  if (answer instanceof Error) {
    const code = (answer as { code?: unknown }).code;
    if (typeof code === 'number' && code < 0) return REFUSALS[String(code)] ?? unknownRefusal(String(code));
    if (/^Missing key for parent job /.test(answer.message)) return REFUSALS['-5'];
    if (/^The parent job .+ cannot be replaced/.test(answer.message)) return REFUSALS['-7'];
    return undefined;
  }
  const code = typeof answer === 'number' ? (answer < 0 ? String(answer) : undefined) : typeof answer === 'string' && /^-\d+$/.test(answer) ? answer : undefined;
  return code === undefined ? undefined : (REFUSALS[code] ?? unknownRefusal(code));
}
