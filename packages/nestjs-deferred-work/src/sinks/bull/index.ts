export { BullSink } from './bull.sink';
export {
  BULL_SINK_DEFAULTS,
  BULL_SINK_NAME,
  bullQueueToken,
  type BullBulkJob,
  type BullQueueLike,
  type BullSinkOptions,
  type ModuleRefLike,
} from './bull-sink.options';
