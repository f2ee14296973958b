import type { DeadLetterFilter, DeadLetterPage, DeadLetterQuery, DeadLetterRecord, DeadLetterStore } from '../../core/dead-letter-store.interface';
import { isEmptyDeadLetterFilter, matchesDeadLetterFilter as matches } from '../../core/dead-letter-filter';
import { checkOptionsObject, checkString, checkWholeNumber, optionError } from '../kit/option-checks';

/** What the store uses of an ioredis `Redis` (or `Cluster`): its generic `call`. */
export interface DeadLetterRedis {
  call(command: string, ...args: Array<string | number>): Promise<unknown>;
}

/** Options of {@link RedisStreamDeadLetterStore}. */
export interface RedisStreamDeadLetterStoreOptions {
  /** The app's ioredis client. */
  client: DeadLetterRedis;
  /** The stream's key. Default `'deferred-work:dead-letters'`. */
  key?: string;
  /** Records kept at most (`XADD … MAXLEN`); the oldest go first. Default `10000`. */
  maxCount?: number;
  /** Age after which records are trimmed (`XTRIM … MINID`), in ms. Default `604800000` (7 days). */
  maxAgeMs?: number;
}

const LABEL = 'RedisStreamDeadLetterStore';
const SCAN = 500;
/** Records whose `XADD`s are issued at once by `add` (a mass dead-lettering goes out in chunks, not in one task). */
const ADD_CHUNK = 100;
type Entry = [string, string[]];

/**
 * Dead letters in a Redis Stream, through the app's ioredis client: one entry per record (fields `id`
 * and `record`, its JSON), trimmed to `maxCount` on every add and to `maxAgeMs` before every read. They
 * outlive the process and are shared by every replica that names the same key. Bounded by count and age
 * (not bytes: Redis's `maxmemory` is the byte bound). Paging follows the stream's entry ids. An add
 * appends, unlike the other stores: a record whose id is already kept (dead-lettered again by a spool's
 * replay after a crash) is kept twice.
 */
export class RedisStreamDeadLetterStore implements DeadLetterStore {
  readonly description: string;
  private readonly redis: DeadLetterRedis;
  private readonly key: string;
  private readonly maxCount: number;
  private readonly maxAgeMs: number;
  /** Entry ids of the records seen by the last reads, by record id: what `remove` deletes without a scan. */
  private readonly seen = new Map<string, string>();

  constructor(options: RedisStreamDeadLetterStoreOptions) {
    checkOptionsObject(LABEL, options, "new RedisStreamDeadLetterStore({ client: redis, key: 'my-app:dead-letters' })");
    if (typeof (options.client as Partial<DeadLetterRedis> | undefined)?.call !== 'function') {
      throw optionError(LABEL, 'client', 'must be an ioredis client (with call())', "Pass the app's Redis instance.", options.client);
    }
    this.redis = options.client;
    this.key = checkString(LABEL, 'key', options.key, { fallback: 'deferred-work:dead-letters' });
    this.maxCount = checkWholeNumber(LABEL, 'maxCount', options.maxCount, { min: 1, fallback: 10_000 });
    this.maxAgeMs = checkWholeNumber(LABEL, 'maxAgeMs', options.maxAgeMs, { min: 1, fallback: 7 * 24 * 3600 * 1000, unit: 'ms' });
    this.description = `redis stream (${this.key})`;
  }

  /** Appends the records in order: their `XADD`s issued together (one round trip), `ADD_CHUNK` at a time. */
  async add(records: DeadLetterRecord[]): Promise<void> {
    for (let from = 0; from < records.length; from += ADD_CHUNK) {
      const chunk = records.slice(from, from + ADD_CHUNK);
      await Promise.all(chunk.map((record) => this.redis.call('XADD', this.key, 'MAXLEN', this.maxCount, '*', 'id', record.id, 'record', JSON.stringify(record))));
    }
  }

