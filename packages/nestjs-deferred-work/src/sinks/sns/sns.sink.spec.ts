import { join } from 'node:path';
import { optionsTable } from '../../../../../test/support/docs-options-table';
import { SinkConfigError } from '../kit/sink-config.error';
import { SNS_PROCESSOR_DEFAULTS, SNS_SINK_DEFAULTS, type SnsSinkOptions } from './sns-sink.options';
import { isTopicArn, SnsSink } from './sns.sink';

const TOPIC = 'arn:aws:sns:eu-west-1:123456789012:orders';
const attachContext = { resolve: () => undefined, holdOpen: () => ({ closed: false }), providers: () => [], warn: () => undefined } as never;

describe('SnsSink options', () => {
  it('defaults: the client under SNS_CLIENT, every kind, 256 KiB', () => {
    const sink = new SnsSink({ topicArn: TOPIC });
    expect(sink.name).toBe('sns');
    expect(sink.defaults).toBe(SNS_PROCESSOR_DEFAULTS);
    expect(SNS_SINK_DEFAULTS.maxPayloadBytes).toBe(262_144);
  });

  it('topic ARNs', () => {
    expect(isTopicArn(TOPIC)).toBe(true);
    expect(isTopicArn(`${TOPIC}.fifo`)).toBe(true);
    expect(isTopicArn('arn:aws-cn:sns:cn-north-1:123456789012:t')).toBe(true);
    expect(isTopicArn('arn:aws:sqs:eu-west-1:123456789012:orders')).toBe(false);
    expect(isTopicArn('orders')).toBe(false);
  });

  it.each([
    [{}, 'option "topicArn" is required'],
    [{ topicArn: 'orders' }, 'option "topicArn" must be a topic ARN'],
    [{ topicArn: TOPIC, maxPayloadBytes: 262_145 }, 'option "maxPayloadBytes" must be a whole number from 1024 to 262144 (bytes)'],
  ])('%j is refused: %s', (options, message) => {
    expect(() => new SnsSink(options as never)).toThrow(SinkConfigError);
    expect(() => new SnsSink(options as never)).toThrow(message);
  });

  it('a token with nothing behind it fails the bootstrap, naming the token', async () => {
    await expect(new SnsSink({ topicArn: TOPIC }).attach(attachContext)).rejects.toThrow('SnsSink "sns": no client found as "SNS_CLIENT" (nothing is registered)');
  });
});

describe('docs/sinks/sns.md', () => {
  // Adding an option to SnsSinkOptions without listing it here fails the type check.
  const OPTIONS: Record<keyof SnsSinkOptions, true> = { name: true, topicArn: true, client: true, kinds: true, body: true, messageAttributes: true, messageGroupId: true, maxPayloadBytes: true, concurrency: true };

  it('lists every option with the default the code applies', () => {
    const rows = optionsTable(join(import.meta.dirname, '../../../../../docs/sinks/sns.md'));
    expect([...rows.keys()].sort()).toEqual(Object.keys(OPTIONS).sort());
    expect(rows.get('name')).toBe(`\`'${SNS_SINK_DEFAULTS.name}'\``);
    expect(rows.get('client')).toBe(`\`'${SNS_SINK_DEFAULTS.client}'\``);
    expect(rows.get('maxPayloadBytes')).toBe(`\`${SNS_SINK_DEFAULTS.maxPayloadBytes}\``);
    expect(rows.get('concurrency')).toBe(`\`${SNS_SINK_DEFAULTS.concurrency}\``);
    expect(rows.get('topicArn')).toBe('required');
  });
});
