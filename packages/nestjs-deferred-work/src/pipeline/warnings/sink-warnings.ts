import type { Logger } from '@nestjs/common';
import { RateLimitedLogger } from './rate-limited-logger';

/** Distinct failure conditions tracked per sink; beyond it, the rest share one key. */
const MAX_CONDITIONS = 8;
/** Episode starts (and recoveries) logged per sink per interval: a boot hiccup and a real outage both show; a flapping sink does not flood. */
const EPISODES_PER_INTERVAL = 3;

interface SinkState {
  /** In a failure episode (since the last successful write), with this many failed writes. */
  failures: number | undefined;
  /** Conditions with a rate-limit key of their own (bounded; cleared when the keys are forgotten). */
  conditions: Set<string>;
}

/**
 * Warnings about failing writes, per sink and per condition. The first failure of an episode (since
 * the sink last wrote successfully) is logged at once, and so is a different condition (say, "queue
 * closed" after "Redis is not connected"); repeats of a condition are rate-limited. The end of an
 * episode is logged once. A sink that flaps (fails, recovers, fails…) or fails with ever-new messages
 * is still limited: episode starts and recoveries are logged a few times per interval at most, and
 * at most 8 conditions per sink get keys of their own.
 */
export class SinkWarnings {
  private readonly sinks = new Map<string, SinkState>();

  constructor(
    private readonly logger: Logger,
    private readonly limited: RateLimitedLogger,
  ) {}

  failed(sink: string, message: string): void {
    let state = this.sinks.get(sink);
    if (!state) this.sinks.set(sink, (state = { failures: undefined, conditions: new Set() }));
    if (state.failures === undefined) {
      state.failures = 0;
      // A new episode: its first warning is not held back by the last episode's (a few times per interval).
      if (this.limited.allow(`episode:${sink}`, EPISODES_PER_INTERVAL)) {
        this.limited.forget(`write:${sink}:`);
        state.conditions.clear();
      }
    }
    state.failures++;
    let condition = conditionOf(message);
    if (!state.conditions.has(condition)) {
      if (state.conditions.size < MAX_CONDITIONS) state.conditions.add(condition);
      else condition = '*';
    }
    this.limited.warn(`write:${sink}:${condition}`, `Sink "${sink}" write failed: ${message}`);
  }

  recovered(sink: string): void {
    const state = this.sinks.get(sink);
    if (state?.failures === undefined) return;
    const failures = state.failures;
    state.failures = undefined;
    if (this.limited.allow(`recovered:${sink}`, EPISODES_PER_INTERVAL)) {
      this.logger.log(`Sink "${sink}" recovered: a write succeeded after ${failures} failed write(s).`);
    }
  }
}

/** A message with its numbers and quoted names blanked: one key per kind of failure, not per batch. */
function conditionOf(message: string): string {
  return message
    .replace(/"[^"]*"/g, '"…"')
    .replace(/\d+/g, '#')
    .slice(0, 120);
}
