import { type AwsBatchService, AwsBatchSink } from '../kit/aws-batch-sink';
import { awsBatchEntry } from '../kit/aws-messages';
import { SQS_PROCESSOR_DEFAULTS, SQS_SINK_DEFAULTS, type SqsSinkOptions } from './sqs-sink.options';

/** A queue URL: `http(s)://host/<path>`. */
export function isQueueUrl(value: string): boolean {
  return /^https?:\/\/[^\s/]+\/\S+$/.test(value);
}

const SQS: AwsBatchService = {
  sinkClass: 'SqsSink',
  service: 'SQS',
  packageName: '@aws-sdk/client-sqs',
  clientClass: 'SQSClient',
  register: "a provider { provide: 'SQS_CLIENT', useFactory: () => new SQSClient({ region }) }",
  destinationOption: 'queueUrl',
  destinationExample: 'a queue URL (https://sqs.<region>.amazonaws.com/<account>/<queue>)',
  isDestination: isQueueUrl,
  defaults: SQS_SINK_DEFAULTS,
  processorDefaults: SQS_PROCESSOR_DEFAULTS,
  command(sdk, destination, messages) {
    const Command = sdk.SendMessageBatchCommand as new (input: unknown) => unknown;
    return new Command({ QueueUrl: destination, Entries: messages.map((m) => awsBatchEntry(m, 'MessageBody')) });
  },
};

/**
 * Sends deferred items to Amazon SQS queues (`SendMessageBatch`) through the app's own `SQSClient`,
 * found by injection token at bootstrap: 10 messages a call within the size limit, a call per queue,
 * a few calls at once. Each failed entry of an answer is retried (throttling, SQS's own fault) or
 * dead-lettered (the sender's fault, with SQS's code and message); entries that went through are
 * never sent again. Messages are checked when items are deferred (size, attributes, characters, FIFO
 * ids), so a bad one is refused then. FIFO queues get the item id as `MessageDeduplicationId`. See
 * `docs/sinks/sqs.md`.
 */
export class SqsSink extends AwsBatchSink {
  constructor(options: SqsSinkOptions) {
    super(SQS, options);
  }
}
