import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkAttachContext } from '../../core/sink.interface';
import { type ModuleRefLike, resolveToken } from '../kit/app-client';
import { checkSinkName, describeValue } from '../kit/option-checks';
import { SinkConfigError } from '../kit/sink-config.error';
import type { NamedQueue, QueueFlavor, QueueSinkOptions } from './queue-sink.options';

/** Before the sink is attached: nothing is registered. */
const NO_PROVIDERS: Pick<SinkAttachContext, 'resolve'> = { resolve: () => undefined };

/**
 * Where a queue sink finds its queues: the ones it was given, else the ones registered in the app,
 * by injection token (through the attach context, or a `moduleRef` passed in older setups).
 * Validates the options at construction.
 */
export class QueueLookup<Q extends NamedQueue> {
  readonly sinkName: string;
  /** Whether queues are held open until the drain ends (`drainBeforeQueueClose`). */
  readonly holdsOpen: boolean;
  private readonly moduleRef: ModuleRefLike | undefined;
  private readonly given = new Map<string, Q>();
  private readonly resolved = new Map<string, Q>();
  private readonly queueToken: (name: string) => unknown;
  /** The app's providers by token, once attached. */
  private context: Pick<SinkAttachContext, 'resolve'> | undefined;

  constructor(
    options: QueueSinkOptions<Q> = {},
    private readonly flavor: QueueFlavor,
    private readonly isQueue: (value: unknown) => value is Q,
    private readonly onFound: (queue: Q) => void,
  ) {
    const C = flavor.sinkClass;
    if (options === null || typeof options !== 'object') {
      throw new SinkConfigError(
        `${C}: options must be an object, got ${describeValue(options)}. Leave them out to use the queues registered with ` +
          `BullModule.registerQueue, or pass new ${C}({ queues: { name: queue } }).`,
      );
    }
    this.sinkName = checkSinkName(C, options.name, flavor.defaultName);
    const moduleRef = options.moduleRef;
    if (moduleRef !== undefined && (moduleRef === null || typeof moduleRef.get !== 'function')) {
      throw new SinkConfigError(
        `${C}: moduleRef must be Nest's ModuleRef (an object with get()). It is not needed any more: leave it out, and the sink ` +
          'finds the registered queues itself.',
        'moduleRef',
      );
    }
    this.moduleRef = moduleRef;
    this.addAllGiven(options.queues);
    if (options.queueToken !== undefined && typeof options.queueToken !== 'function') {
      throw new SinkConfigError(`${C}: queueToken must be a function (name) => token, e.g. getQueueToken from ${flavor.nestPackage}.`, 'queueToken');
    }
    this.queueToken = options.queueToken ?? flavor.defaultToken;
    this.holdsOpen = options.drainBeforeQueueClose ?? true;
  }

  /** At bootstrap: from now on, queues not given are looked up among the app's providers. */
  attach(context: Pick<SinkAttachContext, 'resolve'>): void {
    this.context = context;
  }

  /**
   * Every queue the sink may write to: the given ones and every queue registered in the app among
   * `providers`. Queues of the other library (Bull 4 and BullMQ share the `BullQueue_<name>` token) are
   * passed over — an app moving from one to the other has both — unless the app has none of this
   * sink's: then the sink is the wrong one, and bootstrap fails naming the right one.
   */
  *reachable(providers: Iterable<{ token: unknown; instance: unknown }>): Iterable<Q> {
    let ours = this.given.size;
    let firstOther: SinkConfigError | undefined;
    yield* this.given.values();
    for (const { token, instance } of providers) {
      let mine = false;
      let other: string | undefined;
      try {
        const name = (instance as { name?: unknown }).name;
        if (typeof name !== 'string' || token !== this.queueToken(name) || this.given.has(name)) continue;
        mine = this.isQueue(instance);
        other = mine ? undefined : this.flavor.otherLibrary?.(instance);
      } catch {
        continue; // a provider that throws on property access (a strict proxy outside its context) is no queue of ours
      }
      if (mine) {
        ours++;
        yield instance as Q;
      } else if (other) firstOther ??= new SinkConfigError(`${this.flavor.sinkClass} "${this.sinkName}": the queue registered as ${String(token)} ${other}`, 'queues');
    }
    if (ours === 0 && firstOther !== undefined) throw firstOther;
  }

  /** The queue for `name`: a given one, else one resolved (once) among the app's providers. Throws a not-retryable `SinkWriteError`. */
  queue(name: string): Q {
    const queue = this.given.get(name) ?? this.resolved.get(name);
    if (queue) return queue;
    const { sinkClass: C, library } = this.flavor;
    const token = this.queueToken(name);
    if (!this.context && !this.moduleRef) {
      const known = [...this.given.keys()].map((n) => `"${n}"`).join(', ') || 'none';
      throw new SinkWriteError(
        `${C} "${this.sinkName}": no queue named "${name}" (given: ${known}), and the sink was not attached to an app to find it registered. ` +
          `Add the sink to DeferredWorkModule's sinks, or pass the queue in new ${C}({ queues: { '${name}': queue } }).`,
        { retryable: false },
      );
    }
    const found = resolveToken(this.context ?? NO_PROVIDERS, token, this.moduleRef);
    const other = this.isQueue(found) ? undefined : this.flavor.otherLibrary?.(found);
    if (other) throw new SinkWriteError(`${C} "${this.sinkName}": queue "${name}" ${other}`, { retryable: false });
    if (!this.isQueue(found)) {
      throw new SinkWriteError(
        `${C} "${this.sinkName}": ${library} queue "${name}" is not registered (no provider ${String(token)} in the app). ` +
          `Register it with BullModule.registerQueue({ name: '${name}' }) in any module, or pass it in new ${C}({ queues }).`,
        { retryable: false },
      );
    }
    this.resolved.set(name, found);
    this.onFound(found); // first met now, even during shutdown
    return found;
  }

  /** Forgets resolved queues. */
  forget(): void {
    this.resolved.clear();
  }

  private addAllGiven(queues: QueueSinkOptions<Q>['queues']): void {
    if (Array.isArray(queues)) {
      queues.forEach((queue: Q, i) => this.addGiven(queue?.name, queue, `queues[${i}]`));
    } else if (queues !== undefined) {
      if (queues === null || typeof queues !== 'object') {
        throw new SinkConfigError(`${this.flavor.sinkClass}: queues must be an object { [queueName]: queue } or an array of queues.`, 'queues');
      }
      for (const [name, queue] of Object.entries(queues as Record<string, Q>)) this.addGiven(name, queue, `queues.${name}`);
    }
  }

  private addGiven(name: unknown, queue: Q, where: string): void {
    const { sinkClass: C, library, addMethod, packageName } = this.flavor;
    const other = this.isQueue(queue) ? undefined : this.flavor.otherLibrary?.(queue);
    if (other) throw new SinkConfigError(`${C}: ${where} ${other}`, where);
    if (!this.isQueue(queue)) {
      throw new SinkConfigError(`${C}: ${where} is not a ${library} queue (it needs an ${addMethod} method). Pass a Queue from "${packageName}".`, where);
    }
    if (typeof name !== 'string' || name === '') {
      throw new SinkConfigError(`${C}: ${where} has no name; pass queues as { [queueName]: queue } instead.`, where);
    }
    this.given.set(name, queue);
  }
}
