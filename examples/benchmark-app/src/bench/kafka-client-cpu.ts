/**
 * Client CPU per event for Kafka: `ClientProxySink` over Nest's `ClientKafka` (one `producer.send` per
 * topic per batch) against a plain kafkajs producer sending the same batch with one `sendBatch` across
 * topics (`acks: -1`, key = the item's id) — what a native Kafka sink would do. Both in this process,
 * against librdkafka's mock cluster (3 brokers, `kcat`), one write in flight as the dispatcher does,
 * alternating the two variants round by round so that a busy machine weighs on both alike.
 *
 *   node dist/bench/kafka-client-cpu.js [--rounds 6] [--batches 40] [--batch 256] [--topics 1,4] [--out dir]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { ClientKafka } from '@nestjs/microservices';
import { Kafka, logLevel, Partitioners, type Producer } from 'kafkajs';
import { ClientProxySink } from 'nestjs-deferred-work/microservices';
import { sinkAttachContext } from 'nestjs-deferred-work/testing';
import { startKafkaMock } from './infra.js';

type JobItem = Parameters<ClientProxySink['write']>[0][number];

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const ROUNDS = Number(args.get('rounds') ?? 6);
const BATCHES = Number(args.get('batches') ?? 40);
const BATCH = Number(args.get('batch') ?? 256);
const TOPIC_COUNTS = (args.get('topics') ?? '1,4').split(',').map(Number);
const OUT = args.get('out');
const SINK = 'events';

let serial = 0;
function batchOf(topics: string[]): JobItem[] {
  return Array.from({ length: BATCH }, (_, i) => {
    const n = ++serial;
    return { kind: 'job', queue: SINK, name: topics[i % topics.length], data: { orderId: n, total: 42.5, at: '2026-11-26T00:00:00.000Z' }, opts: { jobId: `order-${n}` }, when: 'success', createdAt: Date.now() } as JobItem;
  });
}

/** The native path: one sendBatch per batch, across topics, acks = -1, key and id header from the item. */
async function sendNative(producer: Producer, batch: JobItem[]): Promise<void> {
  const byTopic = new Map<string, Array<{ key: string; value: string; headers: Record<string, string> }>>();
  for (const item of batch) {
    if (item.kind !== 'job') continue;
    const id = String(item.opts?.jobId);
    const list = byTopic.get(item.name) ?? [];
    list.push({ key: id, value: JSON.stringify(item.data), headers: { 'dw-message-id': id } });
    byTopic.set(item.name, list);
  }
  await producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
}

interface Sample {
  variant: 'clientproxy' | 'native';
  topics: number;
  round: number;
  events: number;
  cpuUsPerEvent: number;
  wallMs: number;
}

async function measure(send: (batch: JobItem[]) => Promise<unknown>, topics: string[]): Promise<{ cpuUs: number; wallMs: number }> {
  const batches = Array.from({ length: BATCHES }, () => batchOf(topics));
  const cpu = process.cpuUsage();
  const began = performance.now();
  for (const batch of batches) {
    const result = await send(batch);
    if (result) throw new Error(`a write failed: ${JSON.stringify(result)}`);
  }
  const used = process.cpuUsage(cpu);
  return { cpuUs: used.user + used.system, wallMs: performance.now() - began };
}

async function main(): Promise<void> {
  const cluster = await startKafkaMock(3);
  const client = new ClientKafka({
    client: { clientId: 'bench-clientproxy', brokers: cluster.brokers, logLevel: logLevel.NOTHING },
    producer: { createPartitioner: Partitioners.DefaultPartitioner },
    producerOnlyMode: true,
  });
  const sink = new ClientProxySink({ client, name: SINK });
  await sink.attach(sinkAttachContext());
  await client.connect();
  const producer = new Kafka({ clientId: 'bench-native', brokers: cluster.brokers, logLevel: logLevel.NOTHING }).producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const variants = {
    clientproxy: (batch: JobItem[]) => sink.write(batch, { signal: new AbortController().signal, attempt: 1 }),
    native: (batch: JobItem[]) => sendNative(producer, batch),
  };
  const samples: Sample[] = [];
  try {
    for (const count of TOPIC_COUNTS) {
      const topics = Array.from({ length: count }, (_, i) => `bench-orders-${count}-${i}`);
      for (const send of Object.values(variants)) await measure(send, topics); // warm-up: topics created, JIT warm
      for (let round = 1; round <= ROUNDS; round++) {
        const order = (round % 2 === 1 ? ['clientproxy', 'native'] : ['native', 'clientproxy']) as Array<keyof typeof variants>;
        for (const variant of order) {
          const { cpuUs, wallMs } = await measure(variants[variant], topics);
          samples.push({ variant, topics: count, round, events: BATCHES * BATCH, cpuUsPerEvent: cpuUs / (BATCHES * BATCH), wallMs });
        }
      }
    }
  } finally {
    await producer.disconnect();
    await client.close();
    cluster.stop();
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const lines = [`| topics per batch | ClientProxySink: CPU µs/event (median) | kafkajs sendBatch: CPU µs/event (median) | ClientProxySink ÷ sendBatch |`, '| ---: | ---: | ---: | ---: |'];
  for (const count of TOPIC_COUNTS) {
    const of = (v: Sample['variant']) => median(samples.filter((s) => s.topics === count && s.variant === v).map((s) => s.cpuUsPerEvent));
    lines.push(`| ${count} | ${of('clientproxy').toFixed(1)} | ${of('native').toFixed(1)} | ${(of('clientproxy') / of('native')).toFixed(2)}× |`);
  }
  const table = lines.join('\n');
  const conditions = `${ROUNDS} rounds × ${BATCHES} batches × ${BATCH} events per variant, alternating; librdkafka's mock cluster (3 brokers, kcat); Node ${process.version}, ${cpus().length} CPUs, load average at the end ${loadavg()[0].toFixed(1)}`;
  console.log(`${conditions}\n\n${table}`);
  if (OUT) {
    mkdirSync(OUT, { recursive: true });
    writeFileSync(join(OUT, 'kafka-client-cpu.json'), JSON.stringify({ rounds: ROUNDS, batches: BATCHES, batch: BATCH, node: process.version, loadavg: loadavg(), samples }, null, 2));
    writeFileSync(join(OUT, 'kafka-client-cpu.md'), `# Kafka client CPU per event\n\n${conditions}\n\n${table}\n`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
