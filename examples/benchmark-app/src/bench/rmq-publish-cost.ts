/**
 * Node CPU per confirmed RabbitMQ publish, without HTTP: `ClientProxySink.write()` of a batch against
 * what a handler or an event listener does with the same client — `emit` each event and await its
 * confirm (`lastValueFrom(client.emit(...))`), the events of a batch awaited together — and against the
 * client's `dispatchEvent`, which `emit` calls (the sink calls it directly). One `ClientRMQ`
 * on the machine's broker (a queue of this run's own, bounded and dropped at the end), modes
 * alternating within each repeat so that they share the machine's load.
 *
 *   node dist/bench/rmq-publish-cost.js [--messages 20000] [--batch 100] [--repeats 5] [--out results/runs/<folder>] [--baseline <path>]
 *
 * `--baseline path/to/nestjs-deferred-work/dist/microservices/index.js` adds the sink of another build,
 * alternating with this one. The broker: DW_BENCH_RABBITMQ_URL, default amqp://guest:guest@127.0.0.1:5672.
 * Writes `rmq-publish-cost.json` and `.md` to `--out` (relative to examples/benchmark-app) when given.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ClientRMQ } from '@nestjs/microservices';
import type { JobItem } from 'nestjs-deferred-work';
import { lastValueFrom } from 'rxjs';
import { ClientProxySink } from 'nestjs-deferred-work/microservices';
import { sinkAttachContext } from 'nestjs-deferred-work/testing';
import { flagValue } from './args.js';

const URL = process.env.DW_BENCH_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const SINK = 'events';
const ORDER = { orderId: 'o-1', customer: 'c-42', total: 99.5, currency: 'EUR', lines: [{ sku: 'a-1', qty: 1 }, { sku: 'b-2', qty: 2 }] };

interface Sample {
  mode: string;
  messages: number;
  messagesPerSec: number;
  nodeCpuUsPerMessage: number;
}

let serial = 0;
function batchOf(size: number): JobItem[] {
  return Array.from({ length: size }, () => {
    const n = ++serial;
    return { kind: 'job', queue: SINK, name: 'order.placed', data: { ...ORDER, n }, opts: { jobId: `order-${n}` }, when: 'success', createdAt: Date.now() } satisfies JobItem;
  });
}

async function main(): Promise<void> {
  const messages = Number(flagValue('messages', '20000'));
  const batchSize = Number(flagValue('batch', '100'));
  const repeats = Number(flagValue('repeats', '5'));
  const baselinePath = flagValue('baseline', '');
  const outArg = flagValue('out', '');
  const queue = `bench-rmq-cost-${process.pid}`;
  const client = new ClientRMQ({ urls: [URL], queue, queueOptions: { durable: false, arguments: { 'x-max-length': 10_000, 'x-expires': 600_000 } } });
  await client.connect().catch((error: Error) => {
    throw new Error(`No RabbitMQ at ${URL} (${error.message}): start the machine's own (rabbitmq-server -detached) or set DW_BENCH_RABBITMQ_URL.`);
  });
  const dispatching = client as unknown as { dispatchEvent(packet: unknown): Promise<unknown>; createPacket(pattern: string, data: unknown): unknown };
  const sink = new ClientProxySink({ client, name: SINK });
  await sink.attach(sinkAttachContext());
  const Baseline = baselinePath ? ((await import(pathToFileURL(path.resolve(baselinePath)).href)) as { ClientProxySink: typeof ClientProxySink }).ClientProxySink : undefined;
  const baseline = Baseline ? new Baseline({ client, name: SINK }) : undefined;
  await baseline?.attach(sinkAttachContext());
  const signal = new AbortController().signal;
  const modes: Array<{ name: string; send(batch: JobItem[]): Promise<void> }> = [
    {
      name: `emit, ${batchSize} awaited together`,
      async send(batch) {
        await Promise.all(batch.map((item) => lastValueFrom(client.emit(item.name, item.data), { defaultValue: undefined })));
      },
    },
    {
      // what the sink calls in place of emit (a protected method of ClientProxy): emit without its rxjs pipeline
      name: `dispatchEvent, ${batchSize} awaited together`,
      async send(batch) {
        await Promise.all(batch.map((item) => dispatching.dispatchEvent(dispatching.createPacket(item.name, item.data))));
      },
    },
    { name: `sink write of ${batchSize}`, send: (batch) => written(sink, batch) },
    ...(baseline ? [{ name: `baseline build: sink write of ${batchSize}`, send: (batch: JobItem[]) => written(baseline, batch) }] : []),
  ];
  async function written(target: ClientProxySink, batch: JobItem[]): Promise<void> {
    const result = await target.write(batch, { signal, attempt: 1 });
    if (result?.failed?.length) throw new Error(`${result.failed.length} messages failed: ${String(result.failed[0].error)}`);
  }
  const samples: Sample[] = [];
  try {
    for (const mode of modes) await run(mode, 2_000); // warm-up
    for (let r = 0; r < repeats; r++) {
      for (const mode of r % 2 === 0 ? modes : [...modes].reverse()) {
        const s = await run(mode, messages);
        samples.push(s);
        console.log(`${s.mode}: ${Math.round(s.messagesPerSec)} messages/s, Node ${s.nodeCpuUsPerMessage.toFixed(1)} µs/message`);
      }
    }
  } finally {
    await client.close();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const summary = modes.map(({ name }) => {
    const mine = samples.filter((s) => s.mode === name);
    return { mode: name, messagesPerSec: median(mine.map((s) => s.messagesPerSec)), nodeCpuUsPerMessage: median(mine.map((s) => s.nodeCpuUsPerMessage)) };
  });
  const machine = `Node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), load ${os.loadavg().map((l) => l.toFixed(2)).join('/')} at the end, RabbitMQ on the same machine`;
  const md = [
    '# Confirmed RabbitMQ publishes: Node CPU per message',
    '',
    `${machine}. ${messages} messages per run, in batches of ${batchSize} (the sink hands them to the client 50 at a time), ${repeats} runs per mode, modes alternating; medians.`,
    '',
    '| mode | messages/s | Node CPU µs/message |',
    '| --- | ---: | ---: |',
    ...summary.map((s) => `| ${s.mode} | ${Math.round(s.messagesPerSec).toLocaleString('en')} | ${s.nodeCpuUsPerMessage.toFixed(1)} |`),
    '',
  ].join('\n');
  console.log(`\n${md}`);
  if (outArg) {
    const out = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..', outArg);
    await mkdir(out, { recursive: true });
    await writeFile(path.join(out, 'rmq-publish-cost.json'), JSON.stringify({ machine, messages, batchSize, repeats, summary, samples }, null, 2) + '\n');
    await writeFile(path.join(out, 'rmq-publish-cost.md'), md);
    console.log(`Wrote ${path.relative(process.cwd(), out)}/rmq-publish-cost.json and .md`);
  }

  async function run(mode: (typeof modes)[number], count: number): Promise<Sample> {
    const batches = Array.from({ length: Math.ceil(count / batchSize) }, () => batchOf(batchSize));
    const cpu = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (const batch of batches) await mode.send(batch);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const used = process.cpuUsage(cpu);
    const sent = batches.length * batchSize;
    return { mode: mode.name, messages: sent, messagesPerSec: sent / seconds, nodeCpuUsPerMessage: (used.user + used.system) / sent };
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
