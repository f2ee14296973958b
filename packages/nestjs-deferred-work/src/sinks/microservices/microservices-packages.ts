import { errorMessage } from '../../core/error-message';
import { installedBeside, missingPackageError } from '../kit/missing-package';
import { SinkConfigError } from '../kit/sink-config.error';
import type { BrokerTransport } from './client-proxy-sink.options';
import type { NatsHeaders, NestRecords } from './transport.interface';

/** Loads a package by a name the bundler leaves alone (an optional peer, present when the sink is used). */
const load = (name: string): Promise<Record<string, unknown>> => import(name) as Promise<Record<string, unknown>>;

/** The record builders of `@nestjs/microservices` and its `ClientProxy` class, loaded at bootstrap. */
export async function loadNestRecords(sinkName: string): Promise<NestRecords> {
  try {
    const pkg = await load('@nestjs/microservices');
    // A CommonJS @nestjs/microservices (Nest 10, 11) may come as the default export of the namespace.
    const records = (typeof pkg.RmqRecordBuilder === 'function' ? pkg : pkg.default) as unknown as NestRecords;
    if (typeof records?.RmqRecordBuilder !== 'function') throw new Error('its record builders (RmqRecordBuilder, …) were not found');
    return records;
  } catch (error) {
    throw new SinkConfigError(`ClientProxySink "${sinkName}": @nestjs/microservices could not be loaded (${errorMessage(error)}). Install it: npm install @nestjs/microservices.`);
  }
}

/** The NATS client package's `headers()` factory: `@nats-io/transport-node` (Nest 12) or `nats` (Nest 10/11). */
export async function loadNatsHeaders(sinkName: string): Promise<() => NatsHeaders> {
  for (const name of ['@nats-io/transport-node', 'nats']) {
    try {
      const pkg = await load(name);
      const headers = (pkg.headers ?? (pkg.default as Record<string, unknown> | undefined)?.headers) as (() => NatsHeaders) | undefined;
      if (typeof headers === 'function') return headers;
    } catch {
      // try the next
    }
  }
  throw new SinkConfigError(`ClientProxySink "${sinkName}": neither @nats-io/transport-node (Nest 12) nor nats (Nest 10/11) could be loaded; install the one your ClientNats uses.`);
}

/** The packages each transport's client in `@nestjs/microservices` loads (NATS: the one `loadNatsHeaders` finds). */
const TRANSPORT_PACKAGES: Partial<Record<BrokerTransport, readonly string[]>> = Object.freeze({
  rmq: ['amqplib', 'amqp-connection-manager'],
  redis: ['ioredis'],
  mqtt: ['mqtt'],
  kafka: ['kafkajs'],
});

/**
 * At bootstrap: throws a `SinkConfigError` when a package the client's transport loads is not installed
 * where `@nestjs/microservices` loads it from. Nest 12's `ClientRedis` and `ClientKafka` load `ioredis`
 * and `kafkajs` only when they first connect — at the sink's first write — and Nest then ends the
 * process ("The "ioredis" package is missing"); Nest 10 and 11 (and the other transports) load them as
 * the client is built, so an app without them does not get this far. Passes when it cannot be told (a
 * bundled app).
 */
export function checkTransportPackages(sinkName: string, transport: BrokerTransport, clientClass: string): void {
  for (const packageName of TRANSPORT_PACKAGES[transport] ?? []) {
    if (installedBeside(packageName, '@nestjs/microservices') !== false) continue;
    throw missingPackageError({
      sink: `ClientProxySink "${sinkName}"`,
      packageName,
      neededBy: `The app's ${clientClass} (@nestjs/microservices, ${transport} transport) loads it to connect`,
      consequence: 'the client cannot connect, and Nest ends the process when it first tries (at the first deferred message)',
      option: 'clientToken',
    });
  }
}
