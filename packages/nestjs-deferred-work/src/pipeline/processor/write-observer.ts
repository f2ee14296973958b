/**
 * What a processor tells an observer about each write, on the write path (never the request's):
 * for the library's own metrics (`nestjs-deferred-work/metrics`). Nothing is measured while none is set.
 */
export interface WriteObserver {
  /**
   * One write of `size` items to `sink` took `ms`; `failed` of them did not go through (`code`: the
   * server's code of the first failure, when the sink gave one).
   */
  wrote(sink: string, ms: number, size: number, failed: number, code: string | undefined): void;
  /**
   * An item of `kind` accepted `ms` ago was delivered to `sink`. Only with this method set does each
   * accepted item get its acceptance time (items accepted before are not told).
   */
  delivered?(sink: string, kind: string, ms: number): void;
}

/** Where processors find the observer (the dispatcher's), read once per write. */
export interface WriteObserverSource {
  readonly observer: WriteObserver | undefined;
}

/**
 * Tells `observer` of a write of `entries` (those in `failed` did not go through) and of its delivered
 * entries' lag, once the write is accounted for; an observer that throws is ignored (metrics never
 * break delivery).
 */
export function tellObserver(
  observer: WriteObserver,
  sink: string,
  ms: number,
  entries: readonly { item: { kind: string }; acceptedAt?: number }[],
  failed: ReadonlySet<unknown> | undefined,
  firstCode: string | undefined,
  ended: number,
): void {
  try {
    observer.wrote(sink, ms, entries.length, failed?.size ?? 0, firstCode);
    if (observer.delivered) {
      for (const entry of entries) {
        if (entry.acceptedAt !== undefined && !failed?.has(entry)) observer.delivered(sink, entry.item.kind, ended - entry.acceptedAt);
      }
    }
  } catch {
    // A metrics library refusing a value: the write stays accounted for; nothing else to do here.
  }
}

/** The observers told of every write: none, one, or several behind one (read once per write as `current`). */
export class WriteObservers {
  private all: WriteObserver[] = [];
  /** The one observer to tell, standing for all of them; `undefined` when there is none. */
  current: WriteObserver | undefined;

  /** Adds `observer`; returns how to remove it. */
  add(observer: WriteObserver): () => void {
    this.all = [...this.all, observer];
    this.update();
    return () => {
      this.all = this.all.filter((o) => o !== observer);
      this.update();
    };
  }

  private update(): void {
    const all = this.all;
    this.current =
      all.length === 0
        ? undefined
        : all.length === 1
          ? all[0]
          : {
              wrote: (...args) => all.forEach((o) => o.wrote(...args)),
              delivered: all.some((o) => o.delivered) ? (...args) => all.forEach((o) => o.delivered?.(...args)) : undefined,
            };
  }
}
