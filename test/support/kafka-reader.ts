import { type Consumer, Kafka, logLevel } from 'kafkajs';

/** One message as a kafkajs consumer read it: key, value and header values decoded as UTF-8. */
export interface ReadMessage {
  topic: string;
  partition: number;
  offset: bigint;
  key: string | null;
  value: string | null;
  headers: Record<string, string>;
}

/**
 * Reads topics back with a real kafkajs consumer group (one per file: joining a group takes seconds):
 * the topics are created first (a metadata request auto-creates them), read from the beginning, and
 * `caughtUp(topic)` waits until every partition is read up to the high watermark the cluster reports,
 * so `messages(topic)` then holds everything the cluster has, in offset order per partition, each as
 * many times as it was written.
 */
export class KafkaReader {
  private consumer: Consumer | undefined;
  private readonly kafka: Kafka;
  private readonly read = new Map<string, ReadMessage[]>();
  private readonly next = new Map<string, bigint>();

  constructor(
    brokers: string[],
    private readonly topics: readonly string[],
    private readonly groupId: string,
  ) {
    this.kafka = new Kafka({ clientId: `${groupId}-reader`, brokers, logLevel: logLevel.NOTHING });
    for (const topic of topics) this.read.set(topic, []);
  }

  async start(): Promise<void> {
    const admin = this.kafka.admin();
    await admin.connect();
    await admin.fetchTopicMetadata({ topics: [...this.topics] });
    await admin.disconnect();
    // a short fetch wait: the mock cluster answers a fetch only when it is due, not when data arrives
    const consumer = this.kafka.consumer({ groupId: this.groupId, maxWaitTimeInMs: 100 });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe({ topics: [...this.topics], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(message.headers ?? {})) headers[name] = String(value);
        const offset = BigInt(message.offset);
        this.read.get(topic)?.push({ topic, partition, offset, key: message.key?.toString('utf8') ?? null, value: message.value?.toString('utf8') ?? null, headers });
        this.next.set(`${topic}:${partition}`, offset + 1n);
      },
    });
  }

  /** What has been read of `topic` so far. */
  messages(topic: string): ReadMessage[] {
    return [...(this.read.get(topic) ?? [])];
  }

  /** Waits until `topic` is read up to the high watermark of each of its partitions. */
  async caughtUp(topic: string, timeoutMs = 20_000): Promise<ReadMessage[]> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const deadline = Date.now() + timeoutMs;
      const offsets = await admin.fetchTopicOffsets(topic);
      const behind = () => offsets.filter((p) => (this.next.get(`${topic}:${p.partition}`) ?? 0n) < BigInt(p.high));
      while (behind().length > 0) {
        if (Date.now() > deadline) throw new Error(`the reader has not read ${topic} up to ${JSON.stringify(offsets)} within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    } finally {
      await admin.disconnect();
    }
    return this.messages(topic);
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect();
  }
}

/**
 * Per key, the values' `seq` in the order the topic holds them (offset order within the key's one
 * partition), with copies (the same `dw-message-id` again) counted apart; and the partitions each key
 * was found on.
 */
export function perKey(messages: readonly ReadMessage[]): Map<string, { partitions: Set<number>; seqs: number[]; copies: number }> {
  const keys = new Map<string, { partitions: Set<number>; seqs: number[]; copies: number }>();
  const seen = new Set<string>();
  const ordered = [...messages].sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
  for (const m of ordered) {
    if (m.key === null) continue;
    const entry = keys.get(m.key) ?? { partitions: new Set<number>(), seqs: [], copies: 0 };
    keys.set(m.key, entry);
    entry.partitions.add(m.partition);
    const id = m.headers['dw-message-id'];
    if (id !== undefined && seen.has(id)) {
      entry.copies++;
      continue;
    }
    if (id !== undefined) seen.add(id);
    entry.seqs.push((JSON.parse(m.value ?? 'null') as { seq: number }).seq);
  }
  return keys;
}

/** How many times a list of numbers steps back (0: in order). */
export function stepsBack(seqs: readonly number[]): number {
  let back = 0;
  for (let i = 1; i < seqs.length; i++) if (seqs[i] < seqs[i - 1]) back++;
  return back;
}
