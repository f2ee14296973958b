// Test harness only: wraps the AppModule with an undecorated route reporting stats and sink contents.
import { Controller, Get, Module } from '@nestjs/common';
import { DeferredWork } from 'nestjs-deferred-work';
import { AppModule, jobs, telemetry } from './app.module.js';
import { finishProbes } from './finish-probe.js';

@Controller('__consumer')
export class ConsumerCheckController {
  // Plain constructor injection: resolved through the consumer's own emitDecoratorMetadata.
  constructor(private readonly work: DeferredWork) {}

  @Get('stats')
  stats() {
    return { stats: this.work.stats(), probes: finishProbes, jobs: jobs.items, telemetry: telemetry.items };
  }
}

@Module({ imports: [AppModule], controllers: [ConsumerCheckController] })
export class ConsumerCheckModule {}
