import type { Logger } from '@nestjs/common';
import { RateLimitedLogger } from './rate-limited-logger';

/**
 * Warnings about failing writes, per sink and per condition. The first failure of an episode (since
 * the sink last wrote successfully) is always logged; repeats of the same condition are rate-limited,
 * while a different condition (say, "queue closed" after "Redis is not connected") is logged at once.
 * The end of an episode is logged once, when a write succeeds again.
 */
export class SinkWarnings {
  /** Sinks in a failure episode, with the number of failed writes in it. */
  private readonly failing = new Map<string, number>();

  constructor(
    private readonly logger: Logger,
    private readonly limited: RateLimitedLogger,
  ) {}

  failed(sink: string, message: string): void {
    const failures = this.failing.get(sink);
    this.failing.set(sink, (failures ?? 0) + 1);
    const text = `Sink "${sink}" write failed: ${message}`;
    if (failures === undefined) this.limited.forget(`write:${sink}:`);
    this.limited.warn(`write:${sink}:${condition(message)}`, text);
  }

  recovered(sink: string): void {
    const failures = this.failing.get(sink);
    if (failures === undefined) return;
    this.failing.delete(sink);
    this.logger.log(`Sink "${sink}" recovered: a write succeeded after ${failures} failed write(s).`);
  }
}

/** A message with its numbers and quoted names blanked: one key per kind of failure, not per batch. */
function condition(message: string): string {
  return message
    .replace(/"[^"]*"/g, '"…"')
    .replace(/\d+/g, '#')
    .slice(0, 120);
}
