/**
 * The side-effect of each scenario, in its two forms: a function that performs it and resolves when
 * it is done (awaited by `blocking` in the handler, by `article-tap` in its `tap`, by `event-emitter`
 * in its listener) and the same work handed to the library (`defer`, the `deferred` route — and the
 * `deferred-offload` route, to an offloaded twin of the sink, and the `deferred-spool` route, to a
 * spooled twin, where the scenario has them).
 */
import Bull from 'bull';
import type { AfterResponseOptions, DeferredScope, DeferredSink, LogItem, SinkItem, SinkKind } from 'nestjs-deferred-work';
import { HttpSink, MemorySink } from 'nestjs-deferred-work';
import { BullSink } from 'nestjs-deferred-work/bull';
import { benchQueueName, benchTableName, MEMORY_CAPACITY, offloadSinkName, packedSinkName, scenarioInfo, spoolSinkName } from '../bench/args.js';
import type { ScenarioId, ServerConfig } from '../bench/types.js';
import { type GraphqlParts, graphqlParts } from './graphql.js';
import { type RealisticParts, realisticParts } from './realistic.js';
import { nextRecordId } from './record-ids.js';
import { streamEntry } from './stream-effect.js';

/** The deferred handles a scenario's side-effect is written with (the `deferred-handle` and `deferred-injected` routes). */
export interface HandleSet {
  queue?: { add(name: string, data: unknown, opts?: object): Promise<unknown> };
  logger?: { log(message: string, fields?: object): void; debug(message: string, fields?: object): void };
  metrics: Record<string, { inc(labels: Record<string, string>, value?: number): void }>;
}

/** Which handles the side-effect needs, and the side-effect through them. */
export interface ScenarioHandles {
  /** The queue whose handle it adds to. */
  queue?: string;
  /** Whether it logs through a `DeferredLogger`. */
  logger?: boolean;
  /** The metrics whose handles it increments. */
  metrics?: readonly string[];
  /** The same side-effect as `defer`, through the handles (the same items). */
  defer(h: HandleSet): void;
}

export interface ScenarioEffect {
  /** Performs the side-effect and resolves when it is done; returns how many items it delivered; rejects where the real call would (Redis, HTTP). */
  perform(): Promise<number>;
  /** Defers the same side-effect through the request's scope. */
  defer(work: DeferredScope): void;
  /** Route options of the deferred variant (e.g. which sink takes its jobs). */
  afterResponse: AfterResponseOptions;
  /** The side-effect through the deferred handles, where the scenario has them (`mix`, the queue scenarios). */
  handles?: ScenarioHandles;
  /**
   * Route options of the `deferred-offload` variant: the same items, routed to the offloaded
   * twin of the scenario's sink (same queue or receiver). Only for the scenarios marked `offload`.
   */
  offloadAfterResponse?: AfterResponseOptions;
  /**
   * Route options of the `deferred-spool` variant: the same items, routed to a twin of the
   * scenario's sink (same queue, receiver or kind of sink) whose items go through the module's disk
   * spool. Only for the scenarios marked `spool`, on a server given a spool directory.
   */
  spoolAfterResponse?: AfterResponseOptions;
  /**
   * Route options of the `deferred-packed` variant: the same jobs, routed to a twin of the scenario's
   * queue sink with `packJobs` (same queue). Only for the scenarios marked `packed`.
   */
  packedAfterResponse?: AfterResponseOptions;
}

