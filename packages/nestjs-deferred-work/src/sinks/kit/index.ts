export { abortable } from './abortable';
export { type Part, Partitions } from './partitions';
export { SinkConfigError } from './sink-config.error';
