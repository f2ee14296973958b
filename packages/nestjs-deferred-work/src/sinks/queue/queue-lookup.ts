import { SinkWriteError } from '../../core/errors/sink-write.error';
import { SinkConfigError } from '../kit/sink-config.error';
import type { ModuleRefLike, NamedQueue, QueueFlavor, QueueSinkOptions } from './queue-sink.options';

/**
 * Where a queue sink finds its queues: the ones it was given, else the ones registered in the app
 * (through the module ref, by injection token). Validates the options at construction.
 */
export class QueueLookup<Q extends NamedQueue> {
  readonly sinkName: string;
  /** Whether queues are held open until the drain ends (`drainBeforeQueueClose`). */
  readonly holdsOpen: boolean;
  private readonly moduleRef: ModuleRefLike | undefined;
  private readonly given = new Map<string, Q>();
  private readonly resolved = new Map<string, Q>();
  private readonly queueToken: (name: string) => unknown;

  constructor(
    options: QueueSinkOptions<Q>,
    private readonly flavor: QueueFlavor,
    private readonly isQueue: (value: unknown) => value is Q,
    private readonly onFound: (queue: Q) => void,
  ) {
    const C = flavor.sinkClass;
    if (!options || typeof options !== 'object') {
      throw new SinkConfigError(
        `${C}: options are required. Pass new ${C}({ moduleRef }) (inject ModuleRef in ` +
          `DeferredWorkModule.forRootAsync) or new ${C}({ queues: { name: queue } }).`,
      );
    }
    this.sinkName = options.name ?? flavor.defaultName;
    if (typeof this.sinkName !== 'string' || this.sinkName === '') {
      throw new SinkConfigError(`${C}: name must be a non-empty string, got ${JSON.stringify(options.name)}.`, 'name');
    }
    const moduleRef = options.moduleRef;
    if (moduleRef !== undefined && (moduleRef === null || typeof moduleRef.get !== 'function')) {
      throw new SinkConfigError(
        `${C}: moduleRef must be Nest's ModuleRef (an object with get()). Inject it with ` +
          `DeferredWorkModule.forRootAsync({ inject: [ModuleRef], useFactory: (moduleRef) => ({ sinks: [new ${C}({ moduleRef })] }) }).`,
        'moduleRef',
      );
    }
    this.moduleRef = moduleRef;
    this.addAllGiven(options.queues);
    if (!this.moduleRef && this.given.size === 0) {
      throw new SinkConfigError(
        `${C}: no way to find queues. Pass moduleRef (to reuse the queues registered with ` +
          'BullModule.registerQueue) or queues ({ [queueName]: queue }).',
      );
    }
    if (options.queueToken !== undefined && typeof options.queueToken !== 'function') {
      throw new SinkConfigError(`${C}: queueToken must be a function (name) => token, e.g. getQueueToken from ${flavor.nestPackage}.`, 'queueToken');
    }
    this.queueToken = options.queueToken ?? flavor.defaultToken;
    this.holdsOpen = options.drainBeforeQueueClose ?? true;
  }

  /** Every queue the sink may write to: the given ones and, with a module ref, every registered queue among `providers`. */
  *reachable(providers: Iterable<{ token: unknown; instance: unknown }>): Iterable<Q> {
    yield* this.given.values();
    if (!this.moduleRef) return;
    for (const { token, instance } of providers) {
      let mine = false;
      let other: string | undefined;
      try {
        const name = (instance as { name?: unknown }).name;
        if (typeof name !== 'string' || token !== this.queueToken(name)) continue;
        mine = this.isQueue(instance);
        other = mine ? undefined : this.flavor.otherLibrary?.(instance);
      } catch {
        continue; // a provider that throws on property access (a strict proxy outside its context) is no queue of ours
      }
      if (mine) yield instance as Q;
      else if (other) throw new SinkConfigError(`${this.flavor.sinkClass} "${this.sinkName}": the queue registered as ${String(token)} ${other}`, 'moduleRef');
    }
  }

  /** The queue for `name`: a given one, else one resolved (once) through the module ref. Throws a not-retryable `SinkWriteError`. */
  queue(name: string): Q {
    const queue = this.given.get(name) ?? this.resolved.get(name);
    if (queue) return queue;
    const { sinkClass: C, library } = this.flavor;
    if (!this.moduleRef) {
      throw new SinkWriteError(
        `${C} "${this.sinkName}": no queue named "${name}" (known: ${[...this.given.keys()].map((n) => `"${n}"`).join(', ')}). ` +
          `Add it to new ${C}({ queues: { '${name}': queue } }), or pass moduleRef to use the queues registered with BullModule.registerQueue.`,
        { retryable: false },
      );
    }
    const token = this.queueToken(name);
    let found: unknown;
    try {
      found = this.moduleRef.get(token as string, { strict: false });
    } catch {
      found = undefined;
    }
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
