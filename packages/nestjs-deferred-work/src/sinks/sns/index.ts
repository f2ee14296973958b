/**
 * Deferred items as Amazon SNS messages (`PublishBatch`) through the app's `SNSClient` (`@aws-sdk/client-sns` as an optional peer).
 *
 * @module nestjs-deferred-work/sns
 */
export { SnsSink } from './sns.sink';
export { SNS_PROCESSOR_DEFAULTS, SNS_SINK_DEFAULTS, SNS_SINK_NAME, type SnsSinkOptions } from './sns-sink.options';
export type { AwsMessageAttribute } from '../kit/aws-messages';
export type { AwsBatchSinkDefaults } from '../kit/aws-batch-options';
