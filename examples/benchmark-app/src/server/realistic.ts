/**
 * The `realistic` scenario's resources: what a typical Nest endpoint touches. Its handler (see
 * `realistic.controller.ts`) reads the order's products with one query through the app's `pg` pool
 * (a table of 50 products of the server's own, made at start and dropped when it stops), and its
 * side-effect is what such an endpoint sends off afterwards — a BullMQ job (to a `BullMqSink` on
 * the same `Queue`), a log record and a metric point (to an in-memory sink).
 */
import type { DeferredSink, SinkItem } from 'nestjs-deferred-work';
import { MemorySink } from 'nestjs-deferred-work';
import { benchTableName, MEMORY_CAPACITY, packedSinkName } from '../bench/args.js';
import { bullMqQueue, type ScenarioEffect } from './effects.js';

/** A product row, as the handler's query returns it. */
export interface ProductRow {
  sku: string;
  name: string;
  price_cents: number;
  stock: number;
  description: string;
}

export interface RealisticParts {
  effect: ScenarioEffect;
  /** The products of these SKUs (one `SELECT … WHERE sku = ANY($1)`). */
  products(skus: string[]): Promise<ProductRow[]>;
}

/** Products in the table: `SKU-0001` … `SKU-0050`. */
const PRODUCTS = 50;
const JOB = { orderId: 4711, customer: 'c-42', total: 99.5, currency: 'EUR', lines: 5 };
const LOG_FIELDS = { orderId: 4711, route: '/orders', status: 200 };
const TAGS = { route: '/orders', status: '200' };

/** The SKU of product `n` (1-based). */
export function sku(n: number): string {
  return `SKU-${String(n).padStart(4, '0')}`;
}

export async function realisticParts(
  pgUrl: string,
  redisUrl: string,
  memorySinkName: string,
  sinks: DeferredSink[],
  closers: Array<() => Promise<void>>,
): Promise<RealisticParts> {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: pgUrl, max: 10 });
  const table = benchTableName('realistic', process.pid);
  await pool.query(
    `CREATE TABLE "${table}" (sku text PRIMARY KEY, name text NOT NULL, price_cents integer NOT NULL, stock integer NOT NULL, description text NOT NULL)`,
  );
  await pool.query(
    `INSERT INTO "${table}" SELECT 'SKU-' || lpad(n::text, 4, '0'), 'Product ' || n, 100 * n + 99, 1000 - n,
       'A product of the benchmark catalogue, number ' || n || ', with a description about as long as shops write them.'
     FROM generate_series(1, ${PRODUCTS}) AS n`,
  );
  closers.push(async () => {
    try {
      await pool.query(`DROP TABLE IF EXISTS "${table}"`);
    } catch (error) {
      console.error(`realistic: could not drop table ${table}: ${error instanceof Error ? error.message : String(error)}`);
    }
    await pool.end();
  });
  const select = `SELECT sku, name, price_cents, stock, description FROM "${table}" WHERE sku = ANY($1::text[])`;

  const { queueName, queue, sink, BullMqSink } = await bullMqQueue('realistic', redisUrl, closers);
  // the `deferred-packed` route's twin: the same queue, a write's jobs packed into one BullMQ job
  const packed = new BullMqSink({ name: packedSinkName('realistic'), queues: { [queueName]: queue }, packJobs: true });
  sinks.push(sink, packed);
  const direct = new MemorySink({ name: 'realistic-blocking-memory', capacity: MEMORY_CAPACITY });
  const signal = new AbortController().signal;
  const write = (item: SinkItem) => direct.write([item], { signal, attempt: 1 });
  const effect: ScenarioEffect = {
    async perform() {
      await queue.add('confirm', JOB);
      await write({ kind: 'log', level: 'info', message: 'order accepted', fields: LOG_FIELDS, when: 'always', createdAt: Date.now() });
      await write({ kind: 'metric', name: 'orders.created', value: 1, tags: TAGS, when: 'always', createdAt: Date.now() });
      return 3;
    },
    defer(work) {
      work.job(queueName, 'confirm', JOB);
      work.log('info', 'order accepted', LOG_FIELDS);
      work.metric('orders.created', 1, TAGS);
    },
    afterResponse: { sinks: { job: sink.name, log: memorySinkName, metric: memorySinkName } },
    packedAfterResponse: { sinks: { job: packed.name, log: memorySinkName, metric: memorySinkName } },
  };
  return {
    effect,
    async products(skus) {
      return (await pool.query<ProductRow>(select, [skus])).rows;
    },
  };
}
