export { SqlSink } from './sql.sink';
export { SQL_PROCESSOR_DEFAULTS, SQL_SINK_DEFAULTS, SQL_SINK_NAME, type SqlDialect, type SqlSinkOptions } from './sql-sink.options';
export { DEFAULT_COLUMNS as SQL_DEFAULT_COLUMNS, defaultRow as sqlDefaultRow, type DefaultColumn as SqlDefaultColumn } from './sql-rows';
