import { join } from 'node:path';
import { optionsTable } from '../../../../../test/support/docs-options-table';
import type { LogItem } from '../../core/items/deferred-item.interface';
import { SinkConfigError } from '../kit/sink-config.error';
import { SQS_PROCESSOR_DEFAULTS, SQS_SINK_DEFAULTS, type SqsSinkOptions } from './sqs-sink.options';
import { SqsSink } from './sqs.sink';

const QUEUE = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders';
const log = (i: number): LogItem => ({ kind: 'log', level: 'info', message: `m${i}`, when: 'always', createdAt: 1, id: `dw-${i}` });
const attachContext = { resolve: () => undefined, holdOpen: () => ({ closed: false }), providers: () => [], warn: () => undefined } as never;

/** A stand-in SQSClient for unit checks of what the sink sends: answers each SendMessageBatch with `answer`. */
function fakeClient(answer: (entries: Array<{ Id: string; MessageBody: string }>) => unknown) {
  const sent: Array<{ QueueUrl: string; Entries: Array<{ Id: string; MessageBody: string }> }> = [];
  const client = {
    middlewareStack: {},
    destroyed: false,
    destroy() {
      this.destroyed = true;
    },
    async send(command: { input: { QueueUrl: string; Entries: Array<{ Id: string; MessageBody: string }> } }, options?: { abortSignal?: AbortSignal }) {
      sent.push(command.input);
      const out = answer(command.input.Entries);
      if (out instanceof Error) throw out;
      if (out === 'hang') return new Promise((_, reject) => options?.abortSignal?.addEventListener('abort', () => reject(new Error('aborted'))));
      return out;
    },
  };
  return { client, sent };
}
const allOk = (entries: Array<{ Id: string }>) => ({ Successful: entries.map((e) => ({ Id: e.Id })), Failed: [] });

describe('SqsSink options', () => {
  it('defaults: the client under SQS_CLIENT, every kind, 1 MiB', () => {
    const sink = new SqsSink({ queueUrl: QUEUE });
    expect(sink.name).toBe('sqs');
    expect(sink.kinds).toEqual(['job', 'log', 'metric']);
    expect(sink.defaults).toBe(SQS_PROCESSOR_DEFAULTS);
  });

  it.each([
    [undefined, 'SqsSink: options must be an object'],
    [{}, 'option "queueUrl" is required'],
    [{ queueUrl: 'orders' }, 'option "queueUrl" must be a queue URL'],
    [{ queueUrl: QUEUE, name: '' }, 'option "name" must be a non-empty string'],
    [{ queueUrl: QUEUE, kinds: ['callback'] }, "option \"kinds\" must be a non-empty array of 'job', 'log', 'metric'"],
    [{ queueUrl: QUEUE, body: 'x' }, 'option "body" must be a function of the item'],
    [{ queueUrl: QUEUE, messageAttributes: {} }, 'option "messageAttributes" must be a function of the item'],
    [{ queueUrl: QUEUE, messageGroupId: '' }, 'option "messageGroupId" must be a non-empty string'],
    [{ queueUrl: QUEUE, maxPayloadBytes: 2_000_000 }, 'option "maxPayloadBytes" must be a whole number from 1024 to 1048576 (bytes)'],
    [{ queueUrl: QUEUE, concurrency: 0 }, 'option "concurrency" must be a whole number from 1 to 64'],
  ])('%j is refused: %s', (options, message) => {
    expect(() => new SqsSink(options as never)).toThrow(SinkConfigError);
    expect(() => new SqsSink(options as never)).toThrow(message);
  });

  it('a token with nothing behind it fails the bootstrap, naming the token and how to register it', async () => {
    await expect(new SqsSink({ queueUrl: QUEUE }).attach(attachContext)).rejects.toThrow(
      'SqsSink "sqs": no client found as "SQS_CLIENT" (nothing is registered). Register it with a provider { provide: \'SQS_CLIENT\', useFactory: () => new SQSClient({ region }) }',
    );
  });

  it('refuses writes before it is attached, for good', async () => {
    await expect(new SqsSink({ queueUrl: QUEUE }).write([log(1)], { signal: new AbortController().signal, attempt: 1 })).rejects.toMatchObject({ retryable: false });
  });

  it('builds its own client from options and destroys it at shutdown; never destroys the app client', async () => {
    const own = new SqsSink({ queueUrl: QUEUE, client: { region: 'eu-west-1' } });
    await own.attach(attachContext);
    const client = (own as unknown as { client: { destroy(): void; config: unknown } }).client;
    expect(client.constructor.name).toBe('SQSClient');
    const { client: app } = fakeClient(allOk);
    const shared = new SqsSink({ queueUrl: QUEUE, client: app });
    await shared.attach(attachContext);
    await own.shutdown();
    await shared.shutdown();
    expect(app.destroyed).toBe(false);
  });
});