export interface ScenarioResources {
  /** Sinks to configure in `DeferredWorkModule.forRoot()`; the first (memory) takes what is not routed. */
  sinks: DeferredSink[];
  /** Of those, the `deferred-spool` routes' twins: the only sinks the module's `spool` applies to. */
  spooledSinks: string[];
  effects: Map<ScenarioId, ScenarioEffect>;
  /** The GraphQL module and resolver, when the `graphql` scenario runs. */
  graphql?: GraphqlParts;
  /** The `realistic` scenario's query and effect, when it runs. */
  realistic?: RealisticParts;
  /** Close queues and connections (after the app's shutdown: the sinks never close the queues they were given). */
  close(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const ORDER = { orderId: 4711, customer: 'c-42', total: 99.5, currency: 'EUR', lines: 3 };
const FIELDS = { orderId: 4711, route: '/orders', status: 201 };
const TAGS = { route: '/orders', status: '201' };

/** A slow tail: every `every`-th call takes `ms` instead. */
interface Tail {
  every: number;
  ms: number;
}

/**
 * A simulated remote call of `ms` milliseconds (a timer), run per request in every variant. With a
 * `tail`, a counter shared by the scenario's routes makes every `tail.every`-th call (counted when
 * the call starts, whichever route makes it) take `tail.ms`: the same rule in every variant.
 */
function simulated(ms: number, tail?: Tail): ScenarioEffect {
  let calls = 0;
  const call = () => sleep(tail && ++calls % tail.every === 0 ? tail.ms : ms);
  return {
    async perform() {
      await call();
      return 1;
    },
    defer(work) {
      work.run(call);
    },
    afterResponse: {},
  };
}

/** 1 job + 2 log records + 2 metric points to an in-memory sink. */
function mix(deferredSinkName: string): ScenarioEffect {
  const direct = new MemorySink({ name: 'blocking-memory', capacity: MEMORY_CAPACITY });
  const signal = new AbortController().signal;
  const write = (item: SinkItem) => direct.write([item], { signal, attempt: 1 });
  const base = () => ({ when: 'always' as const, createdAt: Date.now() });
  return {
    async perform() {
      await write({ kind: 'job', queue: 'orders', name: 'confirm', data: ORDER, ...base() });
      await write({ kind: 'log', level: 'info', message: 'order accepted', fields: FIELDS, ...base() });
      await write({ kind: 'log', level: 'debug', message: 'stock reserved', fields: FIELDS, ...base() });
      await write({ kind: 'metric', name: 'orders.created', value: 1, tags: TAGS, ...base() });
      await write({ kind: 'metric', name: 'orders.value', value: ORDER.total, tags: TAGS, ...base() });
      return 5;
    },
    defer(work) {
      work.job('orders', 'confirm', ORDER);
      work.log('info', 'order accepted', FIELDS);
      work.log('debug', 'stock reserved', FIELDS);
      work.metric('orders.created', 1, TAGS);
      work.metric('orders.value', ORDER.total, TAGS);
    },
    afterResponse: { sinks: { job: deferredSinkName, log: deferredSinkName, metric: deferredSinkName } },
    handles: {
      queue: 'orders',
      logger: true,
      metrics: ['orders.created', 'orders.value'],
      defer(h) {
        void h.queue!.add('confirm', ORDER);
        h.logger!.log('order accepted', FIELDS);
        h.logger!.debug('stock reserved', FIELDS);
        h.metrics['orders.created'].inc(TAGS, 1);
        h.metrics['orders.value'].inc(TAGS, ORDER.total);
      },
    },
  };
}

/**
 * A Bull job per request. `perform` awaits `queue.add` (what apps do today, in the handler or after it);
 * `deferred` hands the job to a `BullSink` on the same queue, which adds whole batches with `addBulk`.
 * The spooled twin (`bull-local`) is another `BullSink` given the same queue.
 */
async function bullJob(
  scenario: ScenarioId,
  redisUrl: string,
  config: ServerConfig,
  sinks: DeferredSink[],
  spooled: string[],
  closers: Array<() => Promise<void>>,
): Promise<ScenarioEffect> {
  const queueName = benchQueueName(scenario);
  const queue = new Bull(queueName, redisUrl);
  closers.push(() => queue.close());
  await queue.isReady();
  await queue.empty();
  const effect = queueJob(queueName, queue, new BullSink({ name: scenario, queues: { [queueName]: queue } }), sinks);
  // the twin's worker creates its own Bull queue of the same name (default prefix `bull`): same wait list
  const offload = withOffload(scenario, effect, sinks, () => BullSink.offloaded({ name: offloadSinkName(scenario), redis: redisUrl, queues: [queueName] }));
  const packed = withPacked(scenario, offload, sinks, (name) => new BullSink({ name, queues: { [queueName]: queue }, packJobs: true }));
  return withSpool(scenario, packed, config, sinks, spooled, (name) => new BullSink({ name, queues: { [queueName]: queue } }));
}

/**
 * Where the scenario can be offloaded, adds the offloaded twin of its sink (built by
 * `twin`, writing to the same destination) and routes the `deferred-offload` variant's items to it.
 */
function withOffload(scenario: ScenarioId, effect: ScenarioEffect, sinks: DeferredSink[], twin: () => DeferredSink): ScenarioEffect {
  if (!scenarioInfo(scenario).offload) return effect;
  const sink = twin();
  sinks.push(sink);
  const kinds = Object.keys(effect.afterResponse.sinks ?? {}) as SinkKind[];
  const routed: NonNullable<AfterResponseOptions['sinks']> = Object.fromEntries(kinds.map((kind) => [kind, sink.name]));
  return { ...effect, offloadAfterResponse: { ...effect.afterResponse, sinks: routed } };
}

/**
 * Where the scenario has a `deferred-packed` variant, adds a twin of its queue sink with `packJobs`
 * (built by `twin`, named `<scenario>-packed`, same queue) and routes that variant's jobs to it.
 */
function withPacked(scenario: ScenarioId, effect: ScenarioEffect, sinks: DeferredSink[], twin: (name: string) => DeferredSink): ScenarioEffect {
  if (!scenarioInfo(scenario).packed) return effect;
  const sink = twin(packedSinkName(scenario));
  sinks.push(sink);
  return { ...effect, packedAfterResponse: { ...effect.afterResponse, sinks: { job: sink.name } } };
}

/**
 * Where the scenario has a `deferred-spool` variant and the server a spool directory, adds a
 * twin of its sink (built by `twin`, named `<scenario>-spool`, same destination) and routes the
 * `deferred-spool` variant's items to it. Which sinks are spooled is decided in `bench.module.ts`.
 */
function withSpool(
  scenario: ScenarioId,
  effect: ScenarioEffect,
  config: ServerConfig,
  sinks: DeferredSink[],
  spooled: string[],
  twin: (name: string) => DeferredSink,
): ScenarioEffect {
  if (!scenarioInfo(scenario).spool || !config.spoolDir) return effect;
  const sink = twin(spoolSinkName(scenario));
  sinks.push(sink);
  spooled.push(sink.name);
  const kinds = Object.keys(effect.afterResponse.sinks ?? {}) as SinkKind[];
  const routed: NonNullable<AfterResponseOptions['sinks']> = Object.fromEntries(kinds.map((kind) => [kind, sink.name]));
  return { ...effect, spoolAfterResponse: { ...effect.afterResponse, sinks: routed } };
}

/** What the Bull and BullMQ scenarios share: `perform` awaits `queue.add`; `deferred` hands the job to `sink`. */
function queueJob(queueName: string, queue: { add(name: string, data: unknown): Promise<unknown> }, sink: DeferredSink, sinks: DeferredSink[]): ScenarioEffect {
  sinks.push(sink);
  return {
    async perform() {
      await queue.add('confirm', ORDER);
      return 1;
    },
    defer(work) {
      work.job(queueName, 'confirm', ORDER);
    },
    afterResponse: { sinks: { job: sink.name } },
    handles: {
      queue: queueName,
      defer: (h) => void h.queue!.add('confirm', ORDER),
    },
  };
}

/** `redis://host:port` as the ioredis options BullMQ takes. */
function redisConnection(redisUrl: string): { host: string; port: number } {
  const url = new URL(redisUrl);
  return { host: url.hostname, port: Number(url.port || 6379) };
}

/**
 * The BullMQ queue of a scenario (`bench-<scenario>`, emptied first, closed with the server) and a
 * `BullMqSink` named after the scenario on that same `Queue` instance (and the sink's class). BullMQ and the sink are loaded
 * only when a scenario needs them.
 */
export async function bullMqQueue(scenario: ScenarioId, redisUrl: string, closers: Array<() => Promise<void>>) {
  const [{ Queue }, { BullMqSink }] = await Promise.all([import('bullmq'), import('nestjs-deferred-work/bullmq')]);
  const queueName = benchQueueName(scenario);
  const queue = new Queue(queueName, { connection: redisConnection(redisUrl) });
  closers.push(() => queue.close());
  await queue.waitUntilReady();
  await queue.obliterate({ force: true });
  return { queueName, queue, sink: new BullMqSink({ name: scenario, queues: { [queueName]: queue } }), BullMqSink };
}

/**
 * A BullMQ job per request, the Bull scenario's twin: `perform` awaits `queue.add`; `deferred` hands
 * the job to a `BullMqSink` given the same `Queue` instance (one `addBulk` per batch). The queue is
 * obliterated first, so each server starts from an empty one. BullMQ and the sink are loaded only
 * when a BullMQ scenario runs.
 */
async function bullMqJob(
  scenario: ScenarioId,
  redisUrl: string,
  sinks: DeferredSink[],
  closers: Array<() => Promise<void>>,
): Promise<ScenarioEffect> {
  const { queueName, queue, sink, BullMqSink } = await bullMqQueue(scenario, redisUrl, closers);
  const effect = queueJob(queueName, queue, sink, sinks);
  const offload = withOffload(scenario, effect, sinks, () =>
    BullMqSink.offloaded({ name: offloadSinkName(scenario), connection: redisUrl, queues: [queueName] }),
  );
  return withPacked(scenario, offload, sinks, (name) => new BullMqSink({ name, queues: { [queueName]: queue }, packJobs: true }));
}

/** A log record per request to an HTTP receiver: `perform` POSTs it (one record); `deferred` batches. */
function httpLog(url: string, sinks: DeferredSink[], closers: Array<() => Promise<void>>): ScenarioEffect {
  const sink = new HttpSink({ name: 'http', url });
  const direct = new HttpSink({ name: 'blocking-http', url });
  sinks.push(sink);
  closers.push(async () => {
    await direct.shutdown?.();
  });
  return {
    async perform() {
      const item: LogItem = { kind: 'log', level: 'info', message: 'order accepted', fields: FIELDS, when: 'always', createdAt: Date.now() };
      const result = await direct.write([item], { signal: AbortSignal.timeout(5000), attempt: 1 });
      return result?.failed?.length ? 0 : 1;
    },
    defer(work) {
      work.log('info', 'order accepted', FIELDS);
    },
    afterResponse: { sinks: { log: sink.name } },
  };
}

/**
 * `http-log` with its offloaded twin (`HttpSink.offloaded()`, same receiver) and its spooled twin
 * (another `HttpSink`, same receiver) where the catalog says so.
 */
function httpLogWithTwins(url: string, config: ServerConfig, sinks: DeferredSink[], spooled: string[], closers: Array<() => Promise<void>>): ScenarioEffect {
  const offload = withOffload('http-log', httpLog(url, sinks, closers), sinks, () => HttpSink.offloaded({ name: offloadSinkName('http-log'), url }));
  return withSpool('http-log', offload, config, sinks, spooled, (name) => new HttpSink({ name, url }));
}

/**
 * An event per request through a `@nestjs/microservices` client: `perform` awaits
 * `lastValueFrom(client.emit(...))` (what a handler does to be sure the broker has it: the publisher
 * confirm on RabbitMQ; the write on core NATS, which cannot confirm); `deferred` hands the same event
 * to a `ClientProxySink` on the same client (NATS: one flush per batch). The RabbitMQ queue is
 * bounded (`x-max-length`), as nothing consumes it here. Loaded only when such a scenario runs.
 */
async function brokerEvent(scenario: 'rabbitmq' | 'nats', url: string, sinks: DeferredSink[], closers: Array<() => Promise<void>>): Promise<ScenarioEffect> {
  const [{ ClientProxyFactory, Transport }, { ClientProxySink, emitEvent }, { lastValueFrom }] = await Promise.all([
    import('@nestjs/microservices'),
    import('nestjs-deferred-work/microservices'),
    import('rxjs'),
  ]);
  const client =
    scenario === 'rabbitmq'
      ? ClientProxyFactory.create({
          transport: Transport.RMQ,
          options: { urls: [url], queue: `bench-${scenario}`, queueOptions: { durable: false, arguments: { 'x-max-length': 10_000 } } },
        })
      : ClientProxyFactory.create({ transport: Transport.NATS, options: { servers: [url] } });
  await client.connect();
  closers.push(() => client.close() as Promise<void>);
  const sink = new ClientProxySink({ name: scenario, client });
  sinks.push(sink);
  return {
    async perform() {
      await lastValueFrom(client.emit('order.placed', ORDER), { defaultValue: undefined });
      return 1;
    },
    defer(work) {
      emitEvent(work, scenario, 'order.placed', ORDER);
    },
    afterResponse: { sinks: { job: sink.name } },
  };
}

/** The log record of the SQL scenarios and `redis-stream`: a row (an entry) of about 300 bytes in the default columns (fields). */
const ROW_MESSAGE = 'order accepted';
const ROW_FIELDS = {
  ...FIELDS,
  customer: 'c-42',
  total: 99.5,
  currency: 'EUR',
  lines: 3,
  channel: 'web',
  payment: 'card',
  shipping: { method: 'standard', country: 'DE', zip: '10115' },
  userAgent: 'Mozilla/5.0 (X11; Linux x86_64)',
};

/**
 * A row per request into the app's own database, through the app's pool (10 connections): `perform`
 * awaits one single-row `INSERT` (what a handler does to record an event); `deferred` hands the same
 * record to a `SqlSink` on the same pool, which writes a batch per statement. The table — the sink's
 * default columns, made by the sink at bootstrap — is the server's own (named after its pid) and is
 * dropped when the server stops. `pg`, `mysql2` and the sink are loaded only when such a scenario runs.
 */
async function sqlRow(scenario: 'pg-local' | 'mysql-local', url: string, sinks: DeferredSink[], closers: Array<() => Promise<void>>): Promise<ScenarioEffect> {
  const { SqlSink } = await import('nestjs-deferred-work/sql');
  const table = benchTableName(scenario, process.pid);
  let pool: object;
  let insert: (values: unknown[]) => Promise<unknown>;
  let end: () => Promise<void>;
  if (scenario === 'pg-local') {
    const { default: pg } = await import('pg');
    const pgPool = new pg.Pool({ connectionString: url, max: 10 });
    const text = `INSERT INTO "${table}" (id, kind, name, payload, created_at) VALUES ($1, $2, $3, $4, $5)`;
    insert = (values) => pgPool.query(text, values);
    end = async () => {
      await pgPool.query(`DROP TABLE IF EXISTS "${table}"`);
      await pgPool.end();
    };
    pool = pgPool;
  } else {
    const mysql = await import('mysql2/promise');
    const myPool = mysql.createPool({ uri: url, connectionLimit: 10 });
    const text = `INSERT INTO \`${table}\` (id, kind, name, payload, created_at) VALUES (?, ?, ?, ?, ?)`;
    insert = (values) => myPool.execute(text, values as never);
    end = async () => {
      await myPool.query(`DROP TABLE IF EXISTS \`${table}\``);
      await myPool.end();
    };
    pool = myPool;
  }
  // the drop waits for the app's shutdown (its sinks drained), as the pool is the app's to close
  closers.push(async () => {
    try {
      await end();
    } catch (error) {
      console.error(`${scenario}: could not drop table ${table}: ${error instanceof Error ? error.message : String(error)}`);
    }
  });
  const sink = new SqlSink({ name: scenario, client: pool, table, createTable: true });
  sinks.push(sink);
  return {
    async perform() {
      // the record built per request, as the sink builds its rows; an ordered id, like the sink's
      await insert([nextRecordId(), 'log', 'info', JSON.stringify({ message: ROW_MESSAGE, fields: ROW_FIELDS }), new Date()]);
      return 1;
    },
    defer(work) {
      work.log('info', ROW_MESSAGE, ROW_FIELDS);
    },
    afterResponse: { sinks: { log: sink.name } },
  };
}

/**
 * `sqs-local`: a message per request to a queue of the runner's local SQS server. `blocking` awaits one
 * `SendMessage` through the app's `SQSClient`; `deferred` hands the same record to an `SqsSink` on that
 * client (`SendMessageBatch`, 10 a call). The SDK and the sink are loaded only when the scenario runs.
 */
async function sqsMessage(queueUrl: string, sinks: DeferredSink[], closers: Array<() => Promise<void>>): Promise<ScenarioEffect> {
  const [{ SendMessageCommand, SQSClient }, { SqsSink }] = await Promise.all([import('@aws-sdk/client-sqs'), import('nestjs-deferred-work/sqs')]);
  const endpoint = new URL(queueUrl).origin;
  const client = new SQSClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } });
  closers.push(async () => client.destroy());
  const sink = new SqsSink({ name: 'sqs-local', client, queueUrl });
  sinks.push(sink);
  return {
    async perform() {
      // the message built per request, with an id and a time, as the sink builds its messages
      const body = JSON.stringify({ id: nextRecordId(), message: ROW_MESSAGE, fields: ROW_FIELDS, createdAt: Date.now() });
      await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
      return 1;
    },
    defer(work) {
      work.log('info', ROW_MESSAGE, ROW_FIELDS);
    },
    afterResponse: { sinks: { log: sink.name } },
  };
}

