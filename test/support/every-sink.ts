import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { BullModule } from '@nestjs/bullmq';
import { Controller, Get, type ModuleMetadata, Param } from '@nestjs/common';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createPool as createMysqlPool, type Pool as MysqlPool } from 'mysql2/promise';
import { AfterResponse, Deferred, type DeferredScope, DeferredWorkModule, type DeferredWorkModuleOptions, HttpSink } from 'nestjs-deferred-work';
import { BullMqSink } from 'nestjs-deferred-work/bullmq';
import { RedisStreamSink } from 'nestjs-deferred-work/redis-streams';
import { SqlSink } from 'nestjs-deferred-work/sql';
import { SqsSink } from 'nestjs-deferred-work/sqs';
import pg from 'pg';
import { HttpReceiver } from './http-receiver';
import { receiveAll, startLocalSqs } from './local-sqs';
import { MYSQL_URL, requireMariaDb } from './mariadb';
import { PG_URL, requirePostgres } from './postgres';
import { RedisServer } from './redis-server';
import { TcpProxy } from './tcp-proxy';

/**
 * One app deferring to every sink that talks to a server — SqlSink on PostgreSQL and on MariaDB, the
 * Redis Streams sink, the BullMQ sink, the HTTP sink and the SQS sink — each destination behind a
 * `TcpProxy`, so that a test can take them all down at once and bring them back on the same ports.
 * The app's clients are configured as the docs show, and the sinks with their defaults. Each request
 * defers one job (BullMQ) and one log record fanned out to the other five; every item carries the
 * request's mark, read back from each destination.
 */
export const EVERY_SINK = ['pg', 'maria', 'stream', 'bullmq', 'http', 'sqs'] as const;
export type EverySinkName = (typeof EVERY_SINK)[number];
const LOG_SINKS = ['pg', 'maria', 'stream', 'http', 'sqs'];
const QUEUE = 'outage';

@Controller()
class EverySinkController {
  @Get('order/:mark')
  @AfterResponse()
  order(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    work.job(QUEUE, 'confirm', { mark });
    work.log('info', 'order', { mark });
    return { mark };
  }
}

export class EverySinkDestinations {
  private readonly redis = new RedisServer();
  private readonly tag = `dw_every_${process.pid}_${Date.now().toString(36)}`;
  private runs = 0;
  receiver!: HttpReceiver;
  private sqs!: { url: string; close(): Promise<void> };
  private sqsAdmin!: SQSClient;
  private admin!: { pg: pg.Pool; maria: MysqlPool; redis: Redis };
  readonly proxies = {} as Record<'pg' | 'maria' | 'redis' | 'http' | 'sqs', TcpProxy>;

