import type { SinkItem } from '../../core/items/deferred-item.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';
import { AWS_BATCH_PROCESSOR_DEFAULTS, type AwsBatchSinkOptions, awsBatchSinkDefaults } from '../kit/aws-batch-options';

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
export const SQS_SINK_DEFAULTS = awsBatchSinkDefaults(SQS_SINK_NAME, 'SQS_CLIENT', 1_048_576);

/** Dispatcher settings of an SQS sink (see `AWS_BATCH_PROCESSOR_DEFAULTS` for the reasons). */
export const SQS_PROCESSOR_DEFAULTS: Partial<SinkProcessorOptions> = AWS_BATCH_PROCESSOR_DEFAULTS;
