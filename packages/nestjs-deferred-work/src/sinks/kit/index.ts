/** The sink kit: what every sink builds on (see ARCHITECTURE.md, "Adding a sink"). */
export { redisReply } from './redis-errors';
export { abortable } from './abortable';
export { type AwsBatchSinkOptions, checkAwsBatchSinkOptions } from './aws-batch-options';
export { type AwsBatchAnswer, type AwsBatchService, AwsBatchSink, type AwsClientLike, isAwsClient } from './aws-batch-sink';
export { awsEntryMayCause, awsError, awsFailedEntry, type AwsFailedEntry, type AwsVerdict } from './aws-errors';
export { awsBatchEntry, awsEntryId, type AwsMessage, type AwsMessageAttribute, buildAwsMessage, correlationAttributes, defaultAwsBody, isFifoDestination } from './aws-messages';
export { type AppClientSpec, describeToken, findAppClient, type ModuleRefLike, resolveToken } from './app-client';
export { type Chunk, chunk, type ChunkLimits } from './chunks';
export { eachItem } from './each-item';
export { failureCode, NOT_CONNECTED, TIMED_OUT } from './failure-codes';
export { inTurns, nextTurn } from './in-turns';
export { CLOSE_METHODS, ClientHolds } from './hold-open';
export { isolate, type IsolateOptions } from './isolate';
export { itemId } from './item-id';
export { ItemMemo } from './item-memo';
export { type Corkable, type CorkableClient, corkableStream, hasCorkableSocket, inOneSocketWrite } from './one-socket-write';
export { traceparent } from './traceparent';
export { throttledReport } from './throttled-report';
export { checkOneOf, checkOptionsObject, checkSinkBasics, checkSinkKinds, checkSinkName, checkString, checkWholeNumber, describeValue, optionError, type SinkSettingsBase } from './option-checks';
export { type Part, Partitions } from './partitions';
export { redisNotConnected, redisState } from './redis-state';
export { type LimitedOutcome, runLimited } from './run-limited';
export { SinkConfigError } from './sink-config.error';
export { WriteProgress } from './write-progress';
export {
  type CatalogEntry,
  type CatalogRules,
  checkMaxLabelSets,
  METRIC_INSTRUMENT_TYPES,
  MetricCatalog,
  type MetricDeclaration,
  type MetricInstrumentType,
} from './metric-catalog';