  async list(query: DeadLetterQuery): Promise<DeadLetterPage> {
    await this.trim();
    const limit = Math.min(Math.max(1, Math.floor(query.limit ?? 100)), 1000);
    const records: DeadLetterRecord[] = [];
    let from = query.after === undefined ? '-' : `(${query.after}`;
    for (;;) {
      const entries = (await this.redis.call('XRANGE', this.key, from, '+', 'COUNT', SCAN)) as Entry[];
      for (const [streamId, fields] of entries) {
        const record = this.read(streamId, fields);
        if (!record || !matches(record, query)) continue;
        records.push(record);
        if (records.length === limit) return { records, next: streamId };
      }
      if (entries.length < SCAN) return { records };
      from = `(${entries[entries.length - 1][0]}`;
    }
  }

  async get(id: string): Promise<DeadLetterRecord | undefined> {
    let found: DeadLetterRecord | undefined;
    await this.scan((_streamId, record) => {
      if (record.id === id) found = record;
    });
    return found;
  }

  async count(filter: DeadLetterFilter): Promise<number> {
    await this.trim();
    if (isEmptyDeadLetterFilter(filter)) {
      return Number(await this.redis.call('XLEN', this.key));
    }
    let count = 0;
    await this.scan((_streamId, record) => {
      if (matches(record, filter)) count++;
    });
    return count;
  }

  async remove(ids: readonly string[]): Promise<number> {
    const wanted = new Set<string>();
    let removed = 0;
    for (const id of ids) {
      const streamId = this.seen.get(id);
      this.seen.delete(id);
      // Seen by a read (a redrive lists first): one XDEL. Otherwise, or already gone, a scan.
      if (streamId !== undefined && Number(await this.redis.call('XDEL', this.key, streamId)) === 1) removed++;
      else wanted.add(id);
    }
    return wanted.size === 0 ? removed : removed + (await this.deleteWhere((record) => wanted.has(record.id)));
  }

  /** A record from its entry's fields, remembering its entry id. */
  private read(streamId: string, fields: string[]): DeadLetterRecord | undefined {
    const record = recordOf(fields);
    if (!record) return undefined;
    if (this.seen.size >= 2 * this.maxCount) this.seen.clear();
    this.seen.set(record.id, streamId);
    return record;
  }

  async purge(filter: DeadLetterFilter): Promise<number> {
    return this.deleteWhere((record) => matches(record, filter));
  }

  private async deleteWhere(predicate: (record: DeadLetterRecord) => boolean): Promise<number> {
    const streamIds: string[] = [];
    await this.scan((streamId, record) => {
      if (predicate(record)) streamIds.push(streamId);
    });
    let removed = 0;
    for (let i = 0; i < streamIds.length; i += SCAN) removed += Number(await this.redis.call('XDEL', this.key, ...streamIds.slice(i, i + SCAN)));
    return removed;
  }

  /** Every record, oldest first. */
  private async scan(visit: (streamId: string, record: DeadLetterRecord) => void): Promise<void> {
    await this.trim();
    let from = '-';
    for (;;) {
      const entries = (await this.redis.call('XRANGE', this.key, from, '+', 'COUNT', SCAN)) as Entry[];
      for (const [streamId, fields] of entries) {
        const record = this.read(streamId, fields);
        if (record) visit(streamId, record);
      }
      if (entries.length < SCAN) return;
      from = `(${entries[entries.length - 1][0]}`;
    }
  }

  /** Drops the records older than `maxAgeMs` (entry ids start with their time). */
  private async trim(): Promise<void> {
    await this.redis.call('XTRIM', this.key, 'MINID', Math.max(0, Date.now() - this.maxAgeMs));
  }
}

function recordOf(fields: string[]): DeadLetterRecord | undefined {
  const at = fields.indexOf('record');
  if (at < 0 || at % 2 !== 0) return undefined;
  try {
    return JSON.parse(fields[at + 1]) as DeadLetterRecord;
  } catch {
    return undefined;
  }
}
