import type { LogItem, SinkItem } from '../../core/items/deferred-item.interface';
import { awsBatchEntry, awsEntryId, type AwsMessageRules, buildAwsMessage, checkAwsAttributes, defaultAwsBody } from './aws-messages';

const log = (extra: Partial<LogItem> = {}): LogItem => ({ kind: 'log', level: 'info', message: 'hello', when: 'always', createdAt: 1_700_000_000_000, id: 'dw-1', ...extra });
const rules = (extra: Partial<AwsMessageRules> = {}): AwsMessageRules => ({
  label: 'SqsSink "sqs"',
  destinationOption: 'queueUrl',
  destination: () => 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders',
  isDestination: (v) => v.startsWith('https://'),
  body: defaultAwsBody,
  groupId: () => 'g',
  maxPayloadBytes: 2048,
  ...extra,
});

describe('AWS messages', () => {
  it('entry ids keep letters, digits, - and _ and at most 80 characters', () => {
    expect(awsEntryId('dw-0b6c4c0e-1f2a-4d8e-9a43-2f0f5d1c9e77')).toBe('dw-0b6c4c0e-1f2a-4d8e-9a43-2f0f5d1c9e77');
    expect(awsEntryId('order:42/v1.2')).toBe('order_42_v1_2');
    expect(awsEntryId('x'.repeat(100))).toHaveLength(80);
  });

  it('the default body is the item as JSON; correlation goes to requestId and traceparent attributes', () => {
    const item = log({ fields: { a: 1 }, correlation: { requestId: 'req-1', traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 } });
    const message = buildAwsMessage(item, rules());
    expect(JSON.parse(message.body)).toEqual({ id: 'dw-1', kind: 'log', name: 'info', payload: { message: 'hello', fields: { a: 1 } }, createdAt: 1_700_000_000_000 });
    expect(message.attributes).toEqual({ requestId: { DataType: 'String', StringValue: 'req-1' }, traceparent: { DataType: 'String', StringValue: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` } });
    expect(message.groupId).toBeUndefined();
    expect(awsBatchEntry(message, 'MessageBody')).toEqual({ Id: 'dw-1', MessageBody: message.body, MessageAttributes: message.attributes });
  });

  it('a request id the services would refuse (empty, or a character outside XML) is left out; the message is still built', () => {
    for (const requestId of ['', 'a\u0000b']) {
      const message = buildAwsMessage(log({ correlation: { requestId } }), rules());
      expect(message.attributes.requestId).toBeUndefined();
      expect(JSON.parse(message.body)).toMatchObject({ id: 'dw-1', kind: 'log' });
    }
  });

  it('correlation attributes only where there is room within 10', () => {
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, { DataType: 'String', StringValue: 'v' }]));
    const message = buildAwsMessage(log({ correlation: { requestId: 'r' } }), rules({ messageAttributes: () => ten }));
    expect(Object.keys(message.attributes)).toHaveLength(10);
    expect(message.attributes.requestId).toBeUndefined();
  });

  it('a FIFO destination: the group id from the rules, the item id as the dedup id', () => {
    const message = buildAwsMessage(log(), rules({ destination: () => 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo' }));
    expect(message).toMatchObject({ groupId: 'g', deduplicationId: 'dw-1' });
    expect(awsBatchEntry(message, 'Message')).toMatchObject({ Id: 'dw-1', MessageGroupId: 'g', MessageDeduplicationId: 'dw-1' });
  });

  it.each<[string, Partial<AwsMessageRules>, SinkItem, string]>([
    ['a destination of the wrong shape', { destination: () => 'orders' }, log(), 'queueUrl(item) returned "orders", which is not a queue URL'],
    ['an empty body', { body: () => '' }, log(), 'body(item) must return a non-empty string'],
    ['a control character', { body: () => 'a\u0000b' }, log(), 'the message body has a character the service refuses (U+0000 at 1)'],
    ['over the size limit', {}, log({ message: 'x'.repeat(3000) }), 'over maxPayloadBytes 2048'],
    ['11 attributes', { messageAttributes: () => Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`a${i}`, { DataType: 'String', StringValue: 'v' }])) }, log(), 'a message has 11 attributes'],
    ['an AWS. attribute name', { messageAttributes: () => ({ 'AWS.x': { DataType: 'String', StringValue: 'v' } }) }, log(), 'message attribute name "AWS.x" is not allowed'],
    ['a FIFO group id with a space', { destination: () => 'https://q/1/a.fifo', groupId: () => 'a b' }, log(), 'messageGroupId for a FIFO destination must be 1 to 128'],
  ])('refuses %s', (_name, extra, item, message) => {
    expect(() => buildAwsMessage(item, rules(extra))).toThrow(message);
  });

  it('checks attribute types and values, and counts their bytes', () => {
    expect(checkAwsAttributes('S', { n: { DataType: 'Number', StringValue: '12' } })).toBe(1 + 6 + 2);
    expect(() => checkAwsAttributes('S', { n: { DataType: 'Text', StringValue: 'x' } })).toThrow("has DataType \"Text\"; use 'String', 'Number' or 'Binary'");
    expect(() => checkAwsAttributes('S', { n: { DataType: 'String', StringValue: '' } })).toThrow('needs a non-empty StringValue');
    expect(() => checkAwsAttributes('S', { b: { DataType: 'Binary' } })).toThrow('needs a non-empty BinaryValue');
  });
});
