import type { WriteObserver } from '../pipeline/processor/write-observer';

/** What the metrics module hands each exporter's recorded metrics, and how it stops one. */
export interface SelfMetricsExporter extends Required<WriteObserver> {
  /** One measured request (`timing`), in ms; only with `routeTimings`. */
  routeTiming(method: string, route: string, handlerMs: number, sendMs: number): void;
  /** Takes the metrics out of the registry / stops observing (at application shutdown). */
  close(): void;
}

/** Which optional metrics an exporter creates. */
export interface SelfMetricsFlags {
  deliveryLag: boolean;
  routeTimings: boolean;
}

/** The outcome label of a write. */
export const writeOutcome = (failed: number) => (failed === 0 ? 'success' : 'failure');
