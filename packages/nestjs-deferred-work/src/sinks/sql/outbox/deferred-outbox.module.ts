import { Module } from '@nestjs/common';
import { DeferredOutbox } from './deferred-outbox';
import { DeferredOutboxConfigurableModule } from './deferred-outbox.module-definition';

/**
 * The transactional outbox of `nestjs-deferred-work/sql`: `DeferredOutboxModule.forRoot({ client })`
 * (or `forRootAsync`) next to `DeferredWorkModule`, then inject {@link DeferredOutbox}. Global by
 * default (`isGlobal: false` to scope it).
 */
@Module({ providers: [DeferredOutbox], exports: [DeferredOutbox] })
export class DeferredOutboxModule extends DeferredOutboxConfigurableModule {}
