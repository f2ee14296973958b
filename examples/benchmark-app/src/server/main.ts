/**
 * The benchmark's server process, forked by the runner (`dist/bench/run.js`) with its
 * configuration in `BENCH_SERVER_CONFIG`. Listens on 127.0.0.1 (random port) and reports the port
 * over IPC; stops on a `stop` message or when the runner goes away.
 */
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { ServerConfig } from '../bench/types.js';
import { BenchModule } from './bench.module.js';
import { installCompression } from './compression.js';
import { unhandled } from './counters.js';
import { createScenarios } from './effects.js';
import { installTracing } from './tracing.js';

/** Messages exchanged with the runner over IPC. */
export type ServerMessage = { type: 'ready'; port: number } | { type: 'error'; message: string };

/**
 * `article-tap` drops its side-effect's promise, so a failing effect (Redis or the receiver refusing)
 * is an unhandled rejection, which ends a Node 20 process. An app would die there; the benchmark
 * counts it instead (the runner reports it, and the effect as not delivered) and carries on.
 */
function countUnhandledRejections(): void {
  process.on('unhandledRejection', (reason: unknown) => {
    if (unhandled.rejections++ === 0) {
      console.error(`benchmark server: unhandled rejection (counted, not fatal here; further ones are only counted): ${String(reason)}`);
    }
  });
}

async function main(): Promise<void> {
  countUnhandledRejections();
  const raw = process.env.BENCH_SERVER_CONFIG;
  if (!raw) throw new Error('BENCH_SERVER_CONFIG is not set: this process is started by the runner (pnpm bench).');
  const config = JSON.parse(raw) as ServerConfig;
  const resources = await createScenarios(config);
  const adapter = config.adapter === 'fastify' ? new FastifyAdapter() : new ExpressAdapter();
  const app: INestApplication = await NestFactory.create(BenchModule.register(config, resources), adapter, {
    logger: ['error', 'warn'],
  });
  if (config.compression) await installCompression(app, config.adapter);
  if (process.env.BENCH_TRACING === '1') await installTracing(app, config.adapter);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    try {
      await app.close();
      await resources.close();
    } finally {
      process.exit(0);
    }
  };
  process.on('message', (message: { type?: string }) => {
    if (message?.type === 'stop') void stop();
  });
  process.on('disconnect', () => void stop());
  send({ type: 'ready', port });
}

function send(message: ServerMessage): void {
  if (process.send) process.send(message);
  else console.log(JSON.stringify(message));
}

main().catch((error: unknown) => {
  send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  console.error(error);
  process.exit(1);
});
