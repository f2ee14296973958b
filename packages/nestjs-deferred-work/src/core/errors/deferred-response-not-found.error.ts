/**
 * Thrown when an `@AfterResponse()` GraphQL resolver runs in an HTTP request whose response the
 * library cannot find (Apollo on Fastify, where Nest's default context holds only the request, and the
 * response is not the one being written on the request's connection, e.g. with HTTP pipelining).
 */
export class DeferredResponseNotFoundError extends Error {
  override readonly name = 'DeferredResponseNotFoundError';

  constructor(where: string) {
    super(
      `${where} has @AfterResponse(), but the GraphQL context of this request holds no response to wait for. ` +
        'Put the reply on the context in GraphQLModule.forRoot(): ' +
        'context: (req: FastifyRequest, reply: FastifyReply) => ({ req, reply }) ' +
        '(a context function of your own: add reply to what it returns).',
    );
  }
}
