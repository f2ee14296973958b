// app.module.ts — Apollo (the driver of @nestjs/apollo, on Express) with a code-first schema, and
// the library's module: jobs to the "jobs" MemorySink, logs to the "telemetry" one.
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module } from '@nestjs/common';
import { GraphQLModule } from '@nestjs/graphql';
import { DeferredWorkModule, MemorySink } from 'nestjs-deferred-work';
import { OrdersResolver } from './orders.resolver.js';

export const jobs = new MemorySink({ name: 'jobs' });
export const telemetry = new MemorySink({ name: 'telemetry' });

@Module({
  imports: [
    GraphQLModule.forRoot<ApolloDriverConfig>({
      driver: ApolloDriver,
      autoSchemaFile: true,
      fieldResolverEnhancers: ['interceptors'],
    }),
    DeferredWorkModule.forRoot({ sinks: [telemetry, jobs], routing: { job: 'jobs' } }),
  ],
  providers: [OrdersResolver],
})
export class AppModule {}