/** Builds what the configured scenarios need. */
export async function createScenarios(config: ServerConfig): Promise<ScenarioResources> {
  // Keeps as many items as the other routes' memory sinks (`blocking-memory` and the like): a sink that
  // keeps more holds them through more young-generation collections, and the route pays for it in GC.
  const memory = new MemorySink({ name: 'memory', capacity: MEMORY_CAPACITY });
  const sinks: DeferredSink[] = [memory];
  const spooled: string[] = [];
  const effects = new Map<ScenarioId, ScenarioEffect>();
  const closers: Array<() => Promise<void>> = [];
  let realistic: RealisticParts | undefined;
  for (const id of config.scenarios) {
    switch (id) {
      case 'sim5':
        effects.set(id, simulated(5));
        break;
      case 'sim25':
        effects.set(id, simulated(25));
        break;
      case 'sim5-tail':
        effects.set(id, simulated(5, { every: 1000, ms: 1000 }));
        break;
      case 'mix':
        // the spooled twin: another memory sink, as large
        effects.set(id, withSpool(id, mix(memory.name), config, sinks, spooled, (name) => new MemorySink({ name, capacity: MEMORY_CAPACITY })));
        break;
      case 'bull-local':
      case 'bull-proxy': {
        const url = id === 'bull-local' ? config.redisUrl : config.proxiedRedisUrl;
        if (!url) throw new Error(`Scenario ${id} needs a Redis URL from the runner.`);
        effects.set(id, await bullJob(id, url, config, sinks, spooled, closers));
        break;
      }
      case 'bullmq-local':
      case 'bullmq-proxy': {
        const url = id === 'bullmq-local' ? config.redisUrl : config.proxiedRedisUrl;
        if (!url) throw new Error(`Scenario ${id} needs a Redis URL from the runner.`);
        effects.set(id, await bullMqJob(id, url, sinks, closers));
        break;
      }
      case 'http-log':
        if (!config.logReceiverUrl) throw new Error('Scenario http-log needs a receiver URL from the runner.');
        effects.set(id, httpLogWithTwins(config.logReceiverUrl, config, sinks, spooled, closers));
        break;
      case 'rabbitmq':
      case 'nats': {
        const url = id === 'rabbitmq' ? config.rabbitMqUrl : config.natsUrl;
        if (!url) throw new Error(`Scenario ${id} needs a broker URL from the runner.`);
        effects.set(id, await brokerEvent(id, url, sinks, closers));
        break;
      }
      case 'pg-local':
      case 'mysql-local': {
        const url = id === 'pg-local' ? config.pgUrl : config.mysqlUrl;
        if (!url) throw new Error(`Scenario ${id} needs a database URL from the runner.`);
        effects.set(id, await sqlRow(id, url, sinks, closers));
        break;
      }
      case 'realistic': {
        if (!config.pgUrl || !config.redisUrl) throw new Error('Scenario realistic needs a PostgreSQL URL and a Redis URL from the runner.');
        realistic = await realisticParts(config.pgUrl, config.redisUrl, memory.name, sinks, closers);
        effects.set(id, realistic.effect);
        break;
      }
      case 'redis-stream':
        if (!config.redisUrl) throw new Error('Scenario redis-stream needs a Redis URL from the runner.');
        effects.set(id, await streamEntry(config.redisUrl, { message: ROW_MESSAGE, fields: ROW_FIELDS }, sinks, closers));
        break;
      case 'sqs-local':
        if (!config.sqsQueueUrl) throw new Error('Scenario sqs-local needs a queue URL from the runner.');
        effects.set(id, await sqsMessage(config.sqsQueueUrl, sinks, closers));
        break;
      case 'graphql':
        break; // after the loop: its module needs the effect
      case 'compression':
        break; // its own controller (compression.ts), no side-effect
      default:
        throw new Error(`Unknown scenario ${String(id)}.`);
    }
  }
  let graphql: GraphqlParts | undefined;
  if (config.scenarios.includes('graphql')) graphql = await graphqlParts(simulated(5));
  return {
    sinks,
    spooledSinks: spooled,
    effects,
    graphql,
    realistic,
    async close() {
      await Promise.allSettled(closers.map((close) => close()));
    },
  };
}
