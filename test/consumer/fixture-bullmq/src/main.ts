// Test harness entry point: like a `nest new` main.ts, but listens on 127.0.0.1 on a free port and
// prints it for the consumer test. Redis is the consumer test's private redis-server.
import { NestFactory } from '@nestjs/core';
import { DeferredWork } from 'nestjs-deferred-work';
import { ConsumerCheckModule } from './consumer-check.module.js';
import { finishProbe } from './finish-probe.js';
import { ProcessedJobs } from './processed-jobs.js';

async function bootstrap(): Promise<void> {
  for (const name of ['CONSUMER_REDIS_PORT', 'CONSUMER_BULLMQ_PREFIX']) {
    if (!process.env[name]) throw new Error(`${name} is not set (the consumer test sets it)`);
  }
  const app = await NestFactory.create(ConsumerCheckModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  app.use(finishProbe(app.get(DeferredWork), app.get(ProcessedJobs)));
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  console.log(`CONSUMER_LISTENING ${address.port}`);
}

bootstrap().catch((error: unknown) => {
  console.error('CONSUMER_BOOT_FAILED', error);
  process.exit(1);
});
