import type { CallHandler, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { jest } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { of } from 'rxjs';
import { AfterResponse } from './after-response.decorator';
import { DeferredWorkInterceptor } from './deferred-work.interceptor';
import { Dispatcher } from '../pipeline/dispatcher';
import { resolveOptions } from './options/resolve-options';
import { DirectScope } from '../capture/direct-scope';
import { ScopeOpener } from '../capture/scope-opener';
import { RequestCollector } from '../capture/request-collector';
import { scopeOfRequest } from '../capture/request-scopes';

class Controller {
  plain() {}
  @AfterResponse({ when: { job: 'always' } })
  decorated() {}
}

function httpContext(handler: () => void, request: Record<symbol, unknown>, response: object): ExecutionContext {
  return {
    getType: () => 'http',
    getHandler: () => handler,
    getClass: () => Controller,
    getArgByIndex: (index: number) => [request, response][index],
  } as unknown as ExecutionContext;
}

const next: CallHandler = { handle: () => of('body') };

describe('DeferredWorkInterceptor', () => {
  const dispatcher = new Dispatcher(resolveOptions());
  const direct = new DirectScope({ when: dispatcher.options.when, sinks: {} }, dispatcher);

  it('passes undecorated routes through, reading metadata once per handler', () => {
    const reflector = new Reflector();
    const get = jest.spyOn(reflector, 'get');
    const interceptor = new DeferredWorkInterceptor(new ScopeOpener(reflector, dispatcher, direct));
    const response = new EventEmitter();
    for (let i = 0; i < 100; i++) {
      const request: Record<symbol, unknown> = {};
      const result = interceptor.intercept(httpContext(Controller.prototype.plain, request, response), next);
      expect(result).toBeDefined();
      expect(scopeOfRequest(request)).toBe(direct);
    }
    expect(get).toHaveBeenCalledTimes(2); // class + handler, on the first request only
    expect(response.listenerCount('close')).toBe(0); // nothing hooked on undecorated responses
  });

  it('opens a collector on decorated routes and settles it on close', () => {
    const interceptor = new DeferredWorkInterceptor(new ScopeOpener(new Reflector(), dispatcher, direct));
    const request: Record<symbol, unknown> = {};
    const response = Object.assign(new EventEmitter(), { writableFinished: false, statusCode: 200 });
    interceptor.intercept(httpContext(Controller.prototype.decorated, request, response), next);
    const collector = scopeOfRequest(request) as RequestCollector;
    expect(collector).toBeInstanceOf(RequestCollector);
    expect(collector.settledOutcome).toBeUndefined();
    response.writableFinished = true;
    response.emit('close');
    expect(collector.settledOutcome).toBe('success');
  });

  it('ignores non-HTTP contexts', () => {
    const interceptor = new DeferredWorkInterceptor(new ScopeOpener(new Reflector(), dispatcher, direct));
    const stream = of('rpc');
    const getHandler = jest.fn();
    const context = { getType: () => 'rpc', getHandler } as unknown as ExecutionContext;
    expect(interceptor.intercept(context, { handle: () => stream })).toBe(stream);
    expect(getHandler).not.toHaveBeenCalled();
  });
});
