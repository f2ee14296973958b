import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

async function bootstrap() {
  const app = await NestFactory.create(AppModule);
  app.enableShutdownHooks(); // on SIGTERM, deferred work still pending is delivered before the exit
  await app.listen(process.env.PORT ?? 3000);
}
void bootstrap();
