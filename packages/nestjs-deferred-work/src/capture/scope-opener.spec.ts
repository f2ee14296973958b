import { Controller, Get } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { jest } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { AfterResponse } from '../nest/after-response.decorator';
import { resolveOptions } from '../nest/options/resolve-options';
import type { DeferredWorkModuleOptions } from '../nest/options/module-options.interface';
import { Dispatcher } from '../pipeline/dispatcher';
import { MemorySink } from '../sinks/memory/memory.sink';
import { DirectScope } from './direct-scope';
import { RequestCollector } from './request-collector';
import { scopeOfRequest, scopeOpenedFor } from './request-scopes';
import { RequestTracker } from './request-tracker';
import { ScopeOpener } from './scope-opener';

/** What ScopeOpener reads of Node's ServerResponse (and of Fastify's `reply.raw`). */
class FakeResponse extends EventEmitter {
  writableFinished = false;
  statusCode = 200;
  closed = false;

  /** The response was sent: `finish`, then `close`. */
  end(statusCode: number): void {
    this.statusCode = statusCode;
    this.writableFinished = true;
    this.closed = true;
    this.emit('close');
  }

  /** The client went away before the response finished. */
  abort(): void {
    this.closed = true;
    this.emit('close');
  }
}

@Controller('orders')
class Orders {
  @Get()
  plain() {}

  @Get(':id')
  @AfterResponse()
  decorated() {}

  @Get(':id/items')
  @AfterResponse()
  other() {}
}

@AfterResponse({ when: { job: 'always', log: 'failure' }, sinks: { job: 'jobs' }, timing: true })
@Controller('/shop/')
class Shop {
  @Get('carts/:id')
  @AfterResponse({ when: { log: 'success' }, sinks: { log: 'logs' } })
  overridden() {}

  @Get('plain')
  inheritsClass() {}

  @Get('untimed')
  @AfterResponse({ timing: false })
  untimed() {}
}

/** A second controller sharing a handler with Orders (as a subclass would inherit one). */
class Undecorated {}

