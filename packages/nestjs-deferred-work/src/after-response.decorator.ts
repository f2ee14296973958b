import { SetMetadata } from '@nestjs/common';
import type { DeferredKind, RunWhen, SinkKind } from './items/deferred-item.interface';

/** Metadata key written by {@link AfterResponse}. */
export const AFTER_RESPONSE_METADATA = 'nestjs-deferred-work:after-response';

/** Options of {@link AfterResponse}. */
export interface AfterResponseOptions {
  /** Default `when` per kind for this route, over the module's `when`. */
  when?: Partial<Record<DeferredKind, RunWhen>>;
  /** Sink per kind for this route, over the module's `routing` (an item's own `sink` still wins). */
  sinks?: Partial<Record<SinkKind, string>>;
  /** Measure handler and send time for this route (see the module's `timing`). Default: the module's `timing`. */
  timing?: boolean;
}

/**
 * Hold the work a handler defers (through `@Deferred()`) until its response has finished, then
 * flush it to the sinks. On a controller class it applies to every route; a method's options
 * override the class's, kind by kind.
 *
 * @example
 * ```ts
 * @Post('orders')
 * @AfterResponse()
 * create(@Body() dto: OrderDto, @Deferred() work: DeferredScope) {
 *   work.job('mail', 'order-confirmation', { orderId: dto.id });
 *   return { ok: true };
 * }
 * ```
 */
export const AfterResponse = (options: AfterResponseOptions = {}): ClassDecorator & MethodDecorator =>
  SetMetadata(AFTER_RESPONSE_METADATA, options);
