/**
 * `@AfterResponse()` reads metadata that Nest writes (route arguments, bound interceptors, route
 * paths) to decide whether to bind `DeferredWorkInterceptor`. Nest does not promise those keys or
 * their shape, so this spec runs the same cases against the decorators of Nest 10, 11 and 12.
 *
 * For each version, our decorator modules are loaded afresh with `@nestjs/common` replaced by that
 * version's package (Nest 10 and 11 are dev dependencies under npm aliases, `@nestjs/common-10` and
 * `@nestjs/common-11`; both are CommonJS, which Jest's ESM mode imports as it is). So `AfterResponse`
 * uses that version's `SetMetadata` and `UseInterceptors`, and `Deferred` its `createParamDecorator`,
 * as they would in an application on that version; the controllers below use its `Controller`,
 * `Get`, `Req`, `Param` and `UseInterceptors`.
 */
import { jest } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as core12 from '@nestjs/core';
import * as common12 from '@nestjs/common';
import * as constants12 from '@nestjs/common/constants';
import * as common10 from '@nestjs/common-10';
import * as constants10 from '@nestjs/common-10/constants';
import * as common11 from '@nestjs/common-11';
import * as constants11 from '@nestjs/common-11/constants';
import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import type { AfterResponse as AfterResponseFn } from './after-response.decorator';
import type { Deferred as DeferredFn } from './deferred.decorator';
import type { DeferredWorkInterceptor as DeferredWorkInterceptorClass } from './deferred-work.interceptor';

/** The part of `@nestjs/common` used here; the same in all three versions. */
type Common = Pick<typeof common12, 'Controller' | 'Get' | 'Post' | 'Req' | 'Param' | 'UseInterceptors' | 'HttpCode'>;
type Constants = Pick<typeof constants12, 'ROUTE_ARGS_METADATA' | 'INTERCEPTORS_METADATA' | 'PATH_METADATA'>;

interface Version {
  major: number;
  /** Package name as installed (an npm alias for 10 and 11). */
  pkg: string;
  common: Common;
  constants: Constants;
}

const versions: Version[] = [
  { major: 10, pkg: '@nestjs/common-10', common: common10 as unknown as Common, constants: constants10 },
  { major: 11, pkg: '@nestjs/common-11', common: common11 as unknown as Common, constants: constants11 },
  { major: 12, pkg: '@nestjs/common', common: common12, constants: constants12 },
];

const requireHere = createRequire(import.meta.url);
const source = readFileSync(new URL('./after-response.decorator.ts', import.meta.url), 'utf8');

/** Another interceptor, to check that ours is added next to it, not instead of it. */
class OtherInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler) {
    return next.handle();
  }
}
class ThirdInterceptor extends OtherInterceptor {}

