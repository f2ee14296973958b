/**
 * Deferred items as rows of the app's PostgreSQL or MySQL / MariaDB (`pg`, `mysql2`, `typeorm`, `knex` as optional peers).
 *
 * @module nestjs-deferred-work/sql
 */
export { SqlSink } from './sql.sink';
export { SQL_PROCESSOR_DEFAULTS, SQL_SINK_DEFAULTS, SQL_SINK_NAME, type SqlDialect, type SqlSinkOptions } from './sql-sink.options';
export { DEFAULT_COLUMNS as SQL_DEFAULT_COLUMNS, defaultRow as sqlDefaultRow, type DefaultColumn as SqlDefaultColumn } from './sql-rows';
export { DeferredOutbox, type OutboxWork } from './outbox/deferred-outbox';
export { DeferredOutboxModule } from './outbox/deferred-outbox.module';
export { DEFERRED_OUTBOX_DEFAULTS, type DeferredOutboxOptions } from './outbox/outbox.options';
export { OutboxTransactionError } from './outbox/outbox-tx';
export type { OutboxRelayStats } from './outbox/outbox-relay';
export { SqlDeadLetterStore, type SqlDeadLetterStoreOptions } from './sql-dead-letter.store';
