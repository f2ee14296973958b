import { Controller, Get } from '@nestjs/common';
import { DeferredWork } from 'nestjs-deferred-work';

@Controller('deferred')
export class StatsController {
  constructor(private readonly work: DeferredWork) {}

  @Get('stats')
  stats() {
    return this.work.stats(); // accepted = delivered + pending + dropped + deadLettered, per sink
  }
}
