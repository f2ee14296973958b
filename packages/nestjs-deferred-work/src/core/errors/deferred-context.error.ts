/** Thrown when `@Deferred()` cannot find the request's scope. */
export class DeferredContextError extends Error {
  override readonly name = 'DeferredContextError';

  constructor(where: string, contextType = 'http') {
    super(
      contextType !== 'http'
        ? `@Deferred() was used in ${where}, a ${contextType} handler; it works in HTTP handlers, GraphQL resolvers and microservice handlers. ` +
            'Inject DeferredWork instead: outside an HTTP request its items go straight to the dispatcher.'
        : `@Deferred() was used in ${where}, but no DeferredWorkModule is running for this request's application. ` +
            'Import DeferredWorkModule.forRoot() (or forRootAsync()) in the application that serves this route.',
    );
  }
}
