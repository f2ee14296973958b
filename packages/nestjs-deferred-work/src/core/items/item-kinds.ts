import type { DeferredKind, RunWhen, SinkKind } from './deferred-item.interface';

/** Every kind of item. */
export const DEFERRED_KINDS: readonly DeferredKind[] = Object.freeze(['job', 'log', 'metric', 'callback']);

/** The kinds a sink can be given (callbacks run in-process). */
export const SINK_KINDS: readonly SinkKind[] = Object.freeze(['job', 'log', 'metric']);

/** Every `when`. */
export const RUN_WHENS: readonly RunWhen[] = Object.freeze(['always', 'success', 'failure']);

/** Default `when` per kind: jobs and callbacks on success, logs and metrics always. */
export const WHEN_DEFAULTS: Readonly<Record<DeferredKind, RunWhen>> = Object.freeze({
  job: 'success',
  callback: 'success',
  log: 'always',
  metric: 'always',
});

export function isRunWhen(value: unknown): value is RunWhen {
  return value === 'always' || value === 'success' || value === 'failure';
}

export function isSinkKind(value: unknown): value is SinkKind {
  return value === 'job' || value === 'log' || value === 'metric';
}

export function isDeferredKind(value: unknown): value is DeferredKind {
  return isSinkKind(value) || value === 'callback';
}
