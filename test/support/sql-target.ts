import type { SinkItem } from 'nestjs-deferred-work';
import { SqlSink } from 'nestjs-deferred-work/sql';
import type { ConformanceTarget } from './sink-conformance';
import type { TcpProxy } from './tcp-proxy';

/** What a SQL conformance file gives: its server's DDL and queries, the app's client through the proxy. */
/**
 * How long a target's pool waits for a connection, in ms: a connection the black hole holds completes
 * when it ends, and 10 s rides out a machine busy with the rest of the suite (2 s once timed out an
 * app's bootstrap there).
 */
export const SQL_CONNECT_TIMEOUT_MS = 10_000;

export interface SqlTargetSpec {
  name: string;
  /** Prefix of the tables this file creates (one per test). */
  run: string;
  /** The test table's DDL: `id` (unique), `mark`, `poison` with a CHECK that refuses `true`. */
  ddl(table: string): string;
  /** Runs a statement straight on the server (not through the proxy): the test's own reader. */
  query(text: string): Promise<Array<Record<string, unknown>>>;
  /** The app's client, through the proxy, and how to close it after the app closed. */
  client(): { client: object; close(): Promise<void> };
  proxy(): TcpProxy;
  /** The codes the proxy's cut gives the client's failures (see `ConformanceTarget.outageCodes`). */
  outageCodes: readonly string[];
}

const TOKEN = 'APP_DATABASE';

/** A conformance target for SqlSink: a custom row (`id`, `mark`, `poison`) into a table per test, the client found by its token. */
export function sqlTarget(spec: SqlTargetSpec): ConformanceTarget {
  let n = 0;
  let table = '';
  const row = (item: SinkItem) => {
    const fields = (item.kind === 'log' ? item.fields : undefined) ?? {};
    return { id: item.id, mark: String(fields.mark), poison: fields.poison === true };
  };
  return {
    name: spec.name,
    open: async () => {
      table = `${spec.run}_${++n}`;
      await spec.query(`DROP TABLE IF EXISTS ${table}`);
      await spec.query(spec.ddl(table));
      const { client, close } = spec.client();
      return {
        sink: new SqlSink({ client: TOKEN, table, columns: ['id', 'mark', 'poison'], row }),
        providers: [{ provide: TOKEN, useValue: client }],
        close: async () => {
          await close();
          await spec.query(`DROP TABLE IF EXISTS ${table}`);
        },
      };
    },
    defer: (work, mark) => work.log('info', 'conformance', { mark }),
    poison: (work, mark) => work.log('info', 'conformance', { mark, poison: true }),
    received: async () => (await spec.query(`SELECT mark FROM ${table}`)).map((r) => String(r.mark)),
    outage: { stop: () => spec.proxy().stop(), start: () => spec.proxy().start(), get running() { return spec.proxy().running; } },
    blackhole: { on: () => spec.proxy().blackhole.on(), off: () => spec.proxy().blackhole.off() },
    outageCodes: spec.outageCodes,
    // a statement cut short by the write's timeout may have committed: its rows are skipped by id when sent again
    sinkOptions: { writeTimeoutMs: 1500 },
  };
}
