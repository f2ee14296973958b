/** Property of the request object (Express `req`, Fastify `request`) that holds its scope. */
export const DEFERRED_SCOPE = Symbol.for('nestjs-deferred-work.scope');

/** Property of the request object that holds the handler its scope was opened for. */
export const DEFERRED_HANDLER = Symbol.for('nestjs-deferred-work.handler');
