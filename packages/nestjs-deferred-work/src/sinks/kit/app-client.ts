import type { ModuleRef } from '@nestjs/core';
import type { SinkAttachContext } from '../../core/sink.interface';
import { SinkConfigError } from './sink-config.error';

/** Something that finds a provider by token anywhere in the app: Nest's `ModuleRef`. */
export type ModuleRefLike = Pick<ModuleRef, 'get'>;

/** How a sink describes the client it looks for, for {@link findAppClient}. */
export interface AppClientSpec<C> {
  /** The sink, as messages name it, e.g. `ClientProxySink "orders"`. */
  sink: string;
  /** The option a user sets to pick the client, e.g. `clientToken`. */
  option: string;
  /** The injection token to look up. */
  token: unknown;
  /** Whether a value is such a client. */
  is(value: unknown): value is C;
  /** What such a client is, e.g. `a ClientProxy of @nestjs/microservices`. */
  what: string;
  /** The module call that registers one under `token`, e.g. `ClientsModule.register([{ name: 'ORDERS', … }])`. */
  register: string;
  /** A `ModuleRef` the user passed (older setups); else the attach context resolves the token. */
  moduleRef?: ModuleRefLike;
}

/** The provider registered under `token` in the app (`undefined` when there is none), through `moduleRef` when given, else the attach context. */
export function resolveToken(context: Pick<SinkAttachContext, 'resolve'>, token: unknown, moduleRef?: ModuleRefLike): unknown {
  if (!moduleRef) return context.resolve(token);
  try {
    return moduleRef.get(token as string, { strict: false });
  } catch {
    return undefined;
  }
}

/**
 * The app's client registered under `spec.token`, found at bootstrap (in `attach`). When there is no
 * such provider, or it is not such a client, fails the bootstrap with a `SinkConfigError` that names
 * the module call registering it.
 */
export function findAppClient<C>(context: Pick<SinkAttachContext, 'resolve'>, spec: AppClientSpec<C>): C {
  const found = resolveToken(context, spec.token, spec.moduleRef);
  if (spec.is(found)) return found;
  const what = found === undefined || found === null ? 'nothing is registered' : `the provider is not ${spec.what}`;
  throw new SinkConfigError(
    `${spec.sink}: no client found as ${describeToken(spec.token)} (${what}). Register it with ${spec.register} in a module the app imports, ` +
      `or pass the client itself instead of "${spec.option}".`,
    spec.option,
  );
}

/** A token as messages show it. */
export function describeToken(token: unknown): string {
  if (typeof token === 'string') return JSON.stringify(token);
  if (typeof token === 'function') return (token as { name?: string }).name || 'an anonymous class';
  return String(token);
}
