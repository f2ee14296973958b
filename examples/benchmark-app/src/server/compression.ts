/**
 * The `compression` scenario (the response-time example of the observability docs): a fast handler returning a large JSON body
 * behind response compression configured with gzip level 6 and Brotli quality 11. The client's
 * `Accept-Encoding` picks the encoding; the library's `timing` splits handler time from send time.
 */
import { constants as zlib } from 'node:zlib';
import type { INestApplication } from '@nestjs/common';
import { Controller, Get, UseInterceptors } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import fastifyCompress from '@fastify/compress';
import compression from 'compression';
import { AfterResponse, DeferredWorkInterceptor } from 'nestjs-deferred-work';
import { countHandled } from './counters.js';

/** About 100 kB of JSON, built once: the handler itself is fast. */
const REPORT = {
  generatedAt: '2025-01-01T00:00:00.000Z',
  rows: Array.from({ length: 1200 }, (_, i) => ({
    id: i,
    sku: `SKU-${String(i).padStart(6, '0')}`,
    name: `Product ${i}`,
    price: Math.round(((i * 7919) % 10_000) + 99) / 100,
    qty: (i % 7) + 1,
    tags: i % 3 === 0 ? ['red', 'large'] : ['blue'],
  })),
};

export const COMPRESSION_ROUTE = 'compression/report';

@Controller('compression')
@UseInterceptors(DeferredWorkInterceptor)
@AfterResponse({ timing: true })
export class CompressionController {
  @Get('report')
  report() {
    countHandled(COMPRESSION_ROUTE);
    return REPORT;
  }
}

/** Response compression in front of every route: gzip level 6, Brotli quality 11 (the slow setting). */
export async function installCompression(app: INestApplication, adapter: 'express' | 'fastify'): Promise<void> {
  if (adapter === 'express') {
    app.use(compression({ level: 6, brotli: { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } } }));
  } else {
    await (app as NestFastifyApplication).register(fastifyCompress as never, {
      global: true,
      encodings: ['br', 'gzip'],
      threshold: 1024,
      zlibOptions: { level: 6 },
      brotliOptions: { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } },
    });
  }
}
