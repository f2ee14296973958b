export { abortable } from './abortable';
export { type Part, Partitions } from './partitions';
export { SinkConfigError } from './sink-config.error';
export {
  type CatalogEntry,
  type CatalogRules,
  checkMaxLabelSets,
  checkSinkName,
  METRIC_INSTRUMENT_TYPES,
  MetricCatalog,
  type MetricDeclaration,
  type MetricInstrumentType,
} from './metric-catalog';
