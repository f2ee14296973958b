import { ClientsModule, type Transport } from '@nestjs/microservices';
import type { DeferredSinkOptions } from 'nestjs-deferred-work';
import { ClientProxySink, type ClientProxySinkOptions, emitEvent } from 'nestjs-deferred-work/microservices';
import { describeSinkConformance } from './sink-conformance';
import { TcpProxy } from './tcp-proxy';

/**
 * The sink conformance suite for `ClientProxySink` on one broker: the app registers the client with
 * `ClientsModule.register([{ name: TOKEN, … }])` and the sink finds it by that token; the client
 * reaches the broker through a `TcpProxy` (the suite's `outage` cuts it, its `blackhole` silences
 * it), while the test's own consumer talks to the broker directly, so it keeps reading through both.
 * Every test gets its own destination (queue, subject, stream, channel, topic) and its own consumer.
 * A broker whose clients do not stay on the address they were given (Kafka: after the bootstrap,
 * clients connect to the brokers the metadata names) brings its own `link` instead of the proxy.
 */
export const TOKEN = 'CONF_EVENTS';

/** One test's destination on the broker, and the consumer reading it. */
export interface BrokerChannel {
  /** The pattern the sink emits to (`emitEvent(work, TOKEN, pattern, { mark })`). */
  pattern: string;
  /** The options of the registered client, for a broker reachable at 127.0.0.1:`port` (the proxy). */
  clientOptions(port: number): Record<string, unknown>;
  /** The marks the broker holds, or handed to this consumer, by now (one per message received). */
  received(): Promise<string[]>;
  close(): Promise<void>;
}

export interface BrokerConformance {
  name: string;
  transport: Transport;
  /** Before the file's tests: check or start the broker; resolves with the port the proxy forwards to. */
  setUp(): Promise<number>;
  tearDown?(): Promise<void>;
  /** A fresh destination and consumer for test number `n`. */
  open(n: number): Promise<BrokerChannel>;
  sink?: Partial<ClientProxySinkOptions>;
  sinkOptions?: DeferredSinkOptions;
  /** Defers an event the broker refuses for good, carrying `mark`, on the test's channel (left out where the transport has none). */
  poison?(work: Parameters<typeof emitEvent>[0], channel: BrokerChannel, mark: string): void;
  duplicatesInOutage: boolean;
  /** The codes the outage's failures may carry (see `ConformanceTarget.outageCodes`). */
  outageCodes: readonly string[];
  /** See `ConformanceTarget.shortBudgetOptions`. */
  shortBudgetOptions?: DeferredSinkOptions;
  /** How the tests cut and silence the broker, when not through the proxy (then `setUp`'s port is unused). */
  link?: BrokerLink;
}

/** A cut (`stop`/`start`) and a black hole (`blackhole.on`/`off`) of the link to the broker. */
export interface BrokerLink {
  stop(): Promise<void>;
  start(): Promise<void>;
  readonly running: boolean;
  blackhole: { on(): Promise<void>; off(): Promise<void> };
}

/** The mark inside a message body as Nest's clients serialise it: `{ "pattern": …, "data": { "mark": … } }`. */
export function markOf(body: Uint8Array | string): string {
  const text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
  const packet = JSON.parse(text) as { data?: { mark?: unknown } };
  return String(packet.data?.mark);
}

export function describeBrokerConformance(spec: BrokerConformance): void {
  let proxy: TcpProxy | undefined;
  let channel: BrokerChannel | undefined;
  let n = 0;
  const link = (): BrokerLink => {
    if (spec.link) return spec.link;
    if (!proxy) throw new Error('the proxy is not listening (setUp failed)');
    return proxy;
  };

  beforeAll(async () => {
    const port = await spec.setUp();
    if (spec.link) return;
    proxy = new TcpProxy(port);
    await proxy.listen();
  });
  afterAll(async () => {
    await proxy?.close();
    await spec.tearDown?.();
  });

  describeSinkConformance({
    name: spec.name,
    open: async () => {
      channel = await spec.open(++n);
      const options = channel.clientOptions(proxy?.port ?? 0);
      const opened = channel;
      return {
        sink: new ClientProxySink({ clientToken: TOKEN, ...spec.sink }),
        imports: [ClientsModule.register([{ name: TOKEN, transport: spec.transport, options } as never])],
        close: () => opened.close(),
      };
    },
    defer: (work, mark) => emitEvent(work, TOKEN, channel!.pattern, { mark }),
    poison: spec.poison && ((work, mark) => spec.poison!(work, channel!, mark)),
    received: () => channel!.received(),
    outage: {
      stop: () => link().stop(),
      start: () => link().start(),
      get running() {
        return link().running;
      },
    },
    blackhole: {
      on: () => link().blackhole.on(),
      off: () => link().blackhole.off(),
    },
    duplicatesInOutage: spec.duplicatesInOutage,
    outageCodes: spec.outageCodes,
    shortBudgetOptions: spec.shortBudgetOptions,
    sinkOptions: spec.sinkOptions,
  });
}
