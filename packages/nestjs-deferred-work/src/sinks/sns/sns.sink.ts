import { type AwsBatchService, AwsBatchSink } from '../kit/aws-batch-sink';
import { awsBatchEntry } from '../kit/aws-messages';
import { SNS_PROCESSOR_DEFAULTS, SNS_SINK_DEFAULTS, type SnsSinkOptions } from './sns-sink.options';

/** A topic ARN: `arn:<partition>:sns:<region>:<account>:<name>`. */
export function isTopicArn(value: string): boolean {
  return /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/.test(value);
}

const SNS: AwsBatchService = {
  sinkClass: 'SnsSink',
  service: 'SNS',
  packageName: '@aws-sdk/client-sns',
  clientClass: 'SNSClient',
  register: "a provider { provide: 'SNS_CLIENT', useFactory: () => new SNSClient({ region }) }",
  destinationOption: 'topicArn',
  destinationExample: 'a topic ARN (arn:aws:sns:<region>:<account>:<topic>)',
  isDestination: isTopicArn,
  defaults: SNS_SINK_DEFAULTS,
  processorDefaults: SNS_PROCESSOR_DEFAULTS,
  command(sdk, destination, messages) {
    const Command = sdk.PublishBatchCommand as new (input: unknown) => unknown;
    return new Command({ TopicArn: destination, PublishBatchRequestEntries: messages.map((m) => awsBatchEntry(m, 'Message')) });
  },
};

/**
 * Publishes deferred items to Amazon SNS topics (`PublishBatch`) through the app's own `SNSClient`,
 * found by injection token at bootstrap: 10 messages a call within the size limit, a call per topic,
 * a few calls at once. Each failed entry of an answer is retried (throttling, SNS's own fault) or
 * dead-lettered (the sender's fault, with SNS's code and message); entries that went through are
 * never published again. Messages are checked when items are deferred (size, attributes, characters,
 * FIFO ids), so a bad one is refused then. FIFO topics get the item id as `MessageDeduplicationId`.
 * See `docs/sinks/sns.md`.
 */
export class SnsSink extends AwsBatchSink {
  constructor(options: SnsSinkOptions) {
    super(SNS, options);
  }
}