describe('SqsSink writes', () => {
  const signal = () => new AbortController().signal;

  it('sends 10 entries a call, one call set per queue, ids from the item ids', async () => {
    const { client, sent } = fakeClient(allOk);
    const sink = new SqsSink({ client, queueUrl: (item) => `${QUEUE}-${(item as LogItem).message === 'm0' ? 'a' : 'b'}` });
    await sink.attach(attachContext);
    expect(await sink.write(Array.from({ length: 25 }, (_, i) => log(i)), { signal: signal(), attempt: 1 })).toBeUndefined();
    expect(sent.map((c) => [c.QueueUrl, c.Entries.length])).toEqual([
      [`${QUEUE}-a`, 1],
      [`${QUEUE}-b`, 10],
      [`${QUEUE}-b`, 10],
      [`${QUEUE}-b`, 4],
    ]);
    expect(sent[0].Entries[0].Id).toBe('dw-0');
  });

  it('a call refused as a whole because of one entry is split; only that entry fails', async () => {
    const refusal = Object.assign(new Error('bad value'), { name: 'InvalidParameterValue', $fault: 'client', $metadata: { httpStatusCode: 400 } });
    const { client, sent } = fakeClient((entries) => (entries.some((e) => e.Id === 'dw-6') ? refusal : allOk(entries)));
    const sink = new SqsSink({ client, queueUrl: QUEUE });
    await sink.attach(attachContext);
    const result = await sink.write(Array.from({ length: 10 }, (_, i) => log(i)), { signal: signal(), attempt: 1 });
    expect(result?.failed?.map((f) => [f.index, f.retryable, f.code])).toEqual([[6, false, 'InvalidParameterValue']]);
    expect(new Set(sent.flatMap((c) => c.Entries.map((e) => e.Id))).size).toBe(10);
  });

  it('a refusal about the queue fails every entry of the call without splitting it', async () => {
    const missing = Object.assign(new Error('The specified queue does not exist.'), { name: 'QueueDoesNotExist', $fault: 'client', $metadata: { httpStatusCode: 400 } });
    const { client, sent } = fakeClient(() => missing);
    const sink = new SqsSink({ client, queueUrl: QUEUE });
    await sink.attach(attachContext);
    const result = await sink.write([log(1), log(2)], { signal: signal(), attempt: 1 });
    expect(result?.failed?.map((f) => [f.index, f.retryable, f.code])).toEqual([
      [0, false, 'QueueDoesNotExist'],
      [1, false, 'QueueDoesNotExist'],
    ]);
    expect(sent).toHaveLength(1);
  });

  it('cut short by its signal: confirmed calls count, the rest fail as retryable', async () => {
    let calls = 0;
    const { client } = fakeClient((entries) => (calls++ === 0 ? allOk(entries) : 'hang'));
    const sink = new SqsSink({ client, queueUrl: QUEUE, concurrency: 1 });
    await sink.attach(attachContext);
    const controller = new AbortController();
    const pending = sink.write(Array.from({ length: 20 }, (_, i) => log(i)), { signal: controller.signal, attempt: 1 });
    setTimeout(() => controller.abort(new Error('write timed out')), 20);
    const result = await pending;
    expect(result?.failed?.map((f) => f.index)).toEqual(Array.from({ length: 10 }, (_, i) => i + 10));
    expect(result?.failed?.every((f) => f.retryable)).toBe(true);
  });
});

describe('docs/sinks/sqs.md', () => {
  // Adding an option to SqsSinkOptions without listing it here fails the type check.
  const OPTIONS: Record<keyof SqsSinkOptions, true> = { name: true, queueUrl: true, client: true, kinds: true, body: true, messageAttributes: true, messageGroupId: true, maxPayloadBytes: true, concurrency: true };

  it('lists every option with the default the code applies', () => {
    const rows = optionsTable(join(import.meta.dirname, '../../../../../docs/sinks/sqs.md'));
    expect([...rows.keys()].sort()).toEqual(Object.keys(OPTIONS).sort());
    expect(rows.get('name')).toBe(`\`'${SQS_SINK_DEFAULTS.name}'\``);
    expect(rows.get('client')).toBe(`\`'${SQS_SINK_DEFAULTS.client}'\``);
    expect(rows.get('maxPayloadBytes')).toBe(`\`${SQS_SINK_DEFAULTS.maxPayloadBytes}\``);
    expect(rows.get('concurrency')).toBe(`\`${SQS_SINK_DEFAULTS.concurrency}\``);
    expect(rows.get('queueUrl')).toBe('required');
  });
});
