import type { Logger } from '@nestjs/common';
import { errorMessage } from '../../../core/error-message';
import type { DeferredIntake, ItemOutcome } from '../../../core/intake.interface';
import type { SinkItem } from '../../../core/items/deferred-item.interface';
import { settlesBy } from '../../../core/settle';
import type { SqlConnection, SqlDriver } from '../sql-clients';
import { mysqlClaimRead, mysqlClaimWrite, outboxDelete, outboxRelease, outboxRenew, pgClaim } from './outbox-statements';

/** The relay's counters (`DeferredOutbox.stats()`). */
export interface OutboxRelayStats {
  /** Whether this instance relays (the `relay` option, and bootstrap done, shutdown not begun). */
  relaying: boolean;
  /** Rows claimed from the table. */
  claimed: number;
  /** Rows whose items were delivered by every sink they are routed to, and deleted. */
  delivered: number;
  /** Rows whose items a sink dead-lettered (see `DeferredWork.deadLetters()`), deleted. */
  deadLettered: number;
  /**
   * Rows whose items the dispatcher refused (no sink of that name, a kind the sink does not take; it
   * logs why): kept, and tried again when their lease ends.
   */
  refused: number;
  /** Rows whose items a sink's disk spool took over (delivered from there), deleted. */
  spooled: number;
  /** Rows given back unsent (a sink's queue was full), claimed again by a later round. */
  released: number;
  /** Rounds of the relay that failed (the database unreachable, say); each is tried again with a backoff. */
  failedRounds: number;
  /** The last failure's message, if the last round failed. */
  lastError?: string;
}

interface ClaimedRow {
  id: string;
  item: SinkItem;
}


const MAX_BACKOFF_MS = 5000;
/** At shutdown, the deletion of delivered rows gets at least this long, even when waiting for the items used up `shutdownTimeoutMs`. */
const FINISH_GRACE_MS = 1000;

/** At most this many batches of rows under way at once per instance. */
const MAX_IN_FLIGHT_BATCHES = 10;

/**
 * Reads committed outbox rows — claimed with `FOR UPDATE SKIP LOCKED` and a lease, so that several
 * instances relay at once without taking the same rows — hands their items to the dispatcher (the
 * usual batching, retries, dead letters and accounting of each sink), and deletes each row once its
 * item has settled at every sink it is routed to. A row whose instance stopped before that is
 * claimed again when its lease ends: at least once, with the item's id unchanged.
 */
