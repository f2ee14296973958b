// Test harness entry point: like a `nest new` main.ts, but listens on 127.0.0.1 on a free port and
// prints it for the consumer test.
import { NestFactory } from '@nestjs/core';
import { DeferredWork } from 'nestjs-deferred-work';
import { jobs, telemetry } from './app.module.js';
import { ConsumerCheckModule } from './consumer-check.module.js';
import { finishProbe } from './finish-probe.js';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(ConsumerCheckModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  app.use(finishProbe(app.get(DeferredWork), [jobs, telemetry]));
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  console.log(`CONSUMER_LISTENING ${address.port}`);
}

bootstrap().catch((error: unknown) => {
  console.error('CONSUMER_BOOT_FAILED', error);
  process.exit(1);
});
