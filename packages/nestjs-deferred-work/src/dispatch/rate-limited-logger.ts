import { Logger } from '@nestjs/common';

/**
 * Logs a warning at most once per `intervalMs` for each key, and says how many were held back.
 * Sinks failing under load must not flood the log.
 */
export class RateLimitedLogger {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs = 30_000,
  ) {}

  warn(key: string, message: string): void {
    const now = Date.now();
    const seen = this.last.get(key);
    if (seen && now - seen.at < this.intervalMs) {
      seen.suppressed++;
      return;
    }
    const suffix = seen && seen.suppressed > 0 ? ` (${seen.suppressed} similar warnings held back)` : '';
    this.last.set(key, { at: now, suppressed: 0 });
    this.logger.warn(message + suffix);
  }
}
