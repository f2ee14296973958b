/**
 * Deferred items as Amazon SQS messages (`SendMessageBatch`) through the app's `SQSClient` (`@aws-sdk/client-sqs` as an optional peer).
 *
 * @module nestjs-deferred-work/sqs
 */
export { SqsSink } from './sqs.sink';
export { SQS_PROCESSOR_DEFAULTS, SQS_SINK_DEFAULTS, SQS_SINK_NAME, type SqsSinkOptions } from './sqs-sink.options';
export type { AwsMessageAttribute } from '../kit/aws-messages';
export type { AwsBatchSinkDefaults } from '../kit/aws-batch-options';
