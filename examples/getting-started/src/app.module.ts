import { Module } from '@nestjs/common';
import { DeferredWorkModule, LoggerSink } from 'nestjs-deferred-work';
import { StatsController } from './stats.controller.js';
import { UsersController } from './users.controller.js';

@Module({
  imports: [
    DeferredWorkModule.forRoot({
      sinks: [new LoggerSink({ context: 'Deferred' })], // deferred log records go to the app's logger
    }),
  ],
  controllers: [UsersController, StatsController],
})
export class AppModule {}
