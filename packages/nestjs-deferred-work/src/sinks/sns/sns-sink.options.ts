import type { SinkItem } from '../../core/items/deferred-item.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';
import { AWS_BATCH_PROCESSOR_DEFAULTS, type AwsBatchSinkOptions, awsBatchSinkDefaults } from '../kit/aws-batch-options';

/**
 * Options of {@link SnsSink}. Only `topicArn` is required: with it alone, the sink publishes every job,
 * log record and metric point to that topic through the `SNSClient` the app registers under the token
 * `'SNS_CLIENT'`.
 */
export interface SnsSinkOptions extends AwsBatchSinkOptions {
  /** Unique sink name, used by routing. Default `'sns'`. */
  name?: string;
  /**
   * The topic ARN (`arn:aws:sns:<region>:<account>:<name>`), or a function choosing it per item; a
   * batch sends one call per topic. A topic whose name ends in `.fifo` gets `MessageGroupId` and
   * `MessageDeduplicationId` (the item id). Required.
   */
  topicArn: string | ((item: SinkItem) => string);
  /**
   * The `SNSClient` to publish through: an injection token the app registers it under, the client
   * itself, or `SNSClientConfig` options (`{ region, endpoint, … }`), from which the sink builds its
   * own (destroyed at shutdown). Credentials come from the SDK's usual chain; the sink never reads or
   * logs them, and never destroys the app's client. Default `'SNS_CLIENT'`.
   */
  client?: unknown;
  /** Largest message, and largest `PublishBatch` call, in bytes (body and attributes): SNS's limit. At most the default. Default `262144` (256 KiB). */
  maxPayloadBytes?: number;
}

/** The name of an SNS sink unless `name` says otherwise. */
export const SNS_SINK_NAME = 'sns';

/** The option defaults of {@link SnsSink}. */
export const SNS_SINK_DEFAULTS = awsBatchSinkDefaults(SNS_SINK_NAME, 'SNS_CLIENT', 262_144);

/** Dispatcher settings of an SNS sink (see `AWS_BATCH_PROCESSOR_DEFAULTS` for the reasons). */
export const SNS_PROCESSOR_DEFAULTS: Partial<SinkProcessorOptions> = AWS_BATCH_PROCESSOR_DEFAULTS;
