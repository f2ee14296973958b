import type { SinkItem } from '../../core/items/deferred-item.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';
import type { AwsBatchSinkOptions } from '../kit/aws-batch-options';

/**
 * Options of {@link SqsSink}. Only `queueUrl` is required: with it alone, the sink sends every job,
 * log record and metric point to that queue through the `SQSClient` the app registers under the token
 * `'SQS_CLIENT'`.
 */
export interface SqsSinkOptions extends AwsBatchSinkOptions {
  /** Unique sink name, used by routing. Default `'sqs'`. */
  name?: string;
  /**
   * The queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`), or a function choosing it
   * per item; a batch sends one call per queue. A queue whose name ends in `.fifo` gets
   * `MessageGroupId` and `MessageDeduplicationId` (the item id). Required.
   */
  queueUrl: string | ((item: SinkItem) => string);
  /**
   * The `SQSClient` to send through: an injection token the app registers it under, the client
   * itself, or `SQSClientConfig` options (`{ region, endpoint, … }`), from which the sink builds its
   * own (destroyed at shutdown). Credentials come from the SDK's usual chain; the sink never reads or
   * logs them, and never destroys the app's client. Default `'SQS_CLIENT'`.
   */
  client?: unknown;
  /** Largest message, and largest `SendMessageBatch` call, in bytes (body and attributes): SQS's limit. At most the default. Default `1048576` (1 MiB). */
  maxPayloadBytes?: number;
}

/** The name of an SQS sink unless `name` says otherwise. */
export const SQS_SINK_NAME = 'sqs';

/** The option defaults of {@link SqsSink}. */
export const SQS_SINK_DEFAULTS = Object.freeze({
  name: SQS_SINK_NAME,
  client: 'SQS_CLIENT',
  kinds: Object.freeze(['job', 'log', 'metric'] as const),
  maxPayloadBytes: 1_048_576,
  concurrency: 5,
});

/**
 * Dispatcher settings of an SQS sink:
 * - `maxBatchSize` 100: ten `SendMessageBatch` calls of 10, five at a time — two round trips.
 * - `writeTimeoutMs` 15000: the app's `SQSClient` retries throttling and 5xx on its own within a call
 *   (3 tries with backoff by default); the write allows for that.
 */
export const SQS_PROCESSOR_DEFAULTS: Partial<SinkProcessorOptions> = Object.freeze({
  maxBatchSize: 100,
  writeTimeoutMs: 15_000,
});
