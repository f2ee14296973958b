/**
 * Settings of the runner of `run(fn)` callbacks (module option `callbacks`). Callbacks are not
 * batched: each one runs as its own task as soon as a slot is free.
 */
export interface CallbackRunnerOptions {
  /**
   * Most callbacks running at once; the rest wait in the queue. A slow callback holds only its own
   * slot. Default `2048`: enough for 40,000 callbacks/s of 25 ms each (1,000 running at a time) with
   * room for a slow tail, while still bounding how many calls an app makes to a struggling upstream.
   */
  concurrency: number;
  /**
   * Most callbacks waiting for a slot or for a retry (running ones not included); beyond it new
   * callbacks are dropped and counted. Default `16384`: more than a second of a 1 s stall at 10,000
   * req/s with one callback each.
   */
  maxQueueSize: number;
  /**
   * Time one run of a callback may take, in ms. Then its `signal` is aborted and it is dead-lettered
   * with reason `timeout` at once; if it goes on running regardless it is counted in
   * `stats().callbacks.overdue` and keeps its slot until it ends (`finishedLate`), so callbacks that
   * ignore their signal cannot pile up against a hung upstream. Default `5000`.
   */
  timeoutMs: number;
  /** Runs per callback, the first included, when it throws. Default `1`: callbacks are arbitrary code that may not be safe to run twice. */
  maxAttempts: number;
  /** First retry delay in ms (when `maxAttempts` > 1); doubles each retry, with full jitter. Default `100`. */
  initialBackoffMs: number;
  /** Ceiling of the retry delay in ms. Default `5000`. */
  maxBackoffMs: number;
}

/** Defaults of {@link CallbackRunnerOptions}. */
export const CALLBACK_RUNNER_DEFAULTS: Readonly<CallbackRunnerOptions> = Object.freeze({
  concurrency: 2048,
  maxQueueSize: 16_384,
  timeoutMs: 5000,
  maxAttempts: 1,
  initialBackoffMs: 100,
  maxBackoffMs: 5000,
});

/** Smallest value of each option (options ending in `Ms` are capped at the longest timer). */
export const CALLBACK_RUNNER_MINIMUMS: Readonly<Record<keyof CallbackRunnerOptions, number>> = Object.freeze({
  concurrency: 1,
  maxQueueSize: 0,
  timeoutMs: 1,
  maxAttempts: 1,
  initialBackoffMs: 0,
  maxBackoffMs: 0,
});
