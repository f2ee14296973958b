import { describeSqlSpoolCrash } from '../support/sql-spool-crash';

/**
 * SqlSink with its disk spool across SIGKILL into the machine's PostgreSQL, as real processes, on
 * Express and Fastify: rows spooled while the database was unreachable, and rows being written when
 * the process was killed, are all in the table once after the restart (test/support/sql-spool-crash.ts).
 */
describeSqlSpoolCrash('postgres');