describe('ScopeOpener', () => {
  let memory: MemorySink;
  let dispatcher: Dispatcher;
  let direct: DirectScope;
  let tracker: RequestTracker;
  let reflector: Reflector;
  let opener: ScopeOpener;
  let built: Dispatcher[] = [];

  function build(options: DeferredWorkModuleOptions = {}, inline = false): void {
    memory = new MemorySink();
    dispatcher = new Dispatcher(resolveOptions({ sinks: [memory], ...options }), undefined, inline);
    built.push(dispatcher);
    direct = new DirectScope({ when: dispatcher.options.when, sinks: {} }, dispatcher);
    tracker = new RequestTracker();
    reflector = new Reflector();
    opener = new ScopeOpener(reflector, dispatcher, direct, tracker);
  }

  beforeEach(() => build());
  afterEach(async () => {
    await Promise.all(built.map((d) => d.shutdown()));
    built = [];
  });

  describe('route settings', () => {
    it('reads the metadata once per handler (class and handler), then answers from the cache', () => {
      const get = jest.spyOn(reflector, 'get');
      for (let i = 0; i < 50; i++) opener.open({}, new FakeResponse(), Orders.prototype.plain, Orders);
      expect(get).toHaveBeenCalledTimes(2);
      for (let i = 0; i < 50; i++) opener.open({}, new FakeResponse(), Orders.prototype.decorated, Orders);
      expect(get).toHaveBeenCalledTimes(4);
      expect(opener.settings(Orders.prototype.decorated, Orders)).toBe(opener.settings(Orders.prototype.decorated, Orders));
      expect(get).toHaveBeenCalledTimes(4);
    });

    it('keeps one entry per class for a handler shared by two classes', () => {
      const get = jest.spyOn(reflector, 'get');
      expect(opener.settings(Orders.prototype.decorated, Orders)).not.toBeNull();
      expect(opener.settings(Orders.prototype.decorated, Undecorated)).not.toBeNull();
      expect(get).toHaveBeenCalledTimes(4);
      expect(opener.settings(Shop.prototype.inheritsClass, Shop)).not.toBeNull();
      expect(opener.settings(Shop.prototype.inheritsClass, Undecorated)).toBeNull(); // the class decorator does not follow the handler
    });

    it('is null for an undecorated route (cached too)', () => {
      const get = jest.spyOn(reflector, 'get');
      expect(opener.settings(Orders.prototype.plain, Orders)).toBeNull();
      expect(opener.settings(Orders.prototype.plain, Orders)).toBeNull();
      expect(get).toHaveBeenCalledTimes(2);
    });

    it("merges when and sinks kind by kind: the module's, then the class's, then the handler's", () => {
      build({ when: { metric: 'failure' }, sinks: [new MemorySink(), new MemorySink({ name: 'jobs' }), new MemorySink({ name: 'logs' })] });
      expect(opener.settings(Shop.prototype.overridden, Shop)).toEqual({
        when: { job: 'always', log: 'success', metric: 'failure', callback: 'success' },
        sinks: { job: 'jobs', log: 'logs' },
        timing: true,
        path: '/shop/carts/:id',
        handler: 'Shop.overridden()',
      });
      expect(opener.settings(Shop.prototype.inheritsClass, Shop)).toMatchObject({
        when: { job: 'always', log: 'failure', metric: 'failure', callback: 'success' },
        sinks: { job: 'jobs' },
      });
    });

    it("takes timing from the handler, else the class, else the module; the path only when timing", () => {
      expect(opener.settings(Shop.prototype.inheritsClass, Shop)).toMatchObject({ timing: true, path: '/shop/plain' });
      expect(opener.settings(Shop.prototype.untimed, Shop)).toMatchObject({ timing: false, path: undefined });
      expect(opener.settings(Orders.prototype.decorated, Orders)).toMatchObject({ timing: false, path: undefined });
      build({ timing: true });
      expect(opener.settings(Orders.prototype.decorated, Orders)).toMatchObject({ timing: true, path: '/orders/:id' });
    });
  });

  describe('open()', () => {
    it('gives an undecorated route the direct scope, hooks nothing on the response, and sends items at once', () => {
      const request: Record<symbol, unknown> = {};
      const response = new FakeResponse();
      const scope = opener.open(request, response, Orders.prototype.plain, Orders);
      expect(scope).toBe(direct);
      expect(scopeOpenedFor(request, Orders.prototype.plain)).toBe(direct);
      expect(scopeOpenedFor(request, Orders.prototype.decorated)).toBeUndefined();
      expect(response.listenerCount('close')).toBe(0);
      scope.job('mail', 'welcome', {});
      expect(dispatcher.stats().accepted).toBe(1);
      expect(tracker.requests()).toEqual({ finished: 0, aborted: 0, open: 0 }); // not a decorated request
    });

    it('gives a decorated route a collector that holds items until the response closes after finishing', async () => {
      const request: Record<symbol, unknown> = {};
      const response = new FakeResponse();
      const scope = opener.open(request, response, Orders.prototype.decorated, Orders);
      expect(scope).toBeInstanceOf(RequestCollector);
      expect(scopeOfRequest(request)).toBe(scope);
      expect(ScopeOpener.isOpen(request, Orders.prototype.decorated)).toBe(true);
      expect(response.listenerCount('close')).toBe(1);
      expect(tracker.requests()).toEqual({ finished: 0, aborted: 0, open: 1 });

      scope.job('mail', 'receipt', { id: 1 });
      scope.log('info', 'sent');
      expect(dispatcher.stats().accepted).toBe(0);
      expect((scope as RequestCollector).settledOutcome).toBeUndefined();

      response.end(201);
      expect((scope as RequestCollector).settledOutcome).toBe('success');
      expect(tracker.requests()).toEqual({ finished: 1, aborted: 0, open: 0 });
      expect(await dispatcher.flush(1000)).toBe(true);
      expect(memory.items.map((item) => item.kind)).toEqual(['job', 'log']);
    });

    it("takes an Express response (a ServerResponse) as it is, and writes nothing to the request or the response", async () => {
      const request = new IncomingMessage(new Socket());
      const response = new ServerResponse(request);
      const ownKeys = (o: object) => Reflect.ownKeys(o).length;
      const [requestKeys, responseKeys] = [ownKeys(request), ownKeys(response)];
      const scope = opener.open(request, response, Orders.prototype.decorated, Orders);
      expect(ownKeys(request)).toBe(requestKeys);
      expect(ownKeys(response)).toBe(responseKeys);
      expect(response.listenerCount('close')).toBe(1);
      scope.log('info', 'sent');
      Object.assign(response, { finished: true }); // writableFinished, as after 'finish'
      response.emit('close');
      expect((scope as RequestCollector).settledOutcome).toBe('success');
      expect(scopeOfRequest(request)).toBe(scope); // still found after the response closed (forRequest judges late items)
      expect(await dispatcher.flush(1000)).toBe(true);
      expect(memory.items).toHaveLength(1);
    });

    it('settles a finished response with an error status as a failure', async () => {
      const response = new FakeResponse();
      const scope = opener.open({}, response, Orders.prototype.decorated, Orders) as RequestCollector;
      scope.job('mail', 'receipt', {}); // when: success (default)
      scope.log('error', 'failed'); // when: always (default)
      response.end(500);
      expect(scope.settledOutcome).toBe('failure');
      expect(dispatcher.stats()).toMatchObject({ accepted: 1, skipped: 1 });
      expect(await dispatcher.flush(1000)).toBe(true);
      expect(memory.items.map((item) => item.kind)).toEqual(['log']);
    });

    it('settles a response that closed before finishing as aborted', () => {
      const response = new FakeResponse();
      const scope = opener.open({}, response, Orders.prototype.decorated, Orders) as RequestCollector;
      scope.job('mail', 'receipt', {});
      response.statusCode = 200; // a status set, but nothing finished
      response.abort();
      expect(scope.settledOutcome).toBe('aborted');
      expect(tracker.requests()).toEqual({ finished: 0, aborted: 1, open: 0 });
      expect(dispatcher.stats()).toMatchObject({ accepted: 0, skipped: 1 });
    });

    it('settles at once on a response that has already closed, without listening for close', () => {
      const finished = Object.assign(new FakeResponse(), { closed: true, writableFinished: true, statusCode: 204 });
      const finishedScope = opener.open({}, finished, Orders.prototype.decorated, Orders) as RequestCollector;
      expect(finishedScope.settledOutcome).toBe('success');
      expect(finished.listenerCount('close')).toBe(0);

      const failed = Object.assign(new FakeResponse(), { closed: true, writableFinished: true, statusCode: 404 });
      expect((opener.open({}, failed, Orders.prototype.decorated, Orders) as RequestCollector).settledOutcome).toBe('failure');

      const aborted = Object.assign(new FakeResponse(), { closed: true, writableFinished: false });
      const abortedScope = opener.open({}, aborted, Orders.prototype.decorated, Orders) as RequestCollector;
      expect(abortedScope.settledOutcome).toBe('aborted');
      expect(tracker.requests()).toEqual({ finished: 2, aborted: 1, open: 0 });

      finishedScope.job('mail', 'late', {}); // judged at once: the outcome is known
      expect(dispatcher.stats().accepted).toBe(1);
    });

    it('returns the same scope when opened twice for the same handler, and a new one for another handler', () => {
      const request: Record<symbol, unknown> = {};
      const response = new FakeResponse();
      const first = opener.open(request, response, Orders.prototype.decorated, Orders);
      expect(opener.open(request, response, Orders.prototype.decorated, Orders)).toBe(first);
      expect(response.listenerCount('close')).toBe(1);
      expect(tracker.requests().open).toBe(1);

      // A request that falls through to another handler (Express next()) gets a scope for that one.
      const second = opener.open(request, response, Orders.prototype.other, Orders);
      expect(second).toBeInstanceOf(RequestCollector);
      expect(second).not.toBe(first);
      expect(scopeOfRequest(request)).toBe(second);
      expect(response.listenerCount('close')).toBe(2);
      response.end(200);
      expect(tracker.requests()).toEqual({ finished: 2, aborted: 0, open: 0 });
    });

    it("listens on a Fastify reply's raw response", () => {
      const raw = new FakeResponse();
      const reply = { raw, statusCode: 500 };
      const scope = opener.open({}, reply, Orders.prototype.decorated, Orders) as RequestCollector;
      expect(raw.listenerCount('close')).toBe(1);
      raw.end(200);
      expect(scope.settledOutcome).toBe('success'); // the raw response's status, not the reply's
    });

    it('gives every route the direct scope when the dispatcher is inline (testing)', () => {
      build({}, true);
      const request: Record<symbol, unknown> = {};
      const response = new FakeResponse();
      expect(opener.open(request, response, Orders.prototype.decorated, Orders)).toBe(direct);
      expect(scopeOfRequest(request)).toBe(direct);
      expect(response.listenerCount('close')).toBe(0);
      expect(tracker.requests().open).toBe(0);
    });
  });
});