export class OutboxRelay {
  private readonly counters: Omit<OutboxRelayStats, 'relaying'> = { claimed: 0, delivered: 0, deadLettered: 0, refused: 0, spooled: 0, released: 0, failedRounds: 0 };
  private running = false;
  /** Ids of the rows whose items this instance has dispatched and not seen settle: their claims are renewed. */
  private readonly inFlight = new Set<string>();
  private renewAt = 0;
  private readonly toRemove: string[] = [];
  private readonly toRelease: string[] = [];
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly driver: SqlDriver,
    private readonly table: string,
    private readonly options: { batchSize: number; pollIntervalMs: number; leaseMs: number },
    private readonly intake: DeferredIntake,
    private readonly logger: Logger,
  ) {}

  stats(): OutboxRelayStats {
    return { relaying: this.running, ...this.counters };
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /**
   * Stops claiming; waits (up to `waitMs`) for the round under way and the items under way to settle,
   * and deletes their rows (given at least {@link FINISH_GRACE_MS} for that). A database that does not
   * answer does not hold the shutdown past that: what is still under way keeps its claim and is taken
   * again when its lease ends (same id: at least once).
   */
  async stop(waitMs: number): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wake?.();
    const deadline = Date.now() + waitMs;
    if (!(await settlesBy(this.loop, deadline))) {
      this.logger.warn(`Outbox relay of ${this.table}: the database did not answer the round under way within ${waitMs} ms of shutdown; the rows it claimed are relayed again when their lease ends.`);
      return;
    }
    while (this.inFlight.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const finishing = this.finish().then(
      () => true,
      (error: unknown) => {
        this.logger.warn(`Outbox relay of ${this.table}: could not delete delivered rows at shutdown (${errorMessage(error)}); they will be delivered again.`);
        return true;
      },
    );
    if (!(await settlesBy(finishing, Math.max(deadline, Date.now() + FINISH_GRACE_MS)))) {
      this.logger.warn(`Outbox relay of ${this.table}: the database did not answer the deletion of delivered rows at shutdown; they will be delivered again.`);
    }
  }

  private async run(): Promise<void> {
    let backoff = 0;
    while (this.running) {
      let claimed = 0;
      try {
        claimed = await this.round();
        if (backoff > 0) this.logger.log(`Outbox relay of ${this.table}: reading rows again.`);
        backoff = 0;
        delete this.counters.lastError;
      } catch (error) {
        this.counters.failedRounds++;
        this.counters.lastError = errorMessage(error);
        // Said once per run of failures, and when it ends.
        if (backoff === 0) this.logger.warn(`Outbox relay of ${this.table}: ${this.counters.lastError}; trying again with a backoff (up to ${MAX_BACKOFF_MS} ms).`);
        backoff = Math.min(MAX_BACKOFF_MS, Math.max(this.options.pollIntervalMs, backoff * 2));
      }
      if (this.running && (claimed === 0 || backoff > 0)) await this.idle(backoff || this.options.pollIntervalMs);
    }
  }

  /** Waits `ms` (the relay keeps the process alive: it is what this instance is for), or until stopped. */
  private idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  /**
   * One round: deletes the rows whose items settled since the last round (and gives back those a
   * full queue refused), renews the claim on the rows still under way, claims new rows and
   * dispatches their items. Resolves with how many rows it claimed.
   */
  private async round(): Promise<number> {
    const room = MAX_IN_FLIGHT_BATCHES * this.options.batchSize - this.inFlight.size;
    const rows = await this.withConnection(async (connection) => {
      await this.finishOn(connection);
      if (this.inFlight.size > 0 && Date.now() >= this.renewAt) {
        await connection.query(outboxRenew(this.driver.dialect, this.table, [...this.inFlight], this.options.leaseMs));
        this.renewAt = Date.now() + this.options.leaseMs / 3;
      }
      return room > 0 ? this.claim(connection, Math.min(room, this.options.batchSize)) : [];
    });
    // Stopped while the database took its time (the shutdown stopped waiting for this round): the rows
    // stay claimed, relayed again when their lease ends, rather than handed to a dispatcher shutting down.
    if (!this.running) return 0;
    const fresh = rows.filter((row) => !this.inFlight.has(row.id));
    if (fresh.length === 0) return 0;
    this.counters.claimed += fresh.length;
    if (this.inFlight.size === 0) this.renewAt = Date.now() + this.options.leaseMs / 3;
    for (const row of fresh) this.inFlight.add(row.id);
    this.intake.deliver(
      fresh.map((row) => row.item),
      (index, outcomes) => this.settle(fresh[index].id, outcomes),
    );
    return fresh.length;
  }

  private async finish(): Promise<void> {
    if (this.toRemove.length > 0 || this.toRelease.length > 0) await this.withConnection((connection) => this.finishOn(connection));
  }

  /** Deletes settled rows, gives back refused ones. */
  private async finishOn(connection: SqlConnection): Promise<void> {
    const remove = this.toRemove.splice(0);
    const release = this.toRelease.splice(0);
    try {
      if (remove.length > 0) await connection.query(outboxDelete(this.driver.dialect, this.table, remove));
      if (release.length > 0) await connection.query(outboxRelease(this.driver.dialect, this.table, release));
    } catch (error) {
      this.toRemove.push(...remove);
      this.toRelease.push(...release);
      throw error;
    }
  }

  private async claim(connection: SqlConnection, batchSize: number): Promise<ClaimedRow[]> {
    const { leaseMs } = this.options;
    let rows: Array<Record<string, unknown>>;
    if (this.driver.dialect === 'postgres') {
      rows = await connection.query(pgClaim(this.table, batchSize, leaseMs));
    } else {
      // READ COMMITTED: the locking read takes no gap locks, so the app's own transactions inserting
      // outbox rows meanwhile neither wait for it nor deadlock with it (InnoDB's REPEATABLE READ would).
      await connection.query({ text: 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED', values: [] });
      await connection.query({ text: 'START TRANSACTION', values: [] });
      try {
        rows = await connection.query(mysqlClaimRead(this.table, batchSize));
        if (rows.length > 0) await connection.query(mysqlClaimWrite(this.table, rows.map((row) => String(row.id)), leaseMs));
        await connection.query({ text: 'COMMIT', values: [] });
      } catch (error) {
        await connection.query({ text: 'ROLLBACK', values: [] }).catch(() => undefined);
        throw error;
      }
    }
    return rows
      .sort((a, b) => Number(a.seq) - Number(b.seq))
      .map((row) => {
        const item = (typeof row.item === 'string' ? JSON.parse(row.item) : row.item) as SinkItem;
        item.id = String(row.id);
        return { id: item.id, item };
      });
  }

  /** Counts a row's outcomes: refused by a full queue somewhere → given back; refused by the dispatcher → kept; otherwise deleted. */
  private settle(id: string, outcomes: readonly ItemOutcome[]): void {
    this.inFlight.delete(id);
    if (outcomes.includes('dropped')) {
      this.counters.released++;
      this.toRelease.push(id);
      return;
    }
    if (outcomes.includes('rejected')) {
      // Refused by the dispatcher (no sink of that name, a kind the sink does not take: it warns which).
      // The row stays, claimed: tried again when its lease ends, once the configuration is fixed.
      this.counters.refused++;
      return;
    }
    this.toRemove.push(id);
    if (outcomes.includes('dead-lettered')) this.counters.deadLettered++;
    else if (outcomes.includes('kept')) this.counters.spooled++;
    else this.counters.delivered++;
  }

  private async withConnection<T>(fn: (connection: SqlConnection) => Promise<T>): Promise<T> {
    const connection = await this.driver.acquire();
    try {
      const value = await fn(connection);
      connection.release();
      return value;
    } catch (error) {
      connection.destroy(error);
      throw error;
    }
  }
}
