/** Thrown when `@Deferred()` is used on a route that `DeferredWorkInterceptor` does not cover. */
export class DeferredContextError extends Error {
  override readonly name = 'DeferredContextError';

  constructor(where: string, contextType = 'http') {
    super(
      contextType !== 'http'
        ? `@Deferred() was used in ${where}, a ${contextType} handler; it works in HTTP handlers only. ` +
            'Inject DeferredWork instead: outside an HTTP request its items go straight to the dispatcher.'
        : `@Deferred() was used in ${where}, but DeferredWorkInterceptor did not run for this request. ` +
            'Keep DeferredWorkModule.forRoot({ registerInterceptor: true }) (the default), or bind it with ' +
            '@UseInterceptors(DeferredWorkInterceptor) on the controller.',
    );
  }
}
