import type { Logger } from '@nestjs/common';

/** Most keys remembered; the oldest is forgotten beyond it, so keys built from messages stay bounded. */
const MAX_KEYS = 512;

/**
 * Logs a warning at most once per `intervalMs` for each key, and says how many were held back.
 * Sinks failing under load must not flood the log.
 */
export class RateLimitedLogger {
  private readonly last = new Map<string, { at: number; suppressed: number; count: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs = 30_000,
  ) {}

  warn(key: string, message: string): void {
    this.log(key, message, 'warn');
  }

  /** As `warn`, at the error level: for what loses items (a sink dropping them for want of room). */
  error(key: string, message: string): void {
    this.log(key, message, 'error');
  }

  private log(key: string, message: string, level: 'warn' | 'error'): void {
    const now = Date.now();
    const seen = this.last.get(key);
    if (seen && now - seen.at < this.intervalMs) {
      seen.suppressed++;
      return;
    }
    const suffix = seen && seen.suppressed > 0 ? ` (${seen.suppressed} similar warnings held back)` : '';
    this.allow(key);
    this.logger[level](message + suffix);
  }

  /** Whether `key` may act now (at most `times` per interval); counts the call as acting when it may. */
  allow(key: string, times = 1): boolean {
    const now = Date.now();
    const seen = this.last.get(key);
    if (seen && now - seen.at < this.intervalMs) {
      if (seen.count >= times) return false;
      seen.count++;
      return true;
    }
    this.last.delete(key);
    this.last.set(key, { at: now, suppressed: 0, count: 1 });
    if (this.last.size > MAX_KEYS) this.last.delete(this.last.keys().next().value!);
    return true;
  }

  /** Forgets every key starting with `prefix`: their next warning is logged at once. */
  forget(prefix: string): void {
    for (const key of [...this.last.keys()]) if (key.startsWith(prefix)) this.last.delete(key);
  }
}
