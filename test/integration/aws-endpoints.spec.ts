import { PublishBatchCommand, SNSClient } from '@aws-sdk/client-sns';
import { CreateQueueCommand, SendMessageBatchCommand, type SendMessageBatchRequestEntry, SQSClient } from '@aws-sdk/client-sqs';
import { startLocalSqs } from '../support/local-sqs';
import { SnsEndpoint } from '../support/sns-endpoint';
import { SqsEndpoint } from '../support/sqs-endpoint';

/**
 * The local protocol endpoints refuse what AWS refuses. SQS: each case is sent to local-aws-sqs (a
 * local SQS server) and to SqsEndpoint through the real SDK, and both must answer alike. SNS (no local
 * server): PublishBatch's documented rules, and the injected faults as the SDK reads them.
 */
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
let server: { url: string; close(): Promise<void> };
let localUrl = '';
const sqs = new SqsEndpoint();
const sns = new SnsEndpoint();

beforeAll(async () => {
  server = await startLocalSqs();
  localUrl = server.url;
  await Promise.all([sqs.start(), sns.start()]);
});
afterAll(async () => {
  await server.close();
  await Promise.all([sqs.stop(), sns.stop()]);
});

const entries = (count: number, body = 'x'): SendMessageBatchRequestEntry[] => Array.from({ length: count }, (_, i) => ({ Id: `e${i}`, MessageBody: body }));

/** What a call gets: the error's name, or the ids of the failed entries with their codes. */
async function outcome(client: SQSClient | SNSClient, command: unknown): Promise<string> {
  try {
    const out = (await (client as { send(c: unknown): Promise<unknown> }).send(command)) as { Failed?: Array<{ Id?: string; Code?: string; SenderFault?: boolean }> };
    return `failed: ${JSON.stringify((out.Failed ?? []).map((f) => [f.Id, f.Code, f.SenderFault]))}`;
  } catch (error) {
    return `error: ${(error as Error).name}`;
  }
}

describe('SqsEndpoint answers like local-aws-sqs', () => {
  const cases: Array<[string, (queueUrl: string) => SendMessageBatchCommand]> = [
    ['10 entries go through', (q) => new SendMessageBatchCommand({ QueueUrl: q, Entries: entries(10) })],
    ['11 entries are refused as a whole', (q) => new SendMessageBatchCommand({ QueueUrl: q, Entries: entries(11) })],
    ['ids repeated', (q) => new SendMessageBatchCommand({ QueueUrl: q, Entries: [...entries(2), { Id: 'e0', MessageBody: 'y' }] })],
    ['an id with a dot', (q) => new SendMessageBatchCommand({ QueueUrl: q, Entries: [{ Id: 'e.1', MessageBody: 'y' }] })],
    ['an id of 81 characters', (q) => new SendMessageBatchCommand({ QueueUrl: q, Entries: [{ Id: 'i'.repeat(81), MessageBody: 'y' }] })],
    ['a batch over 1 MiB', (q) => new SendMessageBatchCommand({ QueueUrl: q, Entries: entries(2, 'z'.repeat(600_000)) })],
    ['a Number attribute that is not a number fails its entry', (q) => new SendMessageBatchCommand({ QueueUrl: q, Entries: [...entries(2), { Id: 'bad', MessageBody: 'y', MessageAttributes: { n: { DataType: 'Number', StringValue: 'abc' } } }] })],
    ['a dedup id on a standard queue fails its entry', (q) => new SendMessageBatchCommand({ QueueUrl: q, Entries: [...entries(1), { Id: 'bad', MessageBody: 'y', MessageDeduplicationId: 'd' }] })],
  ];

  it.each(cases)('%s', async (_name, command) => {
    const local = new SQSClient({ endpoint: localUrl, region: 'us-east-1', credentials, maxAttempts: 1 });
    const ours = new SQSClient({ endpoint: sqs.url, region: 'us-east-1', credentials, maxAttempts: 1 });
    const queueUrl = (await local.send(new CreateQueueCommand({ QueueName: `q${Math.random().toString(36).slice(2)}` }))).QueueUrl!;
    const expected = await outcome(local, command(queueUrl));
    expect(await outcome(ours, command(`${sqs.url}/000000000000/q`))).toBe(expected);
    local.destroy();
    ours.destroy();
  });

  it('faults: throttling and 500s reach the SDK as AWS sends them (retried by the SDK, then thrown)', async () => {
    const ours = new SQSClient({ endpoint: sqs.url, region: 'us-east-1', credentials, maxAttempts: 2 });
    try {
      sqs.fault = 'throttle';
      const calls = sqs.calls;
      await expect(ours.send(new SendMessageBatchCommand({ QueueUrl: `${sqs.url}/000000000000/q`, Entries: entries(1) }))).rejects.toMatchObject({ name: 'Throttling', $fault: 'client' });
      expect(sqs.calls - calls).toBe(2);
      sqs.fault = 'service-throttle';
      await expect(ours.send(new SendMessageBatchCommand({ QueueUrl: `${sqs.url}/000000000000/q`, Entries: entries(1) }))).rejects.toMatchObject({
        name: 'KmsThrottled',
        Code: 'KMS.ThrottlingException',
        $fault: 'client',
      });
      sqs.fault = 'error';
      await expect(ours.send(new SendMessageBatchCommand({ QueueUrl: `${sqs.url}/000000000000/q`, Entries: entries(1) }))).rejects.toMatchObject({ name: 'InternalError', $fault: 'server' });
    } finally {
      sqs.fault = undefined;
      ours.destroy();
    }
  });
});

