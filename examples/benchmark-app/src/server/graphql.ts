/**
 * The GraphQL scenario: an Apollo endpoint whose three query fields do the `sim5` side
 * effect three ways — `plain` (none), `blocking` (awaited in the resolver), `deferred`
 * (`@AfterResponse()` + `@Deferred()`: after the HTTP response finished). Loaded only when the
 * scenario runs, so the other scenarios' servers have no GraphQL module.
 */
import type { DynamicModule, Type } from '@nestjs/common';
import { AfterResponse, Deferred, type DeferredScope } from 'nestjs-deferred-work';
import { countHandled, routeKey, runEffect } from './counters.js';
import type { ScenarioEffect } from './effects.js';

const typeDefs = /* GraphQL */ `
  type Query {
    plain: Boolean
    blocking: Boolean
    deferred: Boolean
  }
`;

/** The GraphQL module and its resolver, for `BenchModule`. */
export interface GraphqlParts {
  module: DynamicModule;
  resolver: Type<unknown>;
}

export async function graphqlParts(effect: ScenarioEffect): Promise<GraphqlParts> {
  const [{ GraphQLModule, Query, Resolver }, { ApolloDriver }] = await Promise.all([import('@nestjs/graphql'), import('@nestjs/apollo')]);
  const key = (variant: string) => routeKey('graphql', variant);
  const perform = () => effect.perform();

  @Resolver('Query')
  class BenchResolver {
    @Query('plain')
    plain() {
      countHandled(key('plain'));
      return true;
    }

    @Query('blocking')
    async blocking() {
      countHandled(key('blocking'));
      await runEffect(key('blocking'), perform);
      return true;
    }

    @Query('deferred')
    @AfterResponse(effect.afterResponse)
    deferred(@Deferred() work: DeferredScope) {
      countHandled(key('deferred'));
      effect.defer(work);
      return true;
    }
  }
  return { module: GraphQLModule.forRoot({ driver: ApolloDriver, typeDefs, graphiql: false }), resolver: BenchResolver };
}
