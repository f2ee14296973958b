/** Property of the request object (Express `req`, Fastify `request`) that holds its scope. */
export const DEFERRED_SCOPE = Symbol.for('nestjs-deferred-work.scope');