describe('SnsEndpoint applies PublishBatch rules', () => {
  const topic = 'arn:aws:sns:us-east-1:000000000000:t';
  const client = () => new SNSClient({ endpoint: sns.url, region: 'us-east-1', credentials, maxAttempts: 1 });
  const publish = (TopicArn: string, list: Array<Record<string, unknown>>) => new PublishBatchCommand({ TopicArn, PublishBatchRequestEntries: list as never });
  const plain = (count: number, body = 'x') => Array.from({ length: count }, (_, i) => ({ Id: `e${i}`, Message: body }));

  // SNS sends the codes of its API reference (`BatchRequestTooLong`); the SDK names each by its modelled exception (`BatchRequestTooLongException`)
  it.each([
    ['10 entries go through', publish(topic, plain(10)), 'failed: []'],
    ['11 entries are refused', publish(topic, plain(11)), 'error: TooManyEntriesInBatchRequestException'],
    ['ids repeated', publish(topic, [...plain(2), { Id: 'e1', Message: 'y' }]), 'error: BatchEntryIdsNotDistinctException'],
    ['an id with a dot', publish(topic, [{ Id: 'a.b', Message: 'y' }]), 'error: InvalidBatchEntryIdException'],
    ['a batch over 256 KiB', publish(topic, plain(2, 'z'.repeat(140_000))), 'error: BatchRequestTooLongException'],
    ['a Number attribute that is not a number', publish(topic, [...plain(1), { Id: 'bad', Message: 'y', MessageAttributes: { n: { DataType: 'Number', StringValue: 'abc' } } }]), 'failed: [["bad","InvalidParameter",true]]'],
    ['a FIFO topic without MessageGroupId', publish(`${topic}.fifo`, [{ Id: 'ok', Message: 'y', MessageGroupId: 'g', MessageDeduplicationId: 'd1' }, { Id: 'bad', Message: 'y' }]), 'failed: [["bad","InvalidParameter",true]]'],
  ])('%s', async (_name, command, expected) => {
    const c = client();
    expect(await outcome(c, command)).toBe(expected);
    c.destroy();
  });

  it('a FIFO replay (same dedup id within five minutes) is answered but not delivered again; attributes arrive decoded', async () => {
    const c = client();
    const before = sns.records.length;
    const entry = { Id: 'r1', Message: 'hé & <b>', MessageGroupId: 'g', MessageDeduplicationId: 'dup-1', MessageAttributes: { requestId: { DataType: 'String', StringValue: 'req-1' } } };
    expect(await outcome(c, publish(`${topic}-replay.fifo`, [entry]))).toBe('failed: []');
    expect(await outcome(c, publish(`${topic}-replay.fifo`, [entry]))).toBe('failed: []');
    expect(sns.records.slice(before)).toEqual([expect.objectContaining({ body: 'hé & <b>', groupId: 'g', attributes: { requestId: { DataType: 'String', StringValue: 'req-1' } } })]);
    c.destroy();
  });

  it('faults: throttling and 500s reach the SDK as AWS sends them', async () => {
    const c = client();
    try {
      sns.fault = 'throttle';
      await expect(c.send(publish(topic, plain(1)))).rejects.toMatchObject({ name: 'Throttling', $fault: 'client' });
      sns.fault = 'service-throttle';
      await expect(c.send(publish(topic, plain(1)))).rejects.toMatchObject({ name: 'ThrottledException', Code: 'Throttled', $fault: 'client', $metadata: { httpStatusCode: 429 } });
      sns.fault = 'error';
      await expect(c.send(publish(topic, plain(1)))).rejects.toMatchObject({ name: 'InternalErrorException', $fault: 'server' });
    } finally {
      sns.fault = undefined;
      c.destroy();
    }
  });
});
