// orders.resolver.ts — a code-first resolver of docs/graphql-and-microservices.md: a mutation that
// defers a job and a log with @AfterResponse(), delivered after the HTTP response of the GraphQL request.
import { Args, Field, ID, Mutation, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { AfterResponse, Deferred, type DeferredScope } from 'nestjs-deferred-work';

@ObjectType()
export class Order {
  @Field(() => ID)
  id!: string;
}

@Resolver(() => Order)
export class OrdersResolver {
  @Query(() => String)
  health(): string {
    return 'ok';
  }

  @Mutation(() => Order)
  @AfterResponse()
  placeOrder(@Args('id', { type: () => ID }) id: string, @Deferred() work: DeferredScope): Order {
    work.job('mail', 'order-confirmation', { orderId: id }); // success: only if this resolver did not fail
    work.log('info', 'order placed', { orderId: id }); // always
    return { id };
  }
}
