import type { DeferredKind, RunWhen, SinkKind, SinkTarget } from '../core/items/deferred-item.interface';

/** Metadata key written by `@AfterResponse()`. */
export const AFTER_RESPONSE_METADATA = 'nestjs-deferred-work:after-response';

/** Options of `@AfterResponse()`. */
export interface AfterResponseOptions {
  /** Default `when` per kind for this route, over the module's `when`. */
  when?: Partial<Record<DeferredKind, RunWhen>>;
  /** Sink (or sinks, a copy to each) per kind for this route, over the module's `routing` (an item's own `sink` still wins). Default: the module's `routing`. */
  sinks?: Partial<Record<SinkKind, SinkTarget>>;
  /** Measure handler and send time for this route (see the module's `timing`). Default: the module's `timing`. */
  timing?: boolean;
}
