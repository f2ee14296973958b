import { AsyncLocalStorage } from 'node:async_hooks';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, type INestApplication, Module, Param, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, HttpSink } from 'nestjs-deferred-work';
import { enableVercelWaitUntil } from 'nestjs-deferred-work/serverless';
import { HttpReceiver, type ReceiverReply } from '../support/http-receiver';

/**
 * The serverless mode on Vercel: the real `@vercel/functions` (its `waitUntil` and `getDeadline` read the
 * request context at `globalThis[Symbol.for('@vercel/request-context')]`), with that context set by the
 * test for each request as Vercel's runtime sets it: around the whole request, in an AsyncLocalStorage.
 */

interface RequestContext {
  waitUntil(promise: Promise<unknown>): void;
  deadline?: number;
  promises: Promise<unknown>[];
  mark: string;
}

const contexts = new AsyncLocalStorage<RequestContext>();
const holder = globalThis as Record<symbol, unknown>;
let receiver: HttpReceiver;
let down = false;
let app: INestApplication;
let server: Server;
let deadline: number | undefined;
const seen: RequestContext[] = [];

@Controller()
class OrdersController {
  @Post('order/:mark')
  @AfterResponse()
  order(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    work.log('info', 'order placed', { mark });
    return { mark };
  }
}

beforeAll(async () => {
  holder[Symbol.for('@vercel/request-context')] = { get: () => contexts.getStore() };
  expect(await enableVercelWaitUntil({ budgetMs: 2000 })).toBe(true);
  receiver = await HttpReceiver.start((): ReceiverReply => (down ? 'hang' : { status: 200 }));
  @Module({ imports: [DeferredWorkModule.forRoot({ sinks: [new HttpSink({ url: receiver.url('/logs') })], routing: { log: 'http' } })], controllers: [OrdersController] })
  class VercelAppModule {}
  app = await NestFactory.create(VercelAppModule, new ExpressAdapter(), { logger: ['error', 'warn'] });
  await app.init();
  const express = app.getHttpAdapter().getInstance() as (req: unknown, res: unknown) => void;
  server = createServer((req, res) => {
    const context: RequestContext = { promises: [], waitUntil: (p) => context.promises.push(p), mark: (req.url ?? '').split('/').pop() ?? '' };
    if (deadline !== undefined) context.deadline = deadline;
    seen.push(context);
    contexts.run(context, () => express(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

afterEach(() => {
  down = false;
  deadline = undefined;
  seen.length = 0;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await app?.close();
  await receiver?.close();
  delete holder[Symbol.for('@vercel/request-context')];
});

function post(mark: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, method: 'POST', path: `/order/${mark}` }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

function logged(mark: string): number {
  return receiver.delivered('/logs').filter((item) => JSON.stringify(item).includes(`"mark":"${mark}"`)).length;
}

describe('serverless mode on Vercel (waitUntil)', () => {
  it("hands each request's settlement to its waitUntil, once; it resolves when that request's items are delivered", async () => {
    const marks = Array.from({ length: 30 }, (_, i) => `v${i}`);
    expect(await Promise.all(marks.map(post))).toEqual(marks.map(() => 201));
    expect(seen.map((context) => context.promises.length)).toEqual(marks.map(() => 1));
    await Promise.all(
      seen.map(async (context) => {
        await context.promises[0];
        // Each promise settles only once its own request's item is at the receiver.
        expect(logged(context.mark)).toBe(1);
      }),
    );
    for (const mark of marks) expect(logged(mark)).toBe(1);
  });

  it("with a destination down, the request's work stops at its deadline (getDeadline) and is dead-lettered as expired", async () => {
    down = true;
    deadline = Date.now() + 1200;
    expect(await post('v-down')).toBe(201);
    const started = Date.now();
    await seen[0].promises[0];
    expect(Date.now()).toBeLessThan(deadline);
    expect(Date.now() - started).toBeGreaterThan(300);
    const letters = app.get(DeferredWork).deadLetters();
    expect(letters).toEqual([expect.objectContaining({ reason: 'expired', sink: 'http', item: expect.objectContaining({ fields: { mark: 'v-down' } }) })]);
  });
});
