import { errorMessage } from '../../core/error-message';
import type { HeldClient, HoldOpenOptions } from '../../core/sink.interface';

/** What most clients close with: `pg`/`mysql2` pools (`end`), ioredis (`quit`, `disconnect`), Knex, TypeORM and AWS SDK clients (`destroy`), `ClientProxy`, Bull and BullMQ queues (`close`). */
export const CLOSE_METHODS: readonly string[] = Object.freeze(['end', 'quit', 'disconnect', 'destroy', 'close']);
/** Nest's shutdown hooks, which Nest integrations set on the instances they register (`ClientsModule`, `@nestjs/bull`, `@nestjs/bullmq`). */
const NEST_HOOKS: readonly string[] = Object.freeze(['onModuleDestroy', 'beforeApplicationShutdown', 'onApplicationShutdown']);

type Method = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Puts `fn` in place of the client's method `name`, as an own property of the instance: assigned when
 * it is writable, redefined when it is read-only but configurable (Knex defines its methods so).
 * `false` when the property can be neither (frozen).
 */
function replaceMethod(client: object, name: string, fn: Method): boolean {
  const own = Object.getOwnPropertyDescriptor(client, name);
  if (own && !own.writable && !own.configurable) return false;
  if (own && own.writable) {
    (client as Record<string, unknown>)[name] = fn;
    return true;
  }
  try {
    Object.defineProperty(client, name, { value: fn, writable: true, configurable: true, enumerable: own?.enumerable ?? false });
    return true;
  } catch {
    return false; // a non-extensible object
  }
}

/** How messages name a client: its class and the method that closed it, e.g. `Pool.end()`. */
function clientName(client: unknown, method: string): string {
  const cls = (client as { constructor?: { name?: string } } | null)?.constructor?.name;
  return `${cls && cls !== 'Object' ? cls : 'client'}.${method}()`;
}

/** A held client's state: whether its real close has started, and the sinks that hold it. */
class Hold implements HeldClient {
  closed = false;
  readonly owners = new Set<string>();
}

/** What a held client's close waits for: the sinks that hold it drained (`owners`: their names). */
export type ReleaseHeld = (owners: readonly string[], client: string) => Promise<unknown>;

/**
 * Keeps clients open until the sinks that use them have drained, whoever closes them and in whichever
 * shutdown hook: each close method and Nest shutdown hook on the instance is wrapped, once, so that
 * calling it first waits for `release` (the module drains those sinks, bounded by `shutdownTimeoutMs`,
 * and closes them), then runs the real one with the same `this` and arguments.
 *
 * Nest runs a global module's shutdown hooks after every other module's, and apps close their pools
 * in `onModuleDestroy`: without this, the drain would meet closed clients. A close method the client
 * runs synchronously (ioredis `disconnect()`, an AWS SDK client's `destroy()`) returns at once and
 * runs after the drain; `closing()` waits for those. `disconnect(true)` (ioredis reconnecting) is
 * passed through. A wrapped Nest shutdown hook never rejects: a client whose close fails is reported
 * through `warn`, and the application's shutdown goes on; a close method called directly fails as
 * the client's own does.
 */
export class ClientHolds {
  private readonly holds = new WeakMap<object, Hold>();
  private readonly postponed = new Set<Promise<unknown>>();

  constructor(
    private readonly release: ReleaseHeld,
    private readonly warn?: (message: string) => void,
  ) {}

  /**
   * Holds `client` open for the sink named `owner` (idempotent: a client held twice is wrapped once,
   * and waits for every sink that holds it); returns its state.
   */
  hold(client: object, options: HoldOpenOptions = {}, owner?: string): HeldClient {
    let hold = this.holds.get(client);
    if (owner !== undefined) hold?.owners.add(owner);
    if (hold) return hold;
    hold = new Hold();
    if (owner !== undefined) hold.owners.add(owner);
    this.holds.set(client, hold);
    const target = client as Record<string, unknown>;
    const methods = options.methods ?? CLOSE_METHODS;
    for (const name of new Set([...methods, ...NEST_HOOKS])) {
      const original = target[name];
      if (typeof original !== 'function') continue;
      if (!replaceMethod(client, name, this.wrap(name, original as Method, hold))) {
        this.warn?.(`${clientName(client, name)} cannot be replaced (a frozen property), so closing it does not wait for the deferred work to drain. Close it after app.close().`);
      }
    }
    return hold;
  }

  /** Resolves once every close that was postponed until a drain has run (settled). */
  async closing(): Promise<void> {
    while (this.postponed.size > 0) await Promise.allSettled([...this.postponed]);
  }

  private wrap(name: string, original: Method, hold: Hold): Method {
    const holds = this;
    return function drainThenClose(this: unknown, ...args: unknown[]) {
      if (name === 'disconnect' && args[0] === true) return original.apply(this, args); // ioredis: reconnect, not close
      const closed = holds.release([...hold.owners], clientName(this, name)).then(
        () => undefined,
        () => undefined, // the drain logs its own failures; the client closes regardless
      );
      const closing = closed.then(() => {
        hold.closed = true;
        return original.apply(this, args);
      });
      // A Nest shutdown hook that fails (BullMQ 6's close() throws a TypeError for a queue whose client
      // was never made) is reported, not thrown into the application's shutdown: app.close() goes on.
      const run = NEST_HOOKS.includes(name)
        ? closing.catch((error: unknown) => {
            holds.warn?.(`${clientName(this, name)} failed after the deferred work drained, and the shutdown goes on: ${errorMessage(error)}`);
          })
        : closing;
      holds.postponed.add(run);
      const forget = () => holds.postponed.delete(run);
      run.then(forget, forget);
      return run;
    };
  }
}