describe.each(versions)('@AfterResponse() on Nest $major decorators', (version) => {
  const { constants } = version;
  const nest = version.common;
  let AfterResponse: typeof AfterResponseFn;
  let Deferred: typeof DeferredFn;
  let DeferredWorkInterceptor: typeof DeferredWorkInterceptorClass;
  let AFTER_RESPONSE_METADATA: string;
  let builtOn: Common | undefined;

  beforeAll(async () => {
    jest.resetModules();
    builtOn = undefined;
    jest.unstable_mockModule('@nestjs/common', () => {
      builtOn = nest;
      return nest;
    });
    // Nest 12's core, loaded above against Nest 12's common: only its Reflector is used, by ScopeOpener.
    jest.unstable_mockModule('@nestjs/core', () => core12);
    ({ AfterResponse, AFTER_RESPONSE_METADATA } = await import('./after-response.decorator'));
    ({ Deferred } = await import('./deferred.decorator'));
    ({ DeferredWorkInterceptor } = await import('./deferred-work.interceptor'));
  });

  afterAll(() => jest.resetModules());

  const interceptorsOf = (target: object): unknown[] | undefined => Reflect.getMetadata(constants.INTERCEPTORS_METADATA, target);
  const countOurs = (target: object) => (interceptorsOf(target) ?? []).filter((i) => i === DeferredWorkInterceptor).length;

  describe('the version under test', () => {
    it(`is Nest ${version.major}, and our decorators were built on it`, () => {
      expect(Number((requireHere(`${version.pkg}/package.json`) as { version: string }).version.split('.')[0])).toBe(version.major);
      expect(builtOn).toBe(nest);
    });

    it("exports the metadata keys our code reads (route arguments, interceptors, route path)", () => {
      const declared = Object.fromEntries([...source.matchAll(/const (\w+_METADATA) = '([^']+)'/g)].map((m) => [m[1], m[2]]));
      expect(declared).toEqual({ ROUTE_ARGS_METADATA: constants.ROUTE_ARGS_METADATA, INTERCEPTORS_METADATA: constants.INTERCEPTORS_METADATA });
      const pathKeys = [...source.matchAll(/Reflect\.getMetadata\('([^']+)', method\)/g)].map((m) => m[1]);
      expect(pathKeys).toEqual([constants.PATH_METADATA]);
      // And the values themselves, so that a rename in Nest fails here by name.
      expect(constants.ROUTE_ARGS_METADATA).toBe('__routeArguments__');
      expect(constants.INTERCEPTORS_METADATA).toBe('__interceptors__');
      expect(constants.PATH_METADATA).toBe('path');
    });
  });

  describe('on a method', () => {
    it('binds the interceptor on a route without @Deferred(), and records its options', () => {
      @nest.Controller('orders')
      class Orders {
        @nest.Get(':id')
        @AfterResponse({ when: { job: 'always' } })
        show(@nest.Req() _req: unknown, @nest.Param('id') _id: string) {}

        @nest.Get()
        @AfterResponse()
        list() {}
      }
      expect(interceptorsOf(Orders.prototype.show)).toEqual([DeferredWorkInterceptor]);
      expect(interceptorsOf(Orders.prototype.list)).toEqual([DeferredWorkInterceptor]);
      expect(Reflect.getMetadata(AFTER_RESPONSE_METADATA, Orders.prototype.show)).toEqual({ when: { job: 'always' } });
      expect(Reflect.getMetadata(AFTER_RESPONSE_METADATA, Orders.prototype.list)).toEqual({});
      expect(interceptorsOf(Orders)).toBeUndefined(); // a method decorator binds nothing on the class
    });

    it('binds nothing on a route that takes @Deferred(), wherever the parameter is', () => {
      @nest.Controller('orders')
      class Orders {
        @nest.Get(':id')
        @AfterResponse()
        first(@Deferred() _work: unknown, @nest.Param('id') _id: string) {}

        @nest.Get(':id/items')
        @AfterResponse()
        last(@nest.Req() _req: unknown, @nest.Param('id') _id: string, @Deferred() _work: unknown) {}
      }
      expect(interceptorsOf(Orders.prototype.first)).toBeUndefined();
      expect(interceptorsOf(Orders.prototype.last)).toBeUndefined();
      expect(Reflect.getMetadata(AFTER_RESPONSE_METADATA, Orders.prototype.first)).toEqual({});
      // The @Deferred() parameter is what the route-arguments metadata says it is.
      const args = Reflect.getMetadata(constants.ROUTE_ARGS_METADATA, Orders, 'last') as Record<string, { index: number }>;
      expect(Object.values(args).map((a) => a.index).sort()).toEqual([0, 1, 2]);
    });

    it('binds the interceptor on a route with timing even when it takes @Deferred()', () => {
      @nest.Controller()
      class Timed {
        @nest.Get()
        @AfterResponse({ timing: true })
        measured(@Deferred() _work: unknown) {}

        @nest.Get('off')
        @AfterResponse({ timing: false })
        unmeasured(@Deferred() _work: unknown) {}
      }
      expect(interceptorsOf(Timed.prototype.measured)).toEqual([DeferredWorkInterceptor]);
      expect(interceptorsOf(Timed.prototype.unmeasured)).toBeUndefined();
    });

    it('does not depend on where it stands among the method decorators', () => {
      @nest.Controller()
      class Orders {
        @AfterResponse()
        @nest.HttpCode(202)
        @nest.Post()
        aboveWithDeferred(@Deferred() _work: unknown) {}

        @nest.Post('b')
        @nest.HttpCode(202)
        @AfterResponse()
        belowWithDeferred(@Deferred() _work: unknown) {}

        @AfterResponse()
        @nest.Post('c')
        aboveWithoutDeferred(@nest.Req() _req: unknown) {}

        @nest.Post('d')
        @AfterResponse()
        belowWithoutDeferred(@nest.Req() _req: unknown) {}
      }
      expect(interceptorsOf(Orders.prototype.aboveWithDeferred)).toBeUndefined();
      expect(interceptorsOf(Orders.prototype.belowWithDeferred)).toBeUndefined();
      expect(interceptorsOf(Orders.prototype.aboveWithoutDeferred)).toEqual([DeferredWorkInterceptor]);
      expect(interceptorsOf(Orders.prototype.belowWithoutDeferred)).toEqual([DeferredWorkInterceptor]);
    });

    it('keeps the interceptors bound by @UseInterceptors(), above or below it', () => {
      @nest.Controller()
      class Orders {
        // Decorators apply bottom-up: @AfterResponse() first here, then @UseInterceptors().
        @nest.Get('a')
        @nest.UseInterceptors(OtherInterceptor, ThirdInterceptor)
        @AfterResponse()
        above() {}

        @nest.Get('b')
        @AfterResponse()
        @nest.UseInterceptors(OtherInterceptor, ThirdInterceptor)
        below() {}

        @nest.Get('c')
        @AfterResponse()
        @nest.UseInterceptors(OtherInterceptor)
        withDeferred(@Deferred() _work: unknown) {}
      }
      expect(interceptorsOf(Orders.prototype.above)).toEqual([DeferredWorkInterceptor, OtherInterceptor, ThirdInterceptor]);
      expect(interceptorsOf(Orders.prototype.below)).toEqual([OtherInterceptor, ThirdInterceptor, DeferredWorkInterceptor]);
      expect(interceptorsOf(Orders.prototype.withDeferred)).toEqual([OtherInterceptor]);
    });

    it('does not bind the interceptor a second time when @UseInterceptors() already bound it', () => {
      @nest.Controller()
      class Orders {
        @nest.Get()
        @AfterResponse()
        @nest.UseInterceptors(OtherInterceptor, DeferredWorkInterceptor)
        bound() {}

        @nest.Get('timed')
        @AfterResponse({ timing: true })
        @nest.UseInterceptors(DeferredWorkInterceptor)
        timedAndBound(@Deferred() _work: unknown) {}
      }
      expect(interceptorsOf(Orders.prototype.bound)).toEqual([OtherInterceptor, DeferredWorkInterceptor]);
      expect(countOurs(Orders.prototype.timedAndBound)).toBe(1);
    });

    it('sees a @Deferred() parameter an override inherits without redeclaring its parameters', () => {
      @nest.Controller()
      class Base {
        @nest.Get()
        show(@Deferred() _work: unknown) {}
      }
      @nest.Controller('sub')
      class Sub extends Base {
        // No parameter decorators here: Nest reads the route arguments through the class chain, so
        // @Deferred() still resolves for this route, and no interceptor is needed.
        @nest.Get()
        @AfterResponse()
        override show(_work: unknown) {}
      }
      expect(interceptorsOf(Sub.prototype.show)).toBeUndefined();
      expect(interceptorsOf(Base.prototype.show)).toBeUndefined();
    });

    it("follows this version's metadata when an override puts another parameter where @Deferred() was", () => {
      @nest.Controller()
      class Base {
        @nest.Get()
        show(@Deferred() _work: unknown) {}
      }
      @nest.Controller('sub')
      class Sub extends Base {
        @nest.Get()
        @AfterResponse()
        override show(@nest.Req() _req: unknown) {}
      }
      // Nest 10 and 11 copy the parent's arguments into the override's (the parent's @Deferred()
      // entry stays, and its factory still runs for the route); Nest 12 drops an inherited entry at
      // an index the override redeclares. The decorator follows what the metadata says.
      const args = Reflect.getMetadata(constants.ROUTE_ARGS_METADATA, Sub, 'show') as Record<string, { factory?: unknown }>;
      const keepsInherited = Object.values(args).some((a) => typeof a.factory === 'function');
      expect(keepsInherited).toBe(version.major < 12);
      expect(interceptorsOf(Sub.prototype.show)).toEqual(version.major < 12 ? undefined : [DeferredWorkInterceptor]);
    });
  });

  describe('on a class', () => {
    it('binds nothing when every route takes @Deferred(), ignoring methods that are not routes', () => {
      @AfterResponse({ sinks: { job: 'queue' } })
      @nest.Controller('orders')
      class Orders {
        @nest.Get()
        list(@Deferred() _work: unknown) {}

        @nest.Post()
        create(@nest.Req() _req: unknown, @Deferred() _work: unknown) {}

        helper(_x: number) {} // no route: needs no @Deferred()
      }
      expect(interceptorsOf(Orders)).toBeUndefined();
      expect(interceptorsOf(Orders.prototype.list)).toBeUndefined();
      expect(Reflect.getMetadata(AFTER_RESPONSE_METADATA, Orders)).toEqual({ sinks: { job: 'queue' } });
    });

    it('binds the interceptor on the class when one route does not take @Deferred()', () => {
      @AfterResponse()
      @nest.Controller('orders')
      class Orders {
        @nest.Get()
        list(@Deferred() _work: unknown) {}

        @nest.Get(':id')
        show(@nest.Param('id') _id: string) {}
      }
      expect(interceptorsOf(Orders)).toEqual([DeferredWorkInterceptor]);
      expect(interceptorsOf(Orders.prototype.show)).toBeUndefined(); // bound once, on the class
    });

    it('binds the interceptor on the class with timing, even when every route takes @Deferred()', () => {
      @AfterResponse({ timing: true })
      @nest.Controller()
      class Timed {
        @nest.Get()
        list(@Deferred() _work: unknown) {}
      }
      expect(interceptorsOf(Timed)).toEqual([DeferredWorkInterceptor]);
    });

    it('binds the interceptor on a class without routes (its routes may come from subclasses)', () => {
      @AfterResponse()
      class NoRoutes {
        helper(@Deferred() _work: unknown) {}
      }
      expect(interceptorsOf(NoRoutes)).toEqual([DeferredWorkInterceptor]);
    });

    it('does not depend on where it stands among the class decorators, and keeps their interceptors', () => {
      @AfterResponse()
      @nest.UseInterceptors(OtherInterceptor)
      @nest.Controller()
      class Above {
        @nest.Get()
        show(@nest.Req() _req: unknown) {}
      }
      @nest.Controller()
      @nest.UseInterceptors(OtherInterceptor)
      @AfterResponse()
      class Below {
        @nest.Get()
        show(@nest.Req() _req: unknown) {}
      }
      @nest.Controller()
      @nest.UseInterceptors(OtherInterceptor)
      @AfterResponse()
      class BelowWithDeferred {
        @nest.Get()
        show(@Deferred() _work: unknown) {}
      }
      expect(interceptorsOf(Above)).toEqual([OtherInterceptor, DeferredWorkInterceptor]);
      expect(interceptorsOf(Below)).toEqual([DeferredWorkInterceptor, OtherInterceptor]);
      expect(interceptorsOf(BelowWithDeferred)).toEqual([OtherInterceptor]);
    });

    it('does not bind the interceptor a second time when @UseInterceptors() already bound it on the class', () => {
      @AfterResponse({ timing: true })
      @nest.UseInterceptors(DeferredWorkInterceptor)
      @nest.Controller()
      class Bound {
        @nest.Get()
        show(@nest.Req() _req: unknown) {}
      }
      expect(interceptorsOf(Bound)).toEqual([DeferredWorkInterceptor]);
    });

    it('counts inherited routes: one without @Deferred() in a base class binds the interceptor', () => {
      @nest.Controller()
      class Base {
        @nest.Get('health')
        health(@nest.Req() _req: unknown) {}
      }
      @AfterResponse()
      @nest.Controller('orders')
      class Orders extends Base {
        @nest.Get()
        list(@Deferred() _work: unknown) {}
      }
      expect(interceptorsOf(Orders)).toEqual([DeferredWorkInterceptor]);
      expect(interceptorsOf(Base)).toBeUndefined(); // the base class itself is left alone
    });

    it('counts inherited routes: all taking @Deferred(), own and inherited, binds nothing', () => {
      @nest.Controller()
      class Base {
        @nest.Get('base')
        fromBase(@Deferred() _work: unknown) {}
      }
      @nest.Controller()
      class Middle extends Base {}
      @AfterResponse()
      @nest.Controller('orders')
      class Orders extends Middle {
        @nest.Get()
        list(@Deferred() _work: unknown) {}
      }
      expect(interceptorsOf(Orders)).toBeUndefined();
    });

    it('judges an overridden route by the override, as Nest routes it', () => {
      @nest.Controller()
      class Base {
        @nest.Get('a')
        routeInBase(@nest.Req() _req: unknown) {}

        @nest.Get('b')
        redeclared(@nest.Req() _req: unknown) {}
      }
      @AfterResponse()
      @nest.Controller('sub')
      class Sub extends Base {
        // Overridden without a route decorator: Nest reads the path from the override, so this is
        // no longer a route (and the base's route without @Deferred() does not count).
        override routeInBase(_req: unknown) {}

        @nest.Get('b')
        override redeclared(@Deferred() _work: unknown) {}
      }
      @AfterResponse()
      @nest.Controller('other')
      class StillRouted extends Base {
        @nest.Get('b')
        override redeclared(@Deferred() _work: unknown) {}
      }
      expect(interceptorsOf(Sub)).toBeUndefined();
      expect(interceptorsOf(StillRouted)).toEqual([DeferredWorkInterceptor]); // routeInBase is inherited as a route
    });

    it('skips accessors without calling them', () => {
      let reads = 0;
      @AfterResponse()
      @nest.Controller()
      class WithAccessor {
        get expensive(): number {
          reads++;
          throw new Error('must not be read');
        }

        @nest.Get()
        show(@Deferred() _work: unknown) {}
      }
      expect(reads).toBe(0);
      expect(interceptorsOf(WithAccessor)).toBeUndefined();
    });
  });
});
