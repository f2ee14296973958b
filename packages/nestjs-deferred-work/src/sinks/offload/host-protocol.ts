import type { SinkKind } from '../../core/items/deferred-item.interface';

/** The sinks the worker can build without a module of the user's: `HttpSink`, `BullSink`, `BullMqSink`. */
export type BuiltinSinkName = 'http' | 'bull' | 'bullmq';

/** Where the worker finds the factory of its sink. */
export type SinkSource = { builtin: BuiltinSinkName } | { url: string; export: string };

/** The worker's `workerData`: plain data only (it crosses the thread boundary by structured clone). */
export interface SinkHostData {
  /** The offloaded sink's name, for messages. */
  name: string;
  source: SinkSource;
  /** The factory's argument. */
  options: unknown;
}

/** One item that did not go through, as the worker reports it. */
export interface HostItemFailure {
  index: number;
  message: string;
  retryable: boolean;
  retryAfterMs?: number;
  code?: string;
}

/** From the request thread to the worker. */
export type ToHost =
  /** `batch`: the items as JSON text (what an in-process sink would serialise). */
  | { type: 'write'; id: number; batch: string; attempt: number }
  /** `code`: the abort reason's (`ETIMEDOUT` for the write's timeout), so the worker's sink reports it. */
  | { type: 'abort'; id: number; message: string; code?: string }
  | { type: 'shutdown' };

/** From the worker to the request thread. */
export type FromHost =
  | { type: 'ready'; kinds?: readonly SinkKind[] }
  | { type: 'failed-to-start'; message: string }
  | { type: 'result'; id: number; failed?: HostItemFailure[]; duplicates?: number[]; retryAfterMs?: number; cpuMs?: number }
  | { type: 'error'; id: number; message: string; retryable: boolean; retryAfterMs?: number; code?: string; cpuMs?: number }
  | { type: 'warning'; message: string }
  | { type: 'closed' };