  async start(): Promise<void> {
    await Promise.all([requirePostgres(), requireMariaDb(), this.redis.start()]);
    this.receiver = await HttpReceiver.start();
    this.sqs = await startLocalSqs();
    const pgUrl = new URL(PG_URL);
    const myUrl = new URL(MYSQL_URL);
    const targets = {
      pg: [Number(pgUrl.port || 5432), pgUrl.hostname],
      maria: [Number(myUrl.port || 3306), myUrl.hostname],
      redis: [this.redis.port, this.redis.host],
      http: [this.receiver.port, '127.0.0.1'],
      sqs: [Number(new URL(this.sqs.url).port), '127.0.0.1'],
    } as const;
    for (const [name, [port, host]] of Object.entries(targets)) {
      const proxy = new TcpProxy(port, host);
      await proxy.listen();
      this.proxies[name as keyof typeof targets] = proxy;
    }
    this.sqsAdmin = new SQSClient({ endpoint: this.sqs.url, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
    this.admin = { pg: new pg.Pool({ connectionString: PG_URL, max: 2 }), maria: createMysqlPool({ uri: MYSQL_URL, connectionLimit: 2 }), redis: new Redis({ host: this.redis.host, port: this.redis.port }) };
    this.admin.pg.on('error', () => undefined);
  }

  /** Takes every destination down (connections reset, new ones refused), or brings them all back. */
  async down(): Promise<void> {
    await Promise.all(Object.values(this.proxies).map((p) => p.stop()));
  }

  async up(): Promise<void> {
    await Promise.all(Object.values(this.proxies).map((p) => p.start()));
  }

  /** A fresh set of tables, stream, queue and SQS queue, and the app's module metadata for them. */
  async open(extra: Partial<DeferredWorkModuleOptions> = {}): Promise<OpenedEverySink> {
    const run = `${this.tag}_${++this.runs}`;
    const sqsQueue = (await this.sqsAdmin.send(new CreateQueueCommand({ QueueName: run }))).QueueUrl!;
    const queueUrl = sqsQueue.replace(/^http:\/\/[^/]+/, `http://127.0.0.1:${this.proxies.sqs.port}`);
    const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
    // The app's clients, as the docs show them: each pool with its 'error' listener.
    const pgPool = new pg.Pool({ host: '127.0.0.1', port: this.proxies.pg.port, user: new URL(PG_URL).username || undefined, database: 'test', max: 5 });
    pgPool.on('error', () => undefined);
    const mariaPool = createMysqlPool({ host: '127.0.0.1', port: this.proxies.maria.port, user: 'root', database: 'test', connectionLimit: 5 });
    const streamClient = new Redis({ host: '127.0.0.1', port: this.proxies.redis.port });
    streamClient.on('error', () => undefined);
    const sqsClient = new SQSClient({ endpoint: `http://127.0.0.1:${this.proxies.sqs.port}`, region: 'us-east-1', credentials });
    const connection = { host: '127.0.0.1', port: this.proxies.redis.port };
    const metadata: ModuleMetadata = {
      imports: [
        BullModule.forRoot({ connection, prefix: run }),
        BullModule.registerQueue({ name: QUEUE }),
        DeferredWorkModule.forRoot({
          sinks: [
            new BullMqSink(),
            new SqlSink({ name: 'pg', client: 'PG', table: `${run}_pg`, createTable: true }),
            new SqlSink({ name: 'maria', client: 'MARIA', table: `${run}_maria`, createTable: true }),
            new RedisStreamSink({ name: 'stream', client: 'STREAM', stream: run }),
            new HttpSink({ name: 'http', url: `http://127.0.0.1:${this.proxies.http.port}/${run}` }),
            new SqsSink({ name: 'sqs', queueUrl }),
          ],
          routing: { job: 'bullmq', log: LOG_SINKS },
          ...extra,
        }),
      ],
      controllers: [EverySinkController],
      providers: [
        { provide: 'PG', useValue: pgPool },
        { provide: 'MARIA', useValue: mariaPool },
        { provide: 'STREAM', useValue: streamClient },
        { provide: 'SQS_CLIENT', useValue: sqsClient },
      ],
    };
    const read = async (): Promise<Record<EverySinkName, string[]>> => ({
      pg: (await this.admin.pg.query(`SELECT payload->'fields'->>'mark' AS mark FROM ${run}_pg`)).rows.map((r: { mark: string }) => r.mark),
      maria: ((await this.admin.maria.query(`SELECT JSON_UNQUOTE(JSON_EXTRACT(payload, '$.fields.mark')) AS mark FROM ${run}_maria`))[0] as Array<{ mark: string }>).map((r) => r.mark),
      stream: (await this.admin.redis.xrange(run, '-', '+')).map(([, flat]) => (JSON.parse(flat[flat.indexOf('payload') + 1]!) as { fields: { mark: string } }).fields.mark),
      bullmq: await this.jobMarks(run),
      http: this.receiver.delivered(`/${run}`).map((item) => (item as { fields: { mark: string } }).fields.mark),
      sqs: await this.sqsMarks(sqsQueue),
    });
    const close = async () => {
      await Promise.allSettled([pgPool.end(), mariaPool.end(), Promise.resolve(streamClient.disconnect())]);
      sqsClient.destroy();
      await Promise.allSettled([this.admin.pg.query(`DROP TABLE IF EXISTS ${run}_pg`), this.admin.maria.query(`DROP TABLE IF EXISTS ${run}_maria`)]);
    };
    return { metadata, read, close };
  }

  private async jobMarks(prefix: string): Promise<string[]> {
    const queue = new Queue(QUEUE, { connection: { host: this.redis.host, port: this.redis.port }, prefix });
    try {
      const jobs = await queue.getJobs(['waiting', 'delayed', 'prioritized', 'active', 'completed', 'failed']);
      return jobs.map((job) => (job.data as { mark: string }).mark);
    } finally {
      await queue.close();
    }
  }

  /** Every message of the SQS queue, received (and deleted) through the server's own port. */
  private async sqsMarks(queueUrl: string): Promise<string[]> {
    return (await receiveAll(this.sqsAdmin, queueUrl)).map((m) => (JSON.parse(m.Body!) as { payload: { fields: { mark: string } } }).payload.fields.mark);
  }

  async dispose(): Promise<void> {
    await Promise.allSettled(Object.values(this.proxies).map((p) => p.close()));
    await Promise.allSettled([this.admin?.pg.end(), this.admin?.maria.end(), Promise.resolve(this.admin?.redis.disconnect())]);
    this.sqsAdmin?.destroy();
    await Promise.allSettled([this.receiver?.close(), this.sqs?.close(), this.redis.dispose()]);
  }
}

export interface OpenedEverySink {
  metadata: ModuleMetadata;
  /** The marks each destination holds now (one per entry: duplicates show). */
  read(): Promise<Record<EverySinkName, string[]>>;
  close(): Promise<void>;
}

/** Which of `sent` are missing from `received`, and how many arrived more than once. */
export function tally(received: string[], sent: readonly string[]): { missing: string[]; duplicates: number } {
  const counts = new Map<string, number>();
  for (const mark of received) counts.set(mark, (counts.get(mark) ?? 0) + 1);
  let duplicates = 0;
  for (const count of counts.values()) if (count > 1) duplicates += count - 1;
  return { missing: sent.filter((m) => !counts.has(m)), duplicates };
}
