/**
 * A processor's hard stop: the shutdown deadline passing. Its `signal` is for what waits (retry
 * sleeps); the writes in flight `watch` it and are aborted directly when it comes, without an 'abort'
 * listener per write (EventTarget listeners cost more than the rest of a guarded write).
 */
export class HardStop {
  private readonly controller = new AbortController();
  private readonly watchers = new Set<(reason: unknown) => void>();

  /** Aborted, with the stop's reason, once `abort` is called. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * Calls `onStop(reason)` when the stop comes (not if it already has, as with a listener added then).
   * Returns the function that stops watching.
   */
  watch(onStop: (reason: unknown) => void): () => void {
    this.watchers.add(onStop);
    return () => this.watchers.delete(onStop);
  }

  /** Stops: aborts `signal`, then calls every watcher. Once; later calls do nothing. */
  abort(reason: unknown): void {
    if (this.controller.signal.aborted) return;
    this.controller.abort(reason);
    for (const onStop of this.watchers) onStop(this.controller.signal.reason);
  }
}
