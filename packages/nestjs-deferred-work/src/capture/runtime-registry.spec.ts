import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { findOpener, openerOn, registerOpener, unregisterOpener } from './runtime-registry';
import type { ScopeOpener } from './scope-opener';

/** The registry only keeps and compares openers: a tagged object stands in for one. */
const fakeOpener = (name: string) => ({ name }) as unknown as ScopeOpener;

describe('runtime registry', () => {
  /** Every registration of a test, undone after it: the registry is module state. */
  let registered: Array<[ScopeOpener, object | undefined]> = [];
  function register(opener: ScopeOpener, frameworkInstance?: object): void {
    registerOpener(opener, frameworkInstance);
    registered.push([opener, frameworkInstance]);
  }
  afterEach(() => {
    for (const [opener, instance] of registered) unregisterOpener(opener, instance);
    registered = [];
  });

  describe('openerOn()', () => {
    it('finds the opener registered on a framework instance, and none on another', () => {
      const app = {};
      const opener = fakeOpener('a');
      register(opener, app);
      expect(openerOn(app)).toBe(opener);
      expect(openerOn({})).toBeUndefined();
      expect(openerOn(undefined)).toBeUndefined();
    });

    it('keeps one opener per framework instance', () => {
      const [appA, appB] = [{}, {}];
      const [a, b] = [fakeOpener('a'), fakeOpener('b')];
      register(a, appA);
      register(b, appB);
      expect(openerOn(appA)).toBe(a);
      expect(openerOn(appB)).toBe(b);
    });

    it('ignores an opener left on an instance once it is no longer live', () => {
      const app = {};
      const opener = fakeOpener('a');
      register(opener, app);
      unregisterOpener(opener, undefined); // shut down without its instance: the property stays behind
      expect(openerOn(app)).toBeUndefined();
      expect(findOpener({ app })).toBeUndefined();
    });
  });

  describe('findOpener()', () => {
    it("finds an Express request's application through req.app", () => {
      const [expressA, expressB] = [{}, {}];
      const [a, b] = [fakeOpener('a'), fakeOpener('b')];
      register(a, expressA);
      register(b, expressB);
      expect(findOpener({ app: expressA })).toBe(a);
      expect(findOpener({ app: expressB })).toBe(b);
    });

    it('finds the application of an Express request on its prototype, as Express sets it per request', () => {
      const [expressA, expressB] = [{}, {}];
      const [a, b] = [fakeOpener('a'), fakeOpener('b')];
      register(a, expressA);
      register(b, expressB);
      const expressRequest = (app: object) => Object.setPrototypeOf(new IncomingMessage(new Socket()), Object.create(IncomingMessage.prototype, { app: { value: app } })) as IncomingMessage;
      expect(findOpener(expressRequest(expressA))).toBe(a);
      expect(findOpener(expressRequest(expressB))).toBe(b);
      // an IncomingMessage without Express: no app on the prototype, the usual lookup
      expect(findOpener(Object.assign(new IncomingMessage(new Socket()), { app: expressB }))).toBe(b);
    });

    it("finds a Fastify request's application through request.server", () => {
      const [fastifyA, fastifyB] = [{}, {}];
      const [a, b] = [fakeOpener('a'), fakeOpener('b')];
      register(a, fastifyA);
      register(b, fastifyB);
      expect(findOpener({ server: fastifyA })).toBe(a);
      expect(findOpener({ server: fastifyB })).toBe(b);
    });

    it('does not fall back when the request names an instance without a live opener', () => {
      register(fakeOpener('only'), {});
      expect(findOpener({ app: {} })).toBeUndefined();
      expect(findOpener({ server: {} })).toBeUndefined();
    });

    it('falls back to the single live opener for a request with neither app nor server', () => {
      const only = fakeOpener('only');
      register(only, undefined); // e.g. an application whose adapter has no instance to tag
      expect(findOpener({})).toBe(only);
      expect(findOpener(undefined)).toBe(only);
    });

    it('counts an opener once however often it is registered', () => {
      const only = fakeOpener('only');
      register(only, {});
      register(only, {});
      expect(findOpener({})).toBe(only);
    });

    it('does not fall back when no opener or more than one is live', () => {
      expect(findOpener({})).toBeUndefined();
      const [a, b] = [fakeOpener('a'), fakeOpener('b')];
      register(a, {});
      register(b, {});
      expect(findOpener({})).toBeUndefined();
      unregisterOpener(b, undefined);
      expect(findOpener({})).toBe(a); // exactly one again
    });
  });

  describe('unregisterOpener()', () => {
    it('removes its own opener from the instance and from the live ones', () => {
      const app = {};
      const opener = fakeOpener('a');
      register(opener, app);
      unregisterOpener(opener, app);
      expect(openerOn(app)).toBeUndefined();
      expect(Object.getOwnPropertySymbols(app)).toEqual([]); // nothing left on the framework instance
      expect(findOpener({})).toBeUndefined();
    });

    it("leaves another application's opener on a shared instance in place", () => {
      const shared = {};
      const [first, second] = [fakeOpener('first'), fakeOpener('second')];
      register(first, shared);
      register(second, shared); // a second Nest application on the same Express app takes the instance over
      expect(openerOn(shared)).toBe(second);
      unregisterOpener(first, shared);
      expect(openerOn(shared)).toBe(second);
      expect(findOpener({ app: shared })).toBe(second);
      unregisterOpener(second, shared);
      expect(openerOn(shared)).toBeUndefined();
    });
  });
});
